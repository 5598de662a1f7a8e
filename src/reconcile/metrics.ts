import { type Metrics, RESOURCE_KINDS, RESOURCE_STATUSES } from "../telemetry/metrics.js";
import type { PassResult } from "./types.js";

/**
 * The pass metrics of one finished pass. Only for callers that do not record PassResult themselves
 * (the daemon has its own, which also counts watch statuses).
 */
export function recordPassMetrics(metrics: Metrics, result: PassResult): void {
  metrics.reconcileTotal.inc({ result: result.ok ? "success" : "error" });
  const seconds = (Date.parse(result.finishedAt) - Date.parse(result.startedAt)) / 1000;
  if (Number.isFinite(seconds)) metrics.reconcileDuration.observe(Math.max(0, seconds));
  metrics.manifestErrors.set(result.manifestErrors);
  if (result.ok) metrics.lastSuccess.set(Date.parse(result.finishedAt) / 1000);
  metrics.sourceRevision.reset();
  metrics.sourceRevision.set({ revision: result.revision ?? "" }, 1);
  for (const kind of RESOURCE_KINDS) {
    for (const status of RESOURCE_STATUSES) {
      const count = result.statuses.filter((s) => s.kind === kind && s.status === status).length;
      metrics.resources.set({ kind, status }, count);
    }
  }
}
