import {
  type NextStep,
  type PassResult,
  RESOURCE_STATUSES,
  type ResourceStatus,
  type ResourceStatusName,
  resourceId,
} from "../resources.js";

/**
 * What driftless tells the outside about its passes: the JSON bodies of the webhook, when a pass is
 * worth telling, and the GitHub commit status a pass comes to. Pure: the notifier sends them.
 */

/** One resource that is not Synced, as a notification names it, with what comes next for it. */
export type NotifiedResource = Pick<
  ResourceStatus,
  "kind" | "name" | "status" | "next" | "message" | "requestId"
>;

export type PassEvent = {
  event: "pass";
  revision: string | null;
  ok: boolean;
  startedAt: string;
  finishedAt: string;
  /** Resources per status; every status is present, 0 when none. */
  counts: Record<string, number>;
  manifestErrors: number;
  /** The resources not Synced, those that need a person first, as many as fit in the body's bound. */
  notSynced: NotifiedResource[];
  /** How many resources not Synced were left out of `notSynced` to keep the body within its bound. */
  notSyncedOmitted: number;
};

/**
 * The most bytes of resources one pass event lists, and the longest message it quotes. A body per
 * resource would grow with the estate: 10,000 not Synced made a 2.7 MiB body, and a destination down
 * for a while keeps up to 100 of them queued. Bounded, a full queue holds at most about 6.4 MiB.
 */
export const MAX_NOTIFIED_BYTES = 60 * 1024;
export const MAX_MESSAGE_CHARS = 1_000;

/** Which resources a bounded event lists first: those that need a person, then those that wait. */
const URGENCY: readonly ResourceStatusName[] = [
  "Unknown",
  "Failed",
  "Drifted",
  "Invalid",
  "Warning",
  "Pending",
  "Suspended",
  "Unmanaged",
  "Deleted",
];

export type UnknownCreateEvent = {
  event: "unknown-create";
  at: string;
  resource: NotifiedResource;
};

/**
 * A read found a live object changed outside git (DRIFTLESS_READS=on): the fields that differ, with
 * what git states and what is live (secrets are never compared), and what driftless does about it.
 */
export type DriftEvent = {
  event: "drift";
  at: string;
  resource: NotifiedResource;
  fields: Array<{ path: string; want: unknown; have: unknown }>;
  /** `correct`: the next write puts it back; `report`: left as it is (`driftless/drift: report`, or it cannot be written). */
  action: "correct" | "report";
};

export type NotifyEvent = PassEvent | UnknownCreateEvent | DriftEvent;

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
  next: s.next,
  ...(s.message ? { message: cut(s.message, MAX_MESSAGE_CHARS) } : {}),
  ...(s.requestId ? { requestId: s.requestId } : {}),
});

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * The resources not Synced, the most urgent first (pass order within a status), as many as fit in
 * MAX_NOTIFIED_BYTES of JSON; and how many were left out.
 */
function boundedNotSynced(
  statuses: readonly ResourceStatus[],
): Pick<PassEvent, "notSynced" | "notSyncedOmitted"> {
  const rank = (s: ResourceStatus) => {
    const at = URGENCY.indexOf(s.status);
    return at < 0 ? URGENCY.length : at;
  };
  const waiting = statuses.filter((s) => s.status !== "Synced");
  const ordered = waiting
    .map((status, index) => ({ status, index }))
    .sort((a, b) => rank(a.status) - rank(b.status) || a.index - b.index);
  const notSynced: NotifiedResource[] = [];
  let bytes = 0;
  for (const { status } of ordered) {
    const entry = notified(status);
    // The entry and the comma before it.
    bytes += Buffer.byteLength(JSON.stringify(entry)) + 1;
    if (bytes > MAX_NOTIFIED_BYTES) break;
    notSynced.push(entry);
  }
  return { notSynced, notSyncedOmitted: waiting.length - notSynced.length };
}

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
    ...boundedNotSynced(result.statuses),
  };
}

export function unknownCreateEvent(status: ResourceStatus, at: Date): UnknownCreateEvent {
  return { event: "unknown-create", at: at.toISOString(), resource: notified(status) };
}

export function driftEvent(
  status: ResourceStatus,
  fields: DriftEvent["fields"],
  action: DriftEvent["action"],
  at: Date,
): DriftEvent {
  // The fields are bounded like a pass event's resources: a dashboard may differ in many tiles.
  const shown: DriftEvent["fields"] = [];
  let bytes = 0;
  for (const field of fields) {
    bytes += Buffer.byteLength(JSON.stringify(field)) + 1;
    if (bytes > MAX_NOTIFIED_BYTES) break;
    shown.push(field);
  }
  return { event: "drift", at: at.toISOString(), resource: notified(status), fields: shown, action };
}

export type CommitState = "success" | "failure" | "pending";

/** GitHub's limit on a commit status description. */
const DESCRIPTION_MAX = 140;

/** Next steps that no pass can take on its own: a changed input, or a person. */
const STUCK: ReadonlySet<NextStep> = new Set(["change", "operator"]);

/**
 * The commit status a pass comes to: success when the pass is ok, failure when something waits for a
 * changed input or a person (a refusal, an invalid manifest, an unknown outcome, manifest problems),
 * pending while resources are still retried.
 */
export function commitStatusOf(result: PassResult): { state: CommitState; description: string } {
  const counts = countsOf(result);
  const stuck = result.manifestErrors > 0 || result.statuses.some((s) => STUCK.has(s.next));
  const state: CommitState = result.ok ? "success" : stuck ? "failure" : "pending";
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
