import { Registry } from "prom-client";
import type { DaemonDeps, DaemonSettings } from "../../src/daemon/daemon.js";
import type { PassResult } from "../../src/reconcile/types.js";
import { passOk, type ResourceStatus } from "../../src/resources.js";
import { createLogger } from "../../src/telemetry/logger.js";
import { createMetrics } from "../../src/telemetry/metrics.js";
import { switchableLeadership } from "./switchable-leadership.js";

/** A finished pass with these statuses, now (ok as the engine decides it). */
export function passResult(statuses: ResourceStatus[] = [], manifestErrors = 0): PassResult {
  const at = new Date().toISOString();
  return { startedAt: at, finishedAt: at, statuses, manifestErrors, ok: passOk(statuses, manifestErrors) };
}

/**
 * What startDaemon needs for a daemon over `manifests` with nothing of its own: no schedule, a leader,
 * passes that find nothing, no manifests for the polls, no platform, silent logs, its own registry.
 * `given` replaces any of it; `settings` merges into the defaults.
 */
export function fakeDaemonDeps(
  manifests: string,
  given: Partial<Omit<DaemonDeps, "settings">> & { settings?: Partial<DaemonSettings> } = {},
): DaemonDeps {
  const registry = given.registry ?? new Registry();
  const { settings, ...rest } = given;
  return {
    leadership: switchableLeadership(true),
    reconciler: { pass: async () => passResult() },
    loadManifests: async () => [],
    tileIdsOf: async () => undefined,
    platform: { call: async () => Promise.reject(new Error("no platform here")) },
    logger: createLogger("silent"),
    ...rest,
    registry,
    metrics: given.metrics ?? createMetrics(registry, { defaultMetrics: false }),
    settings: {
      manifests,
      listen: "127.0.0.1:0",
      reconcileSchedule: "off",
      pollSchedule: "off",
      reassertSchedule: "off",
      ...settings,
    },
  };
}
