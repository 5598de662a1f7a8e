import { type PassResult, RESOURCE_STATUSES, type ResourceStatus, resourceId } from "../resources.js";

/**
 * What driftless tells the outside about its passes: the JSON bodies of the webhook, when a pass is
 * worth telling, and the GitHub commit status a pass comes to. Pure: the notifier sends them.
 */

/** One resource that is not Synced, as a notification names it. */
export type NotifiedResource = Pick<ResourceStatus, "kind" | "name" | "status" | "message" | "requestId">;

export type PassEvent = {
  event: "pass";
  revision: string | null;
  ok: boolean;
  startedAt: string;
  finishedAt: string;
  /** Resources per status; every status is present, 0 when none. */
  counts: Record<string, number>;
  manifestErrors: number;
  notSynced: NotifiedResource[];
};

export type UnknownCreateEvent = {
  event: "unknown-create";
  at: string;
  resource: NotifiedResource;
};

export type NotifyEvent = PassEvent | UnknownCreateEvent;

/** What is compared from pass to pass: whether it was ok, and which resources were not Synced. */
export type PassDigest = { ok: boolean; notSynced: string };

export function digestOf(result: PassResult): PassDigest {
  const ids = result.statuses.filter((s) => s.status !== "Synced").map(resourceId);
  return { ok: result.ok, notSynced: ids.sort().join("\n") };
}

/**
 * Whether a pass is worth telling: its result differs from the previous pass's (ok ↔ not ok, or the set
 * of resources not Synced changed). The first pass of a process is compared with a quiet, all-Synced one.
 */
export function isNews(previous: PassDigest | undefined, next: PassDigest): boolean {
  const before = previous ?? { ok: true, notSynced: "" };
  return before.ok !== next.ok || before.notSynced !== next.notSynced;
}

const notified = (s: ResourceStatus): NotifiedResource => ({
  kind: s.kind,
  name: s.name,
  status: s.status,
  ...(s.message ? { message: s.message } : {}),
  ...(s.requestId ? { requestId: s.requestId } : {}),
});

export function countsOf(result: PassResult): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(RESOURCE_STATUSES.map((s) => [s, 0]));
  for (const s of result.statuses) counts[s.status] = (counts[s.status] ?? 0) + 1;
  return counts;
}

export function passEvent(result: PassResult): PassEvent {
  return {
    event: "pass",
    revision: result.revision ?? null,
    ok: result.ok,
    startedAt: result.startedAt,
    finishedAt: result.finishedAt,
    counts: countsOf(result),
    manifestErrors: result.manifestErrors,
    notSynced: result.statuses.filter((s) => s.status !== "Synced").map(notified),
  };
}

export function unknownCreateEvent(status: ResourceStatus, at: Date): UnknownCreateEvent {
  return { event: "unknown-create", at: at.toISOString(), resource: notified(status) };
}

export type CommitState = "success" | "failure" | "pending";

/** GitHub's limit on a commit status description. */
const DESCRIPTION_MAX = 140;

/**
 * The commit status a pass comes to: success when all is as git says, failure when something needs a
 * person (refused, invalid, unknown outcome, manifest problems), pending while resources still wait.
 */
export function commitStatusOf(result: PassResult): { state: CommitState; description: string } {
  const counts = countsOf(result);
  const needsPerson =
    (counts.Failed ?? 0) + (counts.Invalid ?? 0) + (counts.Unknown ?? 0) + result.manifestErrors;
  const state: CommitState = result.ok ? "success" : needsPerson > 0 ? "failure" : "pending";
  const parts = Object.entries(counts)
    .filter(([, count]) => count > 0)
    .map(([status, count]) => `${count} ${status}`);
  if (result.manifestErrors > 0) parts.push(`${result.manifestErrors} manifest problem(s)`);
  const text = `driftless: ${parts.length > 0 ? parts.join(", ") : "no resources"}`;
  return {
    state,
    description: text.length > DESCRIPTION_MAX ? `${text.slice(0, DESCRIPTION_MAX - 1)}…` : text,
  };
}
