import { compare, type DriftField, type LiveAnswer, type ReadTarget } from "../drift/index.js";
import { messageOf } from "../errors.js";
import { manifestId } from "../manifests/identity.js";
import type { Manifest } from "../manifests/manifest.js";
import { mapLimited } from "../map-limited.js";
import type { Change } from "../plan/types.js";
import { isPlainObject, member } from "../plan/values.js";
import type { PlanView } from "../plan/view.js";
import { resourceId } from "../resources.js";
import type { ResourceRecord, State } from "../state/store.js";

/**
 * `plan` with reads on: each managed object is read and compared with what its manifest states
 * (drift/), and what differs is laid over the resource's record, in memory only, as if driftless had
 * last sent the live values: the plan then sends them back like any change, and each such change is
 * marked as made outside git. Nothing of this is saved; `plan --base` reads nothing.
 */

/** Reads the live object of a resource (drift/readLive over a platform client). */
export type LiveReader = (target: ReadTarget) => Promise<LiveAnswer | undefined>;

/** What a read found: the fields that differ and the live object, gone, or why it was not read. */
export type DriftFinding = { fields: DriftField[]; live: unknown } | { gone: true } | { error: string };

/** Marks a dashboard's applied form as differing, so that its PUT (which sends every tile) is planned. */
const OUTSIDE_GIT = "(changed outside git)";

/**
 * Reads every managed object a read can see and driftless applied before, a few at once: what each
 * read found, by resource.
 */
export async function readDrift(
  manifests: readonly Manifest[],
  state: State,
  read: LiveReader,
  concurrency: number,
): Promise<Map<string, DriftFinding>> {
  const endpointId = (name: string) =>
    state.resources[resourceId({ kind: "ReversePrivateEndpoint", name })]?.serverId;
  const findings = new Map<string, DriftFinding>();
  await mapLimited(manifests, concurrency, async (manifest) => {
    const record = state.resources[manifestId(manifest)];
    // Never applied: there is nothing of driftless's to compare, and everything is sent anyway.
    if (!record?.appliedAt) return;
    const target: ReadTarget = { ...manifest, serverId: record?.serverId };
    try {
      const answer = await read(target);
      if (!answer) return;
      if (answer.live === undefined) {
        findings.set(manifestId(manifest), { gone: true });
        return;
      }
      const context = { endpointId, ...(record?.tileIds ? { tileIds: record.tileIds } : {}) };
      const fields = compare(target, answer.live, context);
      if (fields.length > 0) findings.set(manifestId(manifest), { fields, live: answer.live });
    } catch (error) {
      findings.set(manifestId(manifest), { error: messageOf(error) });
    }
  });
  return findings;
}

/** The dotted path of a field up to its first list entry: the member a request sends whole. */
const memberPath = (path: string) => path.split("[")[0] ?? path;

/** `value` with `path` (dotted) set to `to`; objects on the way copied, made where missing. */
function withAt(value: unknown, path: string[], to: unknown): Record<string, unknown> {
  const base = isPlainObject(value) ? { ...value } : {};
  const [head, ...rest] = path;
  if (head === undefined) return base;
  base[head] = rest.length === 0 ? to : withAt(base[head], rest, to);
  return base;
}

/**
 * The record as if driftless had last sent the live values of the drifted fields: three-way lists
 * take the live list (the planner computes its sets from it), a dashboard is marked as differing (its
 * PUT sends every tile), any other field takes its live value. A reverse private endpoint cannot be
 * updated: its record is left as it is.
 */
export function foldDrift(manifest: Manifest, record: ResourceRecord, fields: DriftField[], live: unknown) {
  let next: ResourceRecord = record;
  for (const field of fields) {
    const path = memberPath(field.path);
    const at = path.split(".");
    const liveValue = at.reduce<unknown>((node, key) => member(node, key), live);
    if (manifest.kind === "ReversePrivateEndpoint" || path === "(object)") continue;
    if (
      (manifest.kind === "Organization" && path === "privateEndpoints") ||
      (manifest.kind === "DataPipe" && path === "source.postgres.tableMappings")
    ) {
      next = { ...next, observed: withAt(next.observed, at, liveValue) };
    } else if (manifest.kind === "Dashboard" && path === "tiles") {
      next = { ...next, applied: { ...next.applied, [OUTSIDE_GIT]: true } };
    } else {
      next = { ...next, applied: withAt(next.applied, at, liveValue) };
    }
  }
  return next;
}

/** Lays the drift of each finding over the records of `state`, in memory. */
export function foldAll(manifests: readonly Manifest[], state: State, findings: Map<string, DriftFinding>) {
  for (const manifest of manifests) {
    const id = manifestId(manifest);
    const finding = findings.get(id);
    const record = state.resources[id];
    if (!finding || !("fields" in finding) || !record) continue;
    state.resources[id] = foldDrift(manifest, record, finding.fields, finding.live);
  }
}

/** True when a change and a drifted field speak of the same member (one is the other, or inside it). */
function related(a: string, b: string): boolean {
  const inside = (x: string, y: string) => x.startsWith(`${y}.`) || x.startsWith(`${y}[`);
  return a === b || inside(a, b) || inside(b, a);
}

const ENDPOINT_FIXED =
  "changed outside git, and a reverse private endpoint cannot be updated: revert the change in the platform, or create a replacement under a new manifest name (and move the pipes to it)";

/**
 * The view with what the read found: the changes that send back what was changed outside git marked
 * so, the drifted fields no change covers added as such, a note when the read failed or found nothing.
 */
export function viewWithDrift(view: PlanView, finding: DriftFinding | undefined): PlanView {
  if (!finding) return view;
  if ("error" in finding)
    return { ...view, notes: [...(view.notes ?? []), `the live object could not be read: ${finding.error}`] };
  if ("gone" in finding)
    return { ...view, notes: [...(view.notes ?? []), "the live object was not found in the platform"] };
  const { fields } = finding;
  const changes: Change[] = view.changes.map((change) =>
    fields.some((field) => related(field.path, change.path)) ? { ...change, outsideGit: true } : change,
  );
  for (const field of fields) {
    if (changes.some((change) => related(field.path, change.path))) continue;
    changes.push({ path: field.path, from: field.have, to: field.want, op: "set", outsideGit: true });
  }
  if (view.kind === "ReversePrivateEndpoint" && !view.request)
    return { ...view, outcome: "refuse", reason: ENDPOINT_FIXED, changes };
  return { ...view, changes };
}

/** How many resources a read found changed outside git, and how many could not be read. */
export function driftCounts(findings: ReadonlyMap<string, DriftFinding>): {
  drifted: number;
  unread: number;
} {
  let drifted = 0;
  let unread = 0;
  for (const finding of findings.values()) {
    if ("fields" in finding) drifted += 1;
    if ("error" in finding) unread += 1;
  }
  return { drifted, unread };
}
