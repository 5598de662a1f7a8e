/**
 * The contract between the reconcile engine and whatever drives it (the apply command, the daemon).
 */

import type { ManifestSet } from "../manifests/load.js";
import type { Problem } from "../manifests/problem.js";
import type { ParseCache } from "../manifests/read-file.js";
import type { SecretSources } from "../manifests/secrets.js";
import type { PlanView } from "../plan/view.js";
import type { Read } from "../platform/client.js";
import type { Cause, LifecycleEvent, PassResult, ResourceStatus, Trigger } from "../resources.js";
import type { KeySecrets } from "../state/key-secrets.js";
import type { State, StateStore } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import type { Sender } from "./send.js";
import type { Step } from "./step.js";

export type { PassResult, ResourceStatus };

export type PassOptions = {
  /** Why the pass runs, for logs; a `retry` pass spends the budget's retry share. */
  trigger: Trigger;
  /** Also re-send unchanged resources (healing changes made in the platform behind git's back). */
  reassert?: boolean;
  /**
   * `Kind/name` of resources a read found changed outside git: re-sent in this pass as a re-assertion
   * would (priority after changes from git), the others only when they changed.
   */
  heal?: readonly string[];
  /** Aborted on shutdown: no new request starts, the pass records what it did and returns. */
  signal?: AbortSignal;
  /**
   * `Kind/name` of resources whose earlier create has an Unknown outcome: the operator allows one new
   * create attempt in this pass (`driftless apply --allow-create`).
   */
  allowCreate?: readonly string[];
  /** The operator lets this pass send up to this many deletes, past DRIFTLESS_MAX_DELETES (--allow-deletes). */
  allowDeletes?: number;
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

export type EngineDeps = {
  /** The manifests folder (a plain folder or a git-sync link). */
  manifests: string;
  /** Parse results kept from pass to pass, so unchanged files are not parsed again (createReconciler's). */
  parseCache?: ParseCache;
  store: StateStore;
  /** Needed by apply; plan never sends. */
  send?: Sender;
  /**
   * With reads on (DRIFTLESS_READS): reads the published contract's GETs before planning, where a
   * plan needs what is live (a three-way list at first contact, an unknown create to settle). Absent:
   * nothing is ever read.
   */
  read?: Read;
  /**
   * With `read`, for `apply`: reads each managed object before the pass, and what was changed outside
   * git is sent back in it, as `plan` shows (plan-drift.ts). The daemon reads in its own rounds instead.
   */
  readDrift?: boolean;
  secrets: SecretSources;
  logger: Logger;
  /** When given, the pass records its metrics (leave it out when the caller records PassResult itself). */
  metrics?: Metrics;
  /**
   * The key of the secrets' hashes, read at each pass (DRIFTLESS_STATE_KEY_FILE); default the salt kept
   * in the state, beside the hashes it keys.
   */
  secretKey?: () => string;
  /**
   * A fingerprint of the credentials a request for `organizationId` goes with: a change sends terminally
   * refused requests again.
   */
  credentialVersion?: (organizationId?: string) => string;
  /** How long the record of a deleted manifest is kept (Unmanaged); default 30 days. */
  unmanagedRetentionMs?: number;
  /**
   * The key id driftless authenticates with on an organization's behalf, for the lock-out guard; read
   * per resource. Throws ConfigError when the organization has no key: the resource is Failed and
   * nothing is sent for it.
   */
  managementKeyId?: (organizationId: string) => string | undefined;
  /** Resources handled at once within a phase; default 4. */
  concurrency?: number;
  /** false (DRIFTLESS_PRUNE=off): every object whose manifest left git is orphaned, none deleted. */
  prune?: boolean;
  /** The most deletes one pass sends (DRIFTLESS_MAX_DELETES); default 5. */
  maxDeletes?: number;
  /** Where the id and secret of an API key driftless creates are written (its spec.secretTarget). */
  keySecrets?: KeySecrets;
  /** The daemon's suspend/resume switch, laid over the state each pass reads and saves. */
  suspension?: SuspensionSwitch;
  /** Called as each resource finishes (progress output). */
  onResource?: (result: ResourceOutcome) => void;
  now?: () => Date;
};

/**
 * A suspend or resume asked for while passes run (`POST /suspend`): the engine writes it into the state
 * it saves, so that it survives a restart, and reads the saved one back after a restart or a new leader.
 */
export interface SuspensionSwitch {
  /**
   * Lays a change asked for and not saved yet over `state`; without one, takes the state's own. Returns
   * the token to give saved() once `state` is saved.
   */
  sync(state: State): number;
  /** The state given to sync() with `token` is saved. */
  saved(token: number): void;
  /** True while a change asked for is not saved yet. */
  pending(): boolean;
  /**
   * Aborted as soon as every write is suspended (a new one after resume): writes that wait for the
   * rate budget or for a retry stop waiting, and are not sent.
   */
  writesStopped?(): AbortSignal;
  /** A write starts (waiting or sent); returns what to call when it is over, answered or not. */
  writing?(): () => void;
}

/** The options of an apply pass (kept as a name of its own for the commands). */
export type ApplyOptions = PassOptions;

/** A request the platform refused for good: the fingerprint of what was sent and what the platform said. */
export type Refusal = { fingerprint: string; message: string; requestId?: string };

/**
 * One resource after a pass: its status (with what comes next) and why, the requests sent for it, the
 * plan of its first round (what `plan` shows), and what the pass must know of it.
 */
export type ResourceOutcome = {
  status: ResourceStatus;
  cause: Cause;
  sent: PlanView[];
  /** The decision of its first round: what `plan` shows of it. */
  first?: Step;
  /** A server id was recorded in this pass (created or adopted): resources waiting for it may go on. */
  created?: true;
  /** What this pass did to its object: created it, deleted it, orphaned it (driftless_lifecycle_total). */
  lifecycle?: LifecycleEvent["action"];
  /** What `plan` shows of it when no step says (a delete). */
  shown?: PlanView;
  /** Why this process may no longer write, when a write of this resource found out: nothing more is sent. */
  stopped?: string;
  /** The platform refused the last request for good: remembered, and not sent again while unchanged. */
  refusal?: Refusal;
  /** The platform answered a request of this resource: an earlier refusal no longer holds. */
  answered?: true;
  /** Requests that reached the platform and were answered with an error (not in `sent`). */
  failedRequests?: number;
};

/** One pass as it goes: the manifests and state it read, which resources are valid, when it started. */
export type Pass = {
  set: ManifestSet;
  state: State;
  invalid: Map<string, Problem[]>;
  valid: Set<string>;
  startedAt: Date;
  /** The key of the secrets' hashes in this pass. */
  secretKey: string;
};
