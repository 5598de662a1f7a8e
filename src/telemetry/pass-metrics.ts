import { isKind, KINDS } from "../manifests/manifest.js";
import { FAILURES, type PassResult, RESOURCE_STATUSES, type ResourceStatus } from "../resources.js";
import type { Metrics } from "./metrics.js";

/** The `kind` label of resources whose manifest names no known kind. */
const INVALID_KIND = "Invalid";

/** The `kind` and `status` of each series set at every pass, as `kind\u0000status`. */
const KNOWN_SERIES = new Set(
  KINDS.flatMap((kind) => RESOURCE_STATUSES.map((status) => `${kind}\u0000${status}`)),
);

/**
 * Keeps the pass metrics equal to what the caller knows (the daemon, or the engine when it is given
 * Metrics). Remembers the revision label it set, so that
 * `driftless_source_revision_info` has exactly one series.
 */
export class PassMetrics {
  private revision: string | undefined;
  /** Series of statuses outside RESOURCE_STATUSES set last time, removed when they are gone. */
  private extra = new Set<string>();

  constructor(private readonly metrics: Metrics) {}

  /** A finished pass: its result, duration, manifest errors, revision and (when all in sync) success time. */
  recordPass(result: PassResult): void {
    const { metrics } = this;
    metrics.reconcileTotal.inc({ result: result.ok ? "success" : "error" });
    const seconds = (Date.parse(result.finishedAt) - Date.parse(result.startedAt)) / 1000;
    if (Number.isFinite(seconds)) metrics.reconcileDuration.observe(Math.max(0, seconds));
    metrics.manifestErrors.set(result.manifestErrors);
    if (result.ok) metrics.lastSuccess.set(Date.parse(result.finishedAt) / 1000);
    this.setRevision(result.revision ?? "");
    for (const { kind, action } of result.lifecycle ?? []) metrics.lifecycleTotal.inc({ kind, action });
    metrics.deletesHeld.set(result.deletesHeld ?? 0);
  }

  /** A pass that could not run at all. */
  recordPassError(): void {
    this.metrics.reconcileTotal.inc({ result: "error" });
  }

  /** Zero resources and manifest errors: a replica that stops leading leaves the figures to the leader. */
  forget(): void {
    this.recordStatuses([]);
    this.metrics.manifestErrors.set(0);
    this.metrics.deletesHeld.set(0);
  }

  /** Sets `driftless_resources` from every resource's status; kinds and statuses not seen are 0. */
  recordStatuses(statuses: readonly ResourceStatus[]): void {
    // Counted per kind, then per status: no key string is made per resource.
    const counts = new Map<string, Map<string, number>>();
    for (const s of statuses) {
      // A kind label comes from the manifest's text: an unknown kind would make a series per typo.
      const kind = isKind(s.kind) ? s.kind : INVALID_KIND;
      let ofKind = counts.get(kind);
      if (!ofKind) {
        ofKind = new Map<string, number>();
        counts.set(kind, ofKind);
      }
      ofKind.set(s.status, (ofKind.get(s.status) ?? 0) + 1);
    }
    for (const kind of KINDS) {
      for (const status of RESOURCE_STATUSES) {
        this.metrics.resources.set({ kind, status }, counts.get(kind)?.get(status) ?? 0);
      }
    }
    // A status the contract may grow later is still counted rather than dropped.
    const extra = new Set<string>();
    for (const [kind, ofKind] of counts) {
      for (const [status, count] of ofKind) {
        const key = `${kind}\u0000${status}`;
        if (KNOWN_SERIES.has(key)) continue;
        extra.add(key);
        this.metrics.resources.set({ kind, status }, count);
      }
    }
    for (const key of this.extra) if (!extra.has(key)) this.metrics.resources.remove(labelsOf(key));
    this.extra = extra;
    this.recordFailures(statuses);
  }

  /** Sets `driftless_resources_failed`: the Failed resources of each kind, by their `failure`. */
  private recordFailures(statuses: readonly ResourceStatus[]): void {
    const counts = new Map<string, number>();
    for (const s of statuses) {
      if (s.failure === undefined) continue;
      const key = `${s.kind}\u0000${s.failure}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    for (const kind of KINDS) {
      for (const failure of FAILURES) {
        this.metrics.resourcesFailed.set({ kind, failure }, counts.get(`${kind}\u0000${failure}`) ?? 0);
      }
    }
  }

  private setRevision(revision: string): void {
    if (this.revision === revision) return;
    if (this.revision !== undefined) this.metrics.sourceRevision.remove({ revision: this.revision });
    this.revision = revision;
    this.metrics.sourceRevision.set({ revision }, 1);
  }
}

function labelsOf(key: string): { kind: string; status: string } {
  const [kind = "", status = ""] = key.split("\u0000");
  return { kind, status };
}
