import { Counter, collectDefaultMetrics, Gauge, Histogram, type Registry } from "prom-client";
import { KINDS, MANAGED_KINDS } from "../manifests/manifest.js";
import { VERSION } from "../package.js";
import { FAILURES, LIFECYCLE_ACTIONS, RESOURCE_STATUSES } from "../resources.js";

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
  const counter = <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers });
  const gauge = <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Gauge<L>({ name, help, labelNames, registers });
  const histogram = <L extends string = never>(
    name: string,
    help: string,
    buckets: number[],
    labelNames: readonly L[] = [],
  ) => new Histogram<L>({ name, help, buckets, labelNames, registers });

  const metrics = {
    reconcileTotal: counter("driftless_reconcile_total", "Reconcile passes, by result.", ["result"]),
    reconcileDuration: histogram(
      "driftless_reconcile_duration_seconds",
      "Wall time of a reconcile pass.",
      [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    ),
    resources: gauge("driftless_resources", "Resources by kind and status.", ["kind", "status"]),
    resourcesFailed: gauge(
      "driftless_resources_failed",
      "Failed resources by kind and failure: transient (tried again by the next pass) or terminal (tried again when an input changes).",
      ["kind", "failure"],
    ),
    manifestErrors: gauge(
      "driftless_manifest_errors",
      "Problems found in the manifests of the newest revision.",
    ),
    apiRequests: counter(
      "driftless_api_requests_total",
      "Requests sent to the platform APIs, by route template and answer code.",
      ["api", "method", "route", "code"],
    ),
    organizationRequests: counter(
      "driftless_organization_requests_total",
      "Requests sent to the management API, by the organization they act on and answer code.",
      ["organization", "code"],
    ),
    apiRequestDuration: histogram(
      "driftless_api_request_duration_seconds",
      "Time from sending a request to its answer.",
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      ["api", "method", "route"],
    ),
    apiRateLimited: counter(
      "driftless_api_rate_limited_total",
      "429 answers received from the platform APIs.",
      ["api"],
    ),
    apiBudgetWaitSeconds: histogram(
      "driftless_api_budget_wait_seconds",
      "Time a request waited for driftless's own rate budget, by priority.",
      [0, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60],
      ["api", "priority"],
    ),
    alertState: gauge("driftless_alert_state", "1 for the current state of each watched alert.", [
      "alert",
      "name",
      "state",
    ]),
    alertFiring: gauge(
      "driftless_alert_firing",
      "1 while a watched alert is in one of the firing states (DRIFTLESS_ALERT_FIRING_STATES), else 0.",
      ["alert", "name"],
    ),
    backupLastFinished: gauge(
      "driftless_backup_last_finished_timestamp_seconds",
      "Finish time of the newest finished backup.",
      ["organization", "service"],
    ),
    backupStale: gauge(
      "driftless_backup_stale",
      "1 when the newest backup is older than the BackupWatch's maxAge.",
      ["organization", "service"],
    ),
    backupFailed: gauge(
      "driftless_backup_failed",
      "1 when the newest backup that ended failed (status error), with none done since; the published contract's backups only.",
      ["organization", "service"],
    ),
    backupSizeBytes: gauge("driftless_backup_last_size_bytes", "Size of the newest finished backup.", [
      "organization",
      "service",
    ]),
    backupDurationSeconds: gauge(
      "driftless_backup_last_duration_seconds",
      "Duration of the newest finished backup.",
      ["organization", "service"],
    ),
    pollTotal: counter("driftless_poll_total", "Alert and backup polls, by result.", ["result"]),
    driftTotal: counter(
      "driftless_drift_total",
      "Drifts found by reads: a live object whose fields differ from what its manifest states, counted once when found.",
      ["kind"],
    ),
    lifecycleTotal: counter(
      "driftless_lifecycle_total",
      "Objects created, deleted and orphaned (left as they are once their manifest left git), by kind.",
      ["kind", "action"],
    ),
    deletesHeld: gauge(
      "driftless_deletes_held",
      "Deletes the mass-deletion guard holds for an operator (DRIFTLESS_MAX_DELETES; driftless reconcile --allow-deletes N, or apply --allow-deletes N, lets them go).",
    ),
    readTotal: counter(
      "driftless_read_total",
      "Reads of live objects (DRIFTLESS_READS=on), by kind and result: equal, drifted, missing or error.",
      ["kind", "result"],
    ),
    lastSuccess: gauge(
      "driftless_last_success_timestamp_seconds",
      "End time of the last reconcile pass in which every resource was in sync.",
    ),
    sourceRevision: gauge(
      "driftless_source_revision_info",
      "1 for the revision of the manifests of the last pass.",
      ["revision"],
    ),
    buildInfo: gauge(
      "driftless_build_info",
      "1, labelled with the version, the git commit it was built from and the Node.js version.",
      ["version", "revision", "node"],
    ),
    simulator: gauge(
      "driftless_simulator",
      "1 while the built-in simulator stands in for the platform: nothing reaches a real platform.",
    ),
    suspended: gauge(
      "driftless_suspended",
      "1 while every write is suspended (driftless suspend), until driftless resume.",
    ),
    leader: gauge(
      "driftless_leader",
      "1 while this replica holds the leader lease (or leader election is off).",
    ),
  };

  for (const result of ["success", "error"]) metrics.reconcileTotal.inc({ result }, 0);
  for (const result of ["success", "error"]) metrics.pollTotal.inc({ result }, 0);
  for (const kind of MANAGED_KINDS) metrics.driftTotal.inc({ kind }, 0);
  for (const kind of MANAGED_KINDS)
    for (const action of LIFECYCLE_ACTIONS) metrics.lifecycleTotal.inc({ kind, action }, 0);
  metrics.deletesHeld.set(0);
  // Every manifest kind, so each has its `driftless_resources` series from the start.
  for (const kind of KINDS) {
    for (const status of RESOURCE_STATUSES) metrics.resources.set({ kind, status }, 0);
    for (const failure of FAILURES) metrics.resourcesFailed.set({ kind, failure }, 0);
  }
  for (const api of ["management", "observability"]) metrics.apiRateLimited.inc({ api }, 0);
  metrics.manifestErrors.set(0);
  metrics.suspended.set(0);
  metrics.simulator.set(0);
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
