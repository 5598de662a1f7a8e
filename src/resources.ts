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
 * its record is kept for a while.
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
] as const;
export type ResourceStatusName = (typeof RESOURCE_STATUSES)[number];

/** One resource's outcome, as `/status`, `apply --output json` and the metrics show it. */
export type ResourceStatus = {
  kind: string;
  name: string;
  status: ResourceStatusName;
  /** The organization the resource belongs to (its spec's organizationId), for the kinds that have one. */
  organization?: string;
  /** Why it is not Synced: the platform's message, a validation problem, what to do. */
  message?: string;
  /** The platform's request id of the failing (or last) request, when there was one. */
  requestId?: string;
  /** ISO-8601 time of the last successful apply. */
  lastAppliedAt?: string;
  /**
   * Of a Failed resource: `transient` (the next pass tries again: 5xx, 429, time-out) or `terminal` (the
   * platform refused it and would again: sent again only when an input changes, or at a re-assertion).
   */
  failure?: Failure;
};

export const FAILURES = ["transient", "terminal"] as const;
export type Failure = (typeof FAILURES)[number];

export type PassResult = {
  /** The revision the pass read (git-sync link target), when the folder is a link. */
  revision?: string;
  startedAt: string;
  finishedAt: string;
  statuses: ResourceStatus[];
  /** Problems found in the manifests of this revision. */
  manifestErrors: number;
  /** True when every resource is Synced (or Unmanaged: its manifest was deleted) and the manifests had no problem. */
  ok: boolean;
};

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
  | "cli";
