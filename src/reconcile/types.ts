/**
 * The contract between the reconcile engine and whatever drives it (the apply command, the daemon).
 */

import type { Logger } from "../telemetry/logger.js";

export type ResourceStatusName = "Synced" | "Pending" | "Failed" | "Invalid" | "Unknown" | "Warning";

/** One resource's outcome, as `/status`, `apply --output json` and the metrics show it. */
export type ResourceStatus = {
  kind: string;
  name: string;
  status: ResourceStatusName;
  /** Why it is not Synced: the platform's message, a validation problem, what to do. */
  message?: string;
  /** The platform's request id of the failing (or last) request, when there was one. */
  requestId?: string;
  /** ISO-8601 time of the last successful apply. */
  lastAppliedAt?: string;
};

export type PassResult = {
  /** The revision the pass read (git-sync link target), when the folder is a link. */
  revision?: string;
  startedAt: string;
  finishedAt: string;
  statuses: ResourceStatus[];
  /** Problems found in the manifests of this revision. */
  manifestErrors: number;
  /** True when every resource is Synced and the manifests had no problem. */
  ok: boolean;
};

export type PassOptions = {
  /** Why the pass runs, for logs: "schedule", "watch", "webhook", "retry", "cli". */
  trigger: string;
  /** Also re-send unchanged resources (healing changes made in the platform behind git's back). */
  reassert?: boolean;
  /** Aborted on shutdown: no new request starts, the pass records what it did and returns. */
  signal?: AbortSignal;
  /**
   * `Kind/name` of resources whose earlier create has an Unknown outcome: the operator allows one new
   * create attempt in this pass (`driftless apply --allow-create`).
   */
  allowCreate?: readonly string[];
  /**
   * A retry pass leaves alone the resources whose backoff is not due yet: for those this returns the
   * status to report again (their last one), and the engine sends nothing for them.
   */
  hold?: (id: string) => ResourceStatus | undefined;
  /** Parent of the pass's log lines (the daemon's per-pass child logger); default the engine's own. */
  logger?: Logger;
};

export interface Reconciler {
  /** One level-based pass: re-reads the manifests and the state, sends what differs, saves the state. */
  pass(options: PassOptions): Promise<PassResult>;
}
