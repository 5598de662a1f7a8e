import { type DriftField, type ReadOptions, readLive } from "../drift/index.js";
import { isApiError, messageOf } from "../errors.js";
import { createOf, observeOf, readyObject } from "../kinds/index.js";
import { isNone, type PlanContext } from "../kinds/kind.js";
import { manifestId } from "../manifests/identity.js";
import type { Kind, Manifest } from "../manifests/manifest.js";
import { notFoundHint } from "../manifests/not-found.js";
import { mapLimited } from "../map-limited.js";
import type { Change } from "../plan/types.js";
import type { PlanView } from "../plan/view.js";
import type { Read } from "../platform/client.js";
import type { PlannedRequest, RouteName } from "../platform/routes.js";
import { resourceId } from "../resources.js";
import type { ResourceRecord, State } from "../state/store.js";
import { unreadSecrets } from "./desired.js";
import type { ListReads } from "./list-reads.js";

/**
 * `plan` and `apply` with reads on: each managed object is read and compared with what its manifest
 * states (its kind's observe), and what differs is laid over the resource's record as if driftless had
 * last sent the live values: the plan then sends them back like any change, and each such change is
 * marked as made outside git. Plan keeps this in memory only; `plan --base` reads nothing. Plan also
 * checks that the id each never-applied manifest names exists (checkIds).
 */

/**
 * What a read found: the fields that differ and the live object, gone, or why it was not read; or, for
 * a resource driftless never applied, whether the object its manifest names exists (and if not, what to
 * do).
 */
export type DriftFinding =
  | { fields: DriftField[]; live: unknown }
  | { gone: true }
  | { error: string }
  | { exists: true }
  | { missing: string };

/** What one read found: the live object (undefined: the platform has none) and what differs from git. */
export type Compared = {
  live: object | undefined;
  fields: DriftField[];
  requestId?: string;
  /** When the kind cannot send the live object back to git's (an endpoint), what to do instead. */
  fixed?: string;
};

/**
 * Reads the live object of `target` with the read its kind names and compares it with what the
 * manifest states: undefined when there is nothing to read (a kind not read, an object not created yet).
 * Throws what the read threw.
 */
export async function readAndCompare(
  read: Read,
  target: Manifest,
  record: ResourceRecord | undefined,
  context: PlanContext,
  options: ReadOptions = {},
): Promise<Compared | undefined> {
  const observe = observeOf(target.kind);
  if (isNone(observe)) return undefined;
  const input = { ...subjectOf(target, record), context };
  const request = observe.read(input);
  if (!request) return undefined;
  const answer = await readLive(read, request, options);
  const fields = answer.live === undefined ? [] : observe.drift(input, answer.live);
  return {
    live: answer.live,
    fields,
    ...(answer.requestId ? { requestId: answer.requestId } : {}),
    ...(observe.fixed ? { fixed: observe.fixed } : {}),
  };
}

/** What the reads of a plan or an apply found: a finding by resource, and how many were read or left. */
export type DriftReads = {
  findings: Map<string, DriftFinding>;
  /** Reads answered (the object equal, changed or gone). */
  read: number;
  /**
   * Resources a read could see but driftless never applied: not read (a first apply sends it all); with
   * checkIds, only those whose manifest names no id yet (a first apply creates them).
   */
  unapplied: number;
};

/**
 * Reads every managed object a read can see and driftless applied before, a few at once: what each
 * read found, by resource. `context` is the pass's (how a resource sees the ones it names). With
 * `checkIds` (plan), the object each never-applied manifest names by id is read too, only to see that
 * it exists.
 */
export async function readDrift(
  manifests: readonly Manifest[],
  state: State,
  read: Read,
  options: { concurrency: number; context: PlanContext; checkIds?: ListReads },
): Promise<DriftReads> {
  const reads: DriftReads = { findings: new Map(), read: 0, unapplied: 0 };
  await mapLimited(manifests, options.concurrency, async (manifest) => {
    const id = manifestId(manifest);
    const record = state.resources[id];
    if (isNone(observeOf(manifest.kind))) return;
    // Never applied: there is nothing of driftless's to compare, and everything is sent anyway.
    if (!record?.appliedAt) {
      const checked = options.checkIds ? await checkId(read, options.checkIds, manifest, record) : undefined;
      if (checked) reads.findings.set(id, checked);
      else reads.unapplied += 1;
      return;
    }
    try {
      const found = await readAndCompare(read, manifest, record, options.context);
      if (!found) return;
      reads.read += 1;
      if (found.live === undefined) reads.findings.set(id, { gone: true });
      else if (found.fields.length > 0) reads.findings.set(id, { fields: found.fields, live: found.live });
    } catch (error) {
      reads.findings.set(id, { error: messageOf(error) });
    }
  });
  return reads;
}

/**
 * Whether the object a never-applied manifest names exists (found, missing, or the read's error);
 * undefined when the manifest names no id yet (a first apply creates it): nothing to read.
 */
async function checkId(
  read: Read,
  lists: ListReads,
  manifest: Manifest,
  record: ResourceRecord | undefined,
): Promise<DriftFinding | undefined> {
  const observe = observeOf(manifest.kind);
  if (isNone(observe)) return undefined;
  const subject = subjectOf(manifest, record);
  // Found in the list that holds it where the kind has one (read once for all: the pass's first
  // contacts then use the same answer), else by its own GET.
  const request = observe.listed(subject) ?? observe.read(subject);
  if (!request) return undefined;
  const readAnswer = async <R extends RouteName>(request: PlannedRequest<R>) =>
    (await read(request, { priority: "read" })).result;
  try {
    const live = await lists.read({ read: readAnswer }, request);
    if (live === undefined) return { missing: `${NO_SUCH_OBJECT}: ${notListed(manifest.kind)}` };
    return { exists: true };
  } catch (error) {
    if (!isApiError(error) || error.context.status !== 404) return { error: messageOf(error) };
    return { missing: `${NO_SUCH_OBJECT}: ${error.message}${notFoundHint(manifest.kind, error)}` };
  }
}

const NO_SUCH_OBJECT = "no such object in the platform (the id was checked before a first apply)";

/** What an id its list lacks means (an endpoint's), and what to do. */
function notListed(kind: Kind): string {
  const create = createOf(kind);
  if (isNone(create)) return "its list does not hold the id the manifest names: fix the id";
  const { idField, noun, within } = create;
  return `its ${idField} names no ${noun} ${within}: fix the id, or remove ${idField} from the manifest to let driftless create the ${noun}`;
}

/**
 * How a resource read outside a pass sees the ones it names (the daemon's read rounds): by the ids of
 * their manifests (`named`, those of the round) and of their records as last saved.
 */
export function contextOfRecords(
  records: Readonly<Record<string, ResourceRecord>>,
  now: Date,
  named: readonly Manifest[] = [],
): PlanContext {
  const manifests = new Map(named.map((manifest) => [manifestId(manifest), manifest]));
  return {
    now,
    reassert: false,
    ref: (kind, name) => {
      const id = resourceId({ kind, name });
      const record = records[id];
      const manifest = manifests.get(id);
      const serverId = record?.serverId;
      const ready = manifest
        ? readyObject(manifest, record)
        : serverId
          ? ({ state: "ready", id: serverId } as const)
          : undefined;
      return ready ?? { state: "waiting", reason: `${id} has no id yet` };
    },
  };
}

/** A manifest and its record as a kind's operations take them; its secrets are not read (never compared). */
const subjectOf = (target: Manifest, record: ResourceRecord | undefined) => ({
  kind: target.kind,
  name: target.name,
  spec: unreadSecrets(target),
  record,
});

/** Lays the drift of each finding over the records of `state`, in memory. */
export function foldAll(manifests: readonly Manifest[], state: State, findings: Map<string, DriftFinding>) {
  for (const manifest of manifests) {
    const id = manifestId(manifest);
    const finding = findings.get(id);
    const record = state.resources[id];
    const observe = observeOf(manifest.kind);
    if (!finding || !("fields" in finding) || !record || isNone(observe)) continue;
    state.resources[id] = observe.fold(record, finding.fields, finding.live);
  }
}

/** True when a change and a drifted field speak of the same member (one is the other, or inside it). */
function related(a: string, b: string): boolean {
  const inside = (x: string, y: string) => x.startsWith(`${y}.`) || x.startsWith(`${y}[`);
  return a === b || inside(a, b) || inside(b, a);
}

/**
 * The view with what the read found: the changes that send back what was changed outside git marked
 * so, the drifted fields no change covers added as such, a note when the read failed or found nothing;
 * refused when its kind cannot send it back.
 */
export function viewWithDrift(view: PlanView, finding: DriftFinding | undefined, fixed?: string): PlanView {
  if (!finding) return view;
  if ("error" in finding)
    return { ...view, notes: [...(view.notes ?? []), `the live object could not be read: ${finding.error}`] };
  if ("gone" in finding)
    return { ...view, notes: [...(view.notes ?? []), "the live object was not found in the platform"] };
  if ("exists" in finding) return view;
  if ("missing" in finding) {
    // Nothing is planned for an object that does not exist: apply's request would fail the same way.
    const { request: _request, action: _action, followUp: _followUp, ...rest } = view;
    return { ...rest, outcome: "refuse", reason: finding.missing, changes: [] };
  }
  const { fields } = finding;
  const changes: Change[] = view.changes.map((change) =>
    fields.some((field) => related(field.path, change.path)) ? { ...change, outsideGit: true } : change,
  );
  for (const field of fields) {
    if (changes.some((change) => related(field.path, change.path))) continue;
    changes.push({ path: field.path, from: field.have, to: field.want, op: "set", outsideGit: true });
  }
  if (fixed && !view.request) return { ...view, outcome: "refuse", reason: fixed, changes };
  return { ...view, changes };
}

/**
 * What plan says of its reads: read, changed outside git, not read (failed, or never applied); and the
 * never-applied resources whose id was checked (`checked`), of them those naming no object (`missing`).
 */
export type DriftCounts = {
  read: number;
  drifted: number;
  unread: number;
  unapplied: number;
  checked: number;
  missing: number;
};

export function driftCounts({ findings, read, unapplied }: DriftReads): DriftCounts {
  let drifted = 0;
  let unread = 0;
  let checked = 0;
  let missing = 0;
  for (const finding of findings.values()) {
    if ("fields" in finding) drifted += 1;
    if ("error" in finding) unread += 1;
    if ("exists" in finding) checked += 1;
    if ("missing" in finding) {
      checked += 1;
      missing += 1;
    }
  }
  return { read, drifted, unread, unapplied, checked, missing };
}
