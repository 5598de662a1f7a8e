import { stringify } from "yaml";
import type { SimulatorConfig } from "../config.js";
import { SETTINGS } from "../settings.js";
import { loadFixture, parseFixture } from "../simulator/fixture.js";
import { defaultFixture, startSimulator } from "../simulator/index.js";
import { commandLogger, type Io } from "./io.js";

/**
 * `--print-fixture`: the platform the simulator would start with, as a YAML fixture with every default
 * filled in: the built-in one (matching examples/, its backups dated from now), or `file`'s, checked.
 * Throws ConfigError naming the file and the field of a bad one.
 */
function printedFixture(file: string | undefined): string {
  const fixture = file ? loadFixture(file) : parseFixture(defaultFixture(), "built in");
  const origin = file ? `the fixture ${file}` : "the built-in fixture, which examples/ manages";
  return [
    `# The platform driftless simulator starts with: ${origin}.`,
    "# Every field is described in driftless's docs/simulator-fixtures.md. Change a copy, then start",
    "# the simulator on it: driftless simulator --fixture FILE",
    stringify(fixture),
  ].join("\n");
}

/**
 * `driftless simulator`: serves both simulated APIs until SIGTERM or SIGINT, then stops cleanly (0).
 * Prints the URLs and the demo credentials it accepts as environment assignments for driftless.
 */
export async function simulatorCommand(config: SimulatorConfig, io: Io): Promise<number> {
  if (config.printFixture) {
    io.out(printedFixture(config.fixture));
    return 0;
  }
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
