import type { SimulatorConfig } from "../config.js";
import { SETTINGS } from "../settings.js";
import { startSimulator } from "../simulator/index.js";
import { commandLogger, type Io } from "./io.js";

/**
 * `driftless simulator`: serves both simulated APIs until SIGTERM or SIGINT, then stops cleanly (0).
 * Prints the URLs and the demo credentials it accepts as environment assignments for driftless.
 */
export async function simulatorCommand(config: SimulatorConfig, io: Io): Promise<number> {
  const logger = commandLogger(config, io, "info");
  const simulator = await startSimulator({
    contract: config.contract,
    host: config.host,
    managementPort: config.managementPort,
    observabilityPort: config.observabilityPort,
    fixture: config.fixture,
    seed: config.seed,
    logger,
    ...(config.rateLimit === "off" ? { rateLimit: { management: false, observability: false } } : {}),
    ...(config.stateFile !== undefined ? { stateFile: config.stateFile } : {}),
    ...(config.endpointReadyAfter !== undefined ? { endpointReadyAfterMs: config.endpointReadyAfter } : {}),
  });
  const { managementKeyId, managementKeySecret, observabilityToken } = simulator.credentials;
  io.out(
    [
      `driftless simulator: a fake platform for demos and tests, not the real one (the ${config.contract} contract)`,
      `${SETTINGS.managementUrl.env}=${simulator.managementUrl}`,
      `${SETTINGS.managementKeyId.env}=${managementKeyId}`,
      `${SETTINGS.managementKeySecret.env}=${managementKeySecret}`,
      `${SETTINGS.observabilityUrl.env}=${simulator.observabilityUrl}`,
      `${SETTINGS.observabilityToken.env}=${observabilityToken}`,
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
