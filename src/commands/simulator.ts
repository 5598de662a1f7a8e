import { ConfigError } from "../errors.js";
import { startSimulator } from "../simulator/index.js";
import { createLogger } from "../telemetry/logger.js";
import type { Io } from "./io.js";

function port(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0 || number > 65_535) {
    throw new ConfigError(`${flag} must be a port number from 0 to 65535, not ${String(value)}`);
  }
  return number;
}

/**
 * `driftless simulator`: serves both simulated APIs until SIGTERM or SIGINT, then stops cleanly (0).
 * Prints the URLs and the demo credentials it accepts as environment assignments for driftless.
 */
export async function simulatorCommand(flags: Record<string, unknown>, io: Io): Promise<number> {
  const seed = flags.seed === undefined ? undefined : Number(flags.seed);
  if (seed !== undefined && !Number.isInteger(seed)) throw new ConfigError(`--seed must be an integer`);
  const readyAfter = flags.endpointReadyAfter === undefined ? undefined : Number(flags.endpointReadyAfter);
  if (readyAfter !== undefined && !(Number.isInteger(readyAfter) && readyAfter >= 0)) {
    throw new ConfigError("--endpoint-ready-after must be a whole number of milliseconds");
  }
  const logger = createLogger(typeof flags.logLevel === "string" ? flags.logLevel : "info");
  const simulator = await startSimulator({
    host: typeof flags.host === "string" ? flags.host : undefined,
    managementPort: port(flags.managementPort, "--management-port"),
    observabilityPort: port(flags.observabilityPort, "--observability-port"),
    fixture: typeof flags.fixture === "string" ? flags.fixture : undefined,
    seed,
    logger,
    ...(flags.rateLimit === "off" ? { rateLimit: { management: false, observability: false } } : {}),
    ...(typeof flags.stateFile === "string" ? { stateFile: flags.stateFile } : {}),
    ...(readyAfter !== undefined ? { endpointReadyAfterMs: readyAfter } : {}),
  });
  const { managementKeyId, managementKeySecret, observabilityToken } = simulator.credentials;
  io.out(
    [
      "driftless simulator: a fake platform for demos and tests, not the real one",
      `DRIFTLESS_MANAGEMENT_URL=${simulator.managementUrl}`,
      `DRIFTLESS_MANAGEMENT_KEY_ID=${managementKeyId}`,
      `DRIFTLESS_MANAGEMENT_KEY_SECRET=${managementKeySecret}`,
      `DRIFTLESS_OBSERVABILITY_URL=${simulator.observabilityUrl}`,
      `DRIFTLESS_OBSERVABILITY_TOKEN=${observabilityToken}`,
    ].join("\n"),
  );
  logger.info(
    { management: simulator.managementUrl, observability: simulator.observabilityUrl },
    "simulator up",
  );

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    // Whichever signal comes first stops it; both listeners go, so nothing lingers after.
    const stop = (name: NodeJS.Signals) => {
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
      resolve(name);
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
  logger.info({ signal }, "simulator stopping");
  await simulator.close();
  return 0;
}
