import { Counter, collectDefaultMetrics, Gauge, Histogram, type Registry } from "prom-client";
import { KINDS } from "../manifests/manifest.js";
import { FAILURES, RESOURCE_STATUSES } from "../resources.js";
import { VERSION } from "../version.js";

/** Every manifest kind, so each has its `driftless_resources` series from the start. */
export const RESOURCE_KINDS = KINDS;

/**
 * Every metric driftless exports, registered once on the registry passed in. The names in
 * docs/daemon.md#metrics are fixed; label sets that are known up front are initialised to 0 so dashboards show 0, not "no data".
 */
export function createMetrics(
  registry: Registry,
  options: { defaultMetrics?: boolean; build?: BuildInfo } = {},
) {
  if (options.defaultMetrics ?? true) collectProcessMetrics(registry);
  const registers = [registry];

  const metrics = {
    reconcileTotal: new Counter({
      name: "driftless_reconcile_total",
      help: "Reconcile passes, by result.",
      labelNames: ["result"] as const,
      registers,
    }),
    reconcileDuration: new Histogram({
      name: "driftless_reconcile_duration_seconds",
      help: "Wall time of a reconcile pass.",
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    }),
    resources: new Gauge({
      name: "driftless_resources",
      help: "Resources by kind and status.",
      labelNames: ["kind", "status"] as const,
      registers,
    }),
    resourcesFailed: new Gauge({
      name: "driftless_resources_failed",
      help: "Failed resources by kind and failure: transient (tried again by the next pass) or terminal (tried again when an input changes).",
      labelNames: ["kind", "failure"] as const,
      registers,
    }),
    manifestErrors: new Gauge({
      name: "driftless_manifest_errors",
      help: "Problems found in the manifests of the newest revision.",
      registers,
    }),
    apiRequests: new Counter({
      name: "driftless_api_requests_total",
      help: "Requests sent to the platform APIs, by route template and answer code.",
      labelNames: ["api", "method", "route", "code"] as const,
      registers,
    }),
    organizationRequests: new Counter({
      name: "driftless_organization_requests_total",
      help: "Requests sent to the management API, by the organization they act on and answer code.",
      labelNames: ["organization", "code"] as const,
      registers,
    }),
    apiRequestDuration: new Histogram({
      name: "driftless_api_request_duration_seconds",
      help: "Time from sending a request to its answer.",
      labelNames: ["api", "method", "route"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    apiRateLimited: new Counter({
      name: "driftless_api_rate_limited_total",
      help: "429 answers received from the platform APIs.",
      labelNames: ["api"] as const,
      registers,
    }),
    apiBudgetWaitSeconds: new Histogram({
      name: "driftless_api_budget_wait_seconds",
      help: "Time a request waited for driftless's own rate budget, by priority.",
      labelNames: ["api", "priority"] as const,
      buckets: [0, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    alertState: new Gauge({
      name: "driftless_alert_state",
      help: "1 for the current state of each watched alert.",
      labelNames: ["alert", "name", "state"] as const,
      registers,
    }),
    alertFiring: new Gauge({
      name: "driftless_alert_firing",
      help: "1 while a watched alert is in one of the firing states (DRIFTLESS_ALERT_FIRING_STATES), else 0.",
      labelNames: ["alert", "name"] as const,
      registers,
    }),
    backupLastFinished: new Gauge({
      name: "driftless_backup_last_finished_timestamp_seconds",
      help: "Finish time of the newest finished backup.",
      labelNames: ["organization", "service"] as const,
      registers,
    }),
    backupStale: new Gauge({
      name: "driftless_backup_stale",
      help: "1 when the newest backup is older than the BackupWatch's maxAge.",
      labelNames: ["organization", "service"] as const,
      registers,
    }),
    backupSizeBytes: new Gauge({
      name: "driftless_backup_last_size_bytes",
      help: "Size of the newest finished backup.",
      labelNames: ["organization", "service"] as const,
      registers,
    }),
    backupDurationSeconds: new Gauge({
      name: "driftless_backup_last_duration_seconds",
      help: "Duration of the newest finished backup.",
      labelNames: ["organization", "service"] as const,
      registers,
    }),
    pollTotal: new Counter({
      name: "driftless_poll_total",
      help: "Alert and backup polls, by result.",
      labelNames: ["result"] as const,
      registers,
    }),
    lastSuccess: new Gauge({
      name: "driftless_last_success_timestamp_seconds",
      help: "End time of the last reconcile pass in which every resource was in sync.",
      registers,
    }),
    sourceRevision: new Gauge({
      name: "driftless_source_revision_info",
      help: "1 for the revision of the manifests of the last pass.",
      labelNames: ["revision"] as const,
      registers,
    }),
    buildInfo: new Gauge({
      name: "driftless_build_info",
      help: "1, labelled with the version, the git commit it was built from and the Node.js version.",
      labelNames: ["version", "revision", "node"] as const,
      registers,
    }),
    suspended: new Gauge({
      name: "driftless_suspended",
      help: "1 while every write is suspended (driftless suspend), until driftless resume.",
      registers,
    }),
    leader: new Gauge({
      name: "driftless_leader",
      help: "1 while this replica holds the leader lease (or leader election is off).",
      registers,
    }),
  };

  for (const result of ["success", "error"]) metrics.reconcileTotal.inc({ result }, 0);
  for (const result of ["success", "error"]) metrics.pollTotal.inc({ result }, 0);
  for (const kind of RESOURCE_KINDS) {
    for (const status of RESOURCE_STATUSES) metrics.resources.set({ kind, status }, 0);
    for (const failure of FAILURES) metrics.resourcesFailed.set({ kind, failure }, 0);
  }
  for (const api of ["management", "observability"]) metrics.apiRateLimited.inc({ api }, 0);
  metrics.manifestErrors.set(0);
  metrics.suspended.set(0);
  const build = options.build ?? { version: VERSION, revision: UNKNOWN_REVISION };
  metrics.buildInfo.set({ ...build, node: process.versions.node }, 1);
  return metrics;
}

/** What `driftless_build_info` says of this build. */
export type BuildInfo = { version: string; revision: string };

/** The revision of a build that was not told its git commit (DRIFTLESS_BUILD_REVISION unset). */
export const UNKNOWN_REVISION = "unknown";

/**
 * prom-client's default process and Node.js metrics, less its `nodejs_active_*_total` gauges: a
 * `_total` name says counter, so `promtool check metrics` rejects them, and each is only the sum of
 * its `driftless_nodejs_active_*{type}` gauge, which stays.
 */
function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, prefix: "driftless_" });
  for (const what of ["handles", "requests", "resources"]) {
    registry.removeSingleMetric(`driftless_nodejs_active_${what}_total`);
  }
}

export type Metrics = ReturnType<typeof createMetrics>;
