/**
 * What every room says of a resource: its id, its status and the result of a pass. The engine writes
 * them; the daemon, the commands and the metrics read them.
 */

/** `Kind/name`: how a resource is named in output, status, metrics and the state. */
export const resourceId = (resource: { kind: string; name: string }): string =>
  `${resource.kind}/${resource.name}`;

/** The kind and name of a `Kind/name` id (names may not hold `/`, so the first one splits). */
export function parseResourceId(id: string): { kind: string; name: string } {
  const slash = id.indexOf("/");
  return slash < 0 ? { kind: id, name: "" } : { kind: id.slice(0, slash), name: id.slice(slash + 1) };
}

/**
 * Synced: as the manifest says. Pending: waits (for a dependency, the budget, a save). Failed: refused
 * or erred. Invalid: its manifest has problems. Unknown: a create's outcome cannot be known. Warning: a
 * watch found something. Suspended: nothing is sent for it by choice. Unmanaged: its manifest is gone,
 * its record is kept for a while. Drifted: a read found the live object differing from what its manifest
 * states (DRIFTLESS_READS=on). Deleted: its manifest is gone and its object was deleted in this pass
 * (its record is dropped, so it is shown by that pass only).
 */
export const RESOURCE_STATUSES = [
  "Synced",
  "Pending",
  "Failed",
  "Invalid",
  "Unknown",
  "Warning",
  "Suspended",
  "Unmanaged",
  "Drifted",
  "Deleted",
] as const;
export type ResourceStatusName = (typeof RESOURCE_STATUSES)[number];

/**
 * What comes after a resource's outcome, decided once where the outcome is known (`resultOf`), and read
 * by everything that acts on it (the backoff, the pass result, metrics, notifications, exit codes):
 * - `done`: nothing to do until an input changes, and nothing is wrong (Synced, Unmanaged, Suspended by
 *   an operator's choice);
 * - `retry`: a later pass may succeed on its own: tried again after a backoff (a platform error, a
 *   dependency not ready yet, a state that could not be saved, a shutdown);
 * - `change`: refused until an input changes (the manifest, a secret, the credentials): not retried;
 * - `operator`: a person must act outside the manifests (a create whose outcome is unknown, a missing
 *   organization key, this process no longer allowed to write, a watch that found something).
 */
export const NEXT_STEPS = ["done", "retry", "change", "operator"] as const;
export type NextStep = (typeof NEXT_STEPS)[number];

/** One resource's outcome, as `/status`, `apply --output json` and the metrics show it. */
export type ResourceStatus = {
  kind: string;
  name: string;
  status: ResourceStatusName;
  /** What comes next (see NEXT_STEPS). */
  next: NextStep;
  /** The organization the resource belongs to (its spec's organizationId), for the kinds that have one. */
  organization?: string;
  /**
   * The platform's id of its object (not the `Kind/name` of resourceId): the id its manifest names, or
   * the one the platform assigned when driftless created it (see objectIdOf). Absent while it has none.
   */
  id?: string;
  /** Why it is not Synced: the platform's message, a validation problem, what to do. */
  message?: string;
  /** The platform's request id of the failing (or last) request, when there was one. */
  requestId?: string;
  /** ISO-8601 time of the last successful apply. */
  lastAppliedAt?: string;
  /**
   * Of a Failed resource, its next step in the words the metric and the outputs have always used:
   * `transient` (retried) or `terminal` (not retried: waits for a changed input or a person).
   */
  failure?: Failure;
};

export const FAILURES = ["transient", "terminal"] as const;
export type Failure = (typeof FAILURES)[number];

/**
 * Why a resource ended a pass where it did. Each cause is one status and one next step: the one table
 * from which "what next" follows (controller-runtime's single switch, as data). Total over the causes,
 * so a new cause does not compile without its decision.
 */
export const CAUSES = {
  /** As the manifest says: nothing was left to send. */
  "in-sync": { status: "Synced", next: "done" },
  /** A server id the manifest names was recorded. */
  adopted: { status: "Synced", next: "done" },
  /** Suspended by its annotation, or every resource while driftless is suspended. */
  suspended: { status: "Suspended", next: "done" },
  /** Its manifest is gone and its object is left as it is (orphaned); the record is kept for a while. */
  unmanaged: { status: "Unmanaged", next: "done" },
  /** Its manifest is gone and its object was deleted (or was already gone). */
  deleted: { status: "Deleted", next: "done" },
  /** Its object's delete is held by the mass-deletion guard until an operator lets it go. */
  "delete-held": { status: "Pending", next: "operator" },
  /** Its manifest has problems. */
  invalid: { status: "Invalid", next: "change" },
  /** Waits for a dependency (an endpoint not created or not Ready yet). */
  waiting: { status: "Pending", next: "retry" },
  /** The answer of its last request is not saved yet: nothing more is sent until it is. */
  unsaved: { status: "Pending", next: "retry" },
  /** The pass was stopped (shutdown, lost leadership) before its request went out or was answered. */
  interrupted: { status: "Pending", next: "retry" },
  /** No API client to send with. */
  "no-sender": { status: "Pending", next: "retry" },
  /** Its planner refuses the change (a lock-out, an endpoint field that cannot be updated). */
  refused: { status: "Failed", next: "change" },
  /** The platform refused the request for good (a 4xx other than 408, 409, 425, 429). */
  "refused-by-platform": { status: "Failed", next: "change" },
  /** The same request was refused for good by an earlier pass: not sent again. */
  "refused-before": { status: "Failed", next: "change" },
  /** Still had changes to send after the most requests a resource may send in a pass. */
  "not-converging": { status: "Failed", next: "change" },
  /** The platform failed (5xx, 408, 409, 425, 429 once the retries are spent, a time-out, the network). */
  "platform-error": { status: "Failed", next: "retry" },
  /** The state could not be saved around a request. */
  "save-failed": { status: "Failed", next: "retry" },
  /** A secret the manifest references cannot be read. */
  "secret-unreadable": { status: "Failed", next: "retry" },
  /** driftless has no management key for the resource's organization. */
  "no-key": { status: "Failed", next: "operator" },
  /** This process may no longer write (its lock or leadership is gone). */
  "may-not-write": { status: "Failed", next: "operator" },
  /** A create sent in this pass got no answer: it may or may not have happened. */
  "create-unanswered": { status: "Unknown", next: "operator" },
  /** An earlier create's outcome is still unknown: an operator adopts the endpoint or allows a new one. */
  "create-unknown": { status: "Unknown", next: "operator" },
  /** A watch found what it watches for (an alert firing, a stale backup, a tile gone). */
  "watch-finding": { status: "Warning", next: "operator" },
  /** A read found the live object changed outside git: the next write puts it back. */
  drifted: { status: "Drifted", next: "retry" },
  /** A read found the live object changed outside git, and its manifest says to report it only. */
  "drift-reported": { status: "Drifted", next: "operator" },
  /** A watch could not be polled; the next round tries again. */
  "poll-failed": { status: "Failed", next: "retry" },
} as const satisfies Record<string, { status: ResourceStatusName; next: NextStep }>;
export type Cause = keyof typeof CAUSES;

/** What a status says beside its kind, name, status and next step. */
export type StatusDetails = Pick<
  ResourceStatus,
  "organization" | "id" | "message" | "requestId" | "lastAppliedAt"
>;

/**
 * The status of `resource` come to `cause`: the status and next step its cause decides, and the
 * details given. Built field by field: one object per resource per pass, no spread temporaries.
 */
export function resultOf(
  resource: { kind: string; name: string },
  cause: Cause,
  details: StatusDetails = {},
): ResourceStatus {
  const { status, next } = CAUSES[cause];
  const result: ResourceStatus = { kind: resource.kind, name: resource.name, status, next };
  if (details.organization) result.organization = details.organization;
  if (details.id) result.id = details.id;
  if (details.message) result.message = details.message;
  if (details.requestId) result.requestId = details.requestId;
  if (details.lastAppliedAt) result.lastAppliedAt = details.lastAppliedAt;
  if (status === "Failed") result.failure = next === "retry" ? "transient" : "terminal";
  return result;
}

/**
 * The platform's id of an object, from what a record (or a manifest) says of where it is: the last of
 * its path parameters (`address`: a path ends in the object's own id, `/keys/{keyId}`), else the id a
 * create was answered with; undefined while it has none (a create not made yet, a watch).
 */
export function objectIdOf(
  where:
    | { address?: Readonly<Record<string, string>> | undefined; serverId?: string | undefined }
    | undefined,
): string | undefined {
  const address = where?.address;
  let last: string | undefined;
  for (const key in address) last = address[key];
  return last ?? where?.serverId;
}

/** Whether a pass came out as it should: every resource done, and no manifest problem. */
export const passOk = (statuses: readonly ResourceStatus[], manifestErrors: number): boolean =>
  manifestErrors === 0 && statuses.every((s) => s.next === "done");

export type PassResult = {
  /** The revision the pass read (git-sync link target), when the folder is a link. */
  revision?: string;
  startedAt: string;
  finishedAt: string;
  statuses: ResourceStatus[];
  /** Problems found in the manifests of this revision. */
  manifestErrors: number;
  /** True when every resource is done (see NextStep) and the manifests had no problem (`passOk`). */
  ok: boolean;
  /** The objects this pass created, deleted and orphaned (driftless_lifecycle_total). */
  lifecycle?: LifecycleEvent[];
  /** The deletes the mass-deletion guard held in this pass, for an operator (driftless_deletes_held). */
  deletesHeld?: number;
};

/** What happened to an object in a pass: created, deleted, or orphaned (its manifest left git, it was left). */
export const LIFECYCLE_ACTIONS = ["create", "delete", "orphan"] as const;
export type LifecycleEvent = { kind: string; action: (typeof LIFECYCLE_ACTIONS)[number] };

/** Why a pass runs: the daemon's triggers (`operator`: suspend or resume), and `cli` for apply. For logs and the pass's options. */
export type Trigger =
  | "start"
  | "watch"
  | "webhook"
  | "schedule"
  | "reassert"
  | "retry"
  | "superseded"
  | "leader"
  | "operator"
  | "drift"
  | "cli";
