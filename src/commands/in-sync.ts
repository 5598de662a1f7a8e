/**
 * What the exit codes of apply, reconcile and status call "in sync": every resource Synced, or
 * Unmanaged or Deleted (its manifest left git, so git asks nothing more of it). A Suspended resource is nothing
 * to retry, by an operator's choice, but git's changes do not reach it meanwhile: it is not in sync, and
 * a CI job or a script that asks must hear so.
 */
export const inSync = (resources: readonly { status: string }[]): boolean =>
  resources.every((r) => r.status === "Synced" || r.status === "Unmanaged" || r.status === "Deleted");

/** `2 Suspended, 1 Failed`: how many resources of each status other than Synced, in order of first appearance. */
export function notSyncedCounts(resources: readonly { status: string }[]): string {
  const counts = new Map<string, number>();
  for (const { status } of resources)
    if (status !== "Synced") counts.set(status, (counts.get(status) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${n} ${status}`).join(", ");
}
