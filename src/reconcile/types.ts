/**
 * The contract between the reconcile engine and whatever drives it (the apply command, the daemon).
 */

import type { PassResult, ResourceStatus, Trigger } from "../resources.js";
import type { Logger } from "../telemetry/logger.js";

export type { PassResult, ResourceStatus };

export type PassOptions = {
  /** Why the pass runs, for logs; a `retry` pass spends the budget's retry share. */
  trigger: Trigger;
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
