import type { Kind, ManifestOf } from "../manifests/manifest.js";
import type { SecretRef } from "../manifests/secrets.js";
import type { Bodies, Params, RouteName } from "../platform/routes.js";
import type { ResourceRecord } from "../state/store.js";
import type { Secret } from "./secret.js";

/**
 * Plans are data: what a pass would send for one resource, and why. `plan` prints them, `apply` sends
 * exactly them, so the two can never disagree.
 */

/** One request of the route table (platform/routes.ts): which route, its path parameters, its body. */
export type PlannedRequest<N extends RouteName = RouteName> = {
  [R in N]: { route: R; params: Params[R]; body: Bodies[R] };
}[N];

/** A read the engine makes before planning, with reads on: a live list, or a service's endpoints. */
export type LiveRead = PlannedRequest<"getOrganization" | "getDataPipe" | "listReversePrivateEndpoints">;

/** A manifest's spec with every `{fromEnv}` / `{fromFile}` reference resolved into a Secret. */
export type Resolved<T> = T extends SecretRef
  ? Secret
  : T extends readonly (infer E)[]
    ? Resolved<E>[]
    : T extends object
      ? { [P in keyof T]: Resolved<T[P]> }
      : T;

/** Per kind, the desired spec as its planner receives it. */
export type Specs = { [K in Kind]: Resolved<ManifestOf<K>["spec"]> };
export type SpecOf<K extends Kind> = Specs[K];

/** One line of the readable diff: a field path with its last applied and desired values. */
export type Change = {
  path: string;
  /** Last applied (stored form), absent when driftless never sent it. */
  from?: unknown;
  /** Desired; a secret is shown as `(changed)` / `(unchanged)`. */
  to?: unknown;
  /** `add` / `remove` of a three-way list entry; `set` otherwise. */
  op: "set" | "add" | "remove";
  /** With reads on: the live value was changed outside git, and this change sends git's back. */
  outsideGit?: true;
};

/**
 * What a pass does for a resource:
 * - `none`: in sync, nothing to send (Synced);
 * - `send`: send `request` (Synced once it succeeds; `followUp` says a second request follows);
 * - `adopt`: record a server id the manifest names, no request (Synced);
 * - `wait`: nothing can be sent yet, `reason` says what it waits for (Pending);
 * - `refuse`: the change must not be sent, `reason` says why and what to do (Failed);
 * - `unknown`: an earlier outcome cannot be known, an operator decides (Unknown).
 */
export type Outcome = "none" | "send" | "adopt" | "wait" | "refuse" | "unknown";

export type ResourcePlan = {
  kind: Kind;
  name: string;
  outcome: Outcome;
  reason: string;
  request?: PlannedRequest;
  changes: Change[];
  /** Set when the request only prepares another (e.g. learns a live list before computing add/remove). */
  followUp?: string;
  /** For `adopt`: the server id to record. */
  adoptId?: string;
  /** For `adopt`: the live object a read found, recorded as the last answer. */
  adoptLive?: Record<string, unknown>;
};

/** The state of a reverse private endpoint as a pipe that names it sees it. */
export type EndpointRef =
  | { state: "ready"; id: string }
  | { state: "waiting"; reason: string }
  | { state: "missing"; reason: string };

/** What a planner may know beyond its own resource; pure data, so planning stays a pure function. */
export type PlanContext = {
  /** Re-send unchanged fields too (healing changes made behind git's back). */
  reassert: boolean;
  /** For the lock-out guard: when "now" is. */
  now: Date;
  /** The key id driftless authenticates with on the resource's organization, when known. */
  managementKeyId?: string;
  /** A ReversePrivateEndpoint by manifest name. */
  endpoint(name: string): EndpointRef;
  /** The operator allowed a new create attempt of this resource (an earlier one's outcome is Unknown). */
  allowCreate: boolean;
  /**
   * With reads on, what the list of the service's endpoints says of a create whose outcome is unknown
   * (reverse-private-endpoint.ts settle): absent when nothing was listed.
   */
  settled?: Settlement;
};

/**
 * A create whose answer was lost, looked up in the list of its service's endpoints: `found`, exactly
 * one endpoint matches (the create did happen); `absent`, none does (it did not); `unclear`, the list
 * cannot tell (several match, or the list failed).
 */
export type Settlement =
  | { state: "found"; id: string; live: Record<string, unknown> }
  | { state: "absent" }
  | { state: "unclear"; reason: string };

/** The input of a kind's planner: the desired spec (secrets resolved into Secret leaves) and the record. */
export type PlanInput<K extends Kind = Kind> = {
  kind: K;
  name: string;
  spec: Specs[K];
  record: ResourceRecord | undefined;
  context: PlanContext;
};

/**
 * When a kind is applied within a pass: `prerequisites` first (reverse private endpoints: pipes name
 * them and need their ids), then `dependents`.
 */
export const PHASES = ["prerequisites", "dependents"] as const;
export type Phase = (typeof PHASES)[number];

/** What a read before planning sees of its resource; `taken`: the endpoint ids other records hold. */
export type LiveInput<K extends Kind = Kind> = Omit<PlanInput<K>, "context"> & { taken: ReadonlySet<string> };

/** A read's answer, or why there is none. */
export type ReadOutcome = { answer: unknown } | { error: string };

/**
 * What a read before planning tells the plan: the record to plan against (a live list now known), how
 * an unknown create settles, or nothing (`why`: the read failed or its answer did not tell).
 */
export type LiveFinding = { record: ResourceRecord } | { settled: Settlement } | { why: string };

/** A kind's planner: pure. `record` folds a successful answer into the resource's record. */
export type KindPlanner<K extends Kind> = {
  phase: Phase;
  plan(input: PlanInput<K>): ResourcePlan;
  record(input: PlanInput<K>, plan: ResourcePlan, result: unknown, at: string): ResourceRecord;
  /** With reads on: what to read before planning (a live list, a service's endpoints); undefined: nothing. */
  liveRead?(input: LiveInput<K>): LiveRead | undefined;
  /** What that read tells the plan. */
  fromRead?(input: LiveInput<K>, read: ReadOutcome): LiveFinding;
};
