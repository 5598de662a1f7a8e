import { loadSettled, type ManifestSet } from "../manifests/load.js";
import type { Manifest } from "../manifests/manifest.js";
import type { Problem } from "../manifests/problem.js";
import type { EndpointRef, PlanContext } from "../plan/types.js";
import { type PlanView, relabelView, viewOf } from "../plan/view.js";
import { resourceId } from "../resources.js";
import type { ResourceRecord } from "../state/store.js";
import { type BaseSet, loadBase } from "./git-manifests.js";
import { planOne, recordOfBase } from "./plan-one.js";
import { followsRename, renameCosts, renamesOf } from "./renames.js";
import { BY_REFERENCE, byReference, hasReferences } from "./secret-references.js";

/**
 * `plan --base`: the requests merging a change would cause, from manifests alone. The base manifests
 * stand for what the platform has (each one's record is what a converged apply of it would have
 * left), DIR's for what it will get; the same planners as `plan` and `apply` say what is sent.
 */

export type BasePlanResult = {
  base: BaseSet;
  head: ManifestSet;
  notices: string[];
  problems: Problem[];
  resources: PlanView[];
};

const SECRETS_BY_REFERENCE =
  "secrets are compared by reference (fromEnv/fromFile), never by value: a secret whose value changed behind an unchanged reference is not seen here.";

/** Made-up ids, where the platform would assign one: shown in requests that carry them. */
const endpointIdOf = (name: string) => `<id of ReversePrivateEndpoint/${name}>`;
const tileIdOf = (dashboard: string) => (key: string) => `<id of tile ${key} of Dashboard/${dashboard}>`;

/** Endpoints first, as a pass orders them: pipes name them. */
const firstEndpoints = (manifests: readonly Manifest[]) => [
  ...manifests.filter((m) => m.kind === "ReversePrivateEndpoint"),
  ...manifests.filter((m) => m.kind !== "ReversePrivateEndpoint"),
];

/** Throws ConfigError when DIR or the base cannot be read (no repository, no such revision). */
export async function planAgainstBase(
  dir: string,
  baseRef: string,
  now = new Date(),
): Promise<BasePlanResult> {
  const head = await loadSettled(dir);
  const base = await loadBase(baseRef, dir);
  const records = baseRecords(base, now);
  const renames = renamesOf(base.manifests, head.manifests);
  const headInvalid = new Set(head.problems.flatMap((p) => (p.resource ? [p.resource] : [])));
  const headValid = new Set(head.manifests.map(resourceId));
  const baseInvalid = new Set(base.problems.flatMap((p) => (p.resource ? [p.resource] : [])));

  const context: PlanContext = {
    reassert: false,
    allowCreate: false,
    now,
    endpoint: endpointLookup(headValid, headInvalid, records),
  };
  const resources: PlanView[] = [];
  for (const m of firstEndpoints(head.manifests)) {
    const id = resourceId(m);
    const from = renames.byHead.get(id);
    // The daemon moves the old name's record to a renamed manifest: plan against it, as it will.
    const record =
      records.get(id) ?? (from && followsRename(from, m) ? records.get(resourceId(from)) : undefined);
    const plan = planOne({ kind: m.kind, name: m.name, spec: byReference(m), record, context });
    const view = relabelView(viewOf(plan, record?.applied), BY_REFERENCE);
    const notes = [
      ...(from ? renameCosts(from, m) : []),
      ...(baseInvalid.has(id) && !record
        ? ["its manifest at the base is invalid: planned as if it were new"]
        : []),
    ];
    resources.push({
      ...view,
      ...(from ? { renamedFrom: from.name } : {}),
      ...(notes.length ? { notes } : {}),
    });
  }
  for (const m of base.manifests) {
    const id = resourceId(m);
    if (headValid.has(id) || headInvalid.has(id) || renames.byBase.has(id)) continue;
    resources.push(unmanaged(m));
  }
  const secrets = [...head.manifests, ...base.manifests].some((m) => hasReferences(m.spec));
  const notices = [
    ...(secrets ? [SECRETS_BY_REFERENCE] : []),
    ...(base.problems.length > 0
      ? [
          `${base.problems.length} problem(s) in the base manifests: those resources are planned as if they were new.`,
        ]
      : []),
  ];
  return { base, head, notices, problems: head.problems, resources };
}

/** The record of each base manifest: what driftless would hold once it had applied the base. */
function baseRecords(base: ManifestSet, now: Date): Map<string, ResourceRecord | undefined> {
  const names = new Set(base.manifests.filter((m) => m.kind === "ReversePrivateEndpoint").map((m) => m.name));
  const context: PlanContext = {
    reassert: false,
    allowCreate: false,
    now,
    endpoint: (name): EndpointRef =>
      names.has(name)
        ? { state: "ready", id: endpointIdOf(name) }
        : { state: "missing", reason: `names ReversePrivateEndpoint/${name}, which has no manifest` },
  };
  const at = now.toISOString();
  const records = new Map<string, ResourceRecord | undefined>();
  for (const m of base.manifests) {
    const tileKeys = m.kind === "Dashboard" ? m.spec.tiles.map((tile) => tile.key) : [];
    const made = { serverId: endpointIdOf(m.name), tileId: tileIdOf(m.name), tileKeys };
    const spec = byReference(m);
    records.set(resourceId(m), recordOfBase({ kind: m.kind, name: m.name, spec, context }, made, at));
  }
  return records;
}

/** How a pipe of DIR sees an endpoint it names: created at the base, or not yet. */
function endpointLookup(
  valid: Set<string>,
  invalid: Set<string>,
  records: Map<string, ResourceRecord | undefined>,
): (name: string) => EndpointRef {
  return (name) => {
    const id = resourceId({ kind: "ReversePrivateEndpoint", name });
    if (invalid.has(id)) return { state: "waiting", reason: `waits for ${id}, whose manifest is invalid` };
    if (!valid.has(id)) return { state: "missing", reason: `names ${id}, which has no manifest` };
    const serverId = records.get(id)?.serverId;
    if (serverId) return { state: "ready", id: serverId };
    return {
      state: "waiting",
      reason: `waits for ${id}: it is created by this change, and this resource is sent once it is Ready`,
    };
  };
}

function unmanaged(m: Manifest): PlanView {
  const kept =
    m.kind === "ReversePrivateEndpoint" || m.kind === "Dashboard"
      ? "it is not deleted"
      : "it stays on the platform as it is";
  return {
    kind: m.kind,
    name: m.name,
    outcome: "unmanaged",
    reason: `its manifest was removed: nothing is sent, ${kept}, and driftless no longer changes it`,
    changes: [],
  };
}
