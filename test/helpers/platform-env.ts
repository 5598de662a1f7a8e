import type { Simulator } from "../../src/simulator/index.js";

/** The environment that points a `driftless` process at `sim`, with the simulator's own credentials. */
export function platformEnv(sim: Simulator): Record<string, string> {
  return {
    DRIFTLESS_MANAGEMENT_URL: sim.managementUrl,
    DRIFTLESS_OBSERVABILITY_URL: sim.observabilityUrl,
    DRIFTLESS_MANAGEMENT_KEY_ID: sim.credentials.managementKeyId,
    DRIFTLESS_MANAGEMENT_KEY_SECRET: sim.credentials.managementKeySecret,
    DRIFTLESS_OBSERVABILITY_TOKEN: sim.credentials.observabilityToken,
  };
}
