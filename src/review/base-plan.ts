import { kindOf } from "../kinds/index.js";
import { isNone } from "../kinds/kind.js";
import { DRIFTLESS_ANNOTATIONS } from "../manifests/fields.js";
import { loadRevision, type ManifestSet } from "../manifests/load.js";
import type { Manifest } from "../manifests/manifest.js";
import type { Problem } from "../manifests/problem.js";
import { createParseCache } from "../manifests/read-file.js";
import { type PlanView, relabelView } from "../plan/view.js";
import { withCascades } from "../reconcile/cascade.js";
import { type DryRunOptions, dryRun, viewOfOutcome } from "../reconcile/dry-run.js";
import { passOf } from "../reconcile/pass.js";
import { deletionPolicyOf } from "../reconcile/records.js";
import type { ResourceOutcome } from "../reconcile/types.js";
import { objectIdOf, resourceId } from "../resources.js";
import { STATE_VERSION, type State } from "../state/store.js";
import { createLogger, type Logger } from "../telemetry/logger.js";
import { type BaseSet, loadBase } from "./git-manifests.js";
import { type Renames, renameCosts, renamesOf } from "./renames.js";
import { BY_REFERENCE, byReference, hasReferences } from "./secret-references.js";

/**
 * `plan --base`: the requests merging a change would cause, from manifests alone. The base manifests
 * stand for what the platform has (the records a dry apply of them leaves), DIR's for what it will get;
 * a dry apply of DIR over those records (reconcile/dry-run.ts, apply's own pass) says what is sent.
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

/** Throws ConfigError when DIR or the base cannot be read (no repository, no such revision). */
export async function planAgainstBase(
  dir: string,
  baseRef: string,
  now = new Date(),
): Promise<BasePlanResult> {
  // The head's files whose text the base has are not parsed twice.
  const cache = createParseCache();
  const base = await loadBase(baseRef, dir, cache);
  // Of two head manifests addressing one object, the one the base already had keeps it.
  const known = new Set(base.manifests.map(resourceId));
  const head = await loadRevision(dir, { existing: (m) => known.has(resourceId(m)), cache });
  const log = createLogger("silent");
  // What driftless would hold once it had applied the base: the base applied to nothing, dry.
  const basePass = passOf(base, emptyState(), now);
  await dryRun(basePass, dryOptions(now, log));
  const headPass = passOf(head, { ...emptyState(), resources: basePass.state.resources }, now);
  const before = { ...basePass.state.resources };
  const { outcomes } = await dryRun(headPass, dryOptions(now, log));
  const renames = renamesOf(base.manifests, head.manifests);
  const baseInvalid = new Set(base.problems.flatMap((p) => (p.resource ? [p.resource] : [])));
  const manifests = new Map(head.manifests.map((m) => [resourceId(m), m]));
  const resources = outcomes.map((outcome) => {
    const view = relabelView(viewOfOutcome(outcome), BY_REFERENCE);
    const notes = headNotes(view, manifests.get(resourceId(view)), renames, baseInvalid, outcome);
    const from = renames.byHead.get(resourceId(view));
    return { ...view, ...(from ? { renamedFrom: from.name } : {}), ...(notes.length ? { notes } : {}) };
  });
  // A removed manifest whose object the head's pass deletes (or holds) shows as that delete; the
  // others stop being managed, each as the base manifest's policy says.
  const deletes = new Set(
    outcomes.filter((o) => o.shown?.action === "delete").map((o) => resourceId(o.status)),
  );
  for (const m of base.manifests) {
    const id = resourceId(m);
    if (headPass.valid.has(id) || headPass.invalid.has(id) || renames.byBase.has(id) || deletes.has(id))
      continue;
    resources.push(removed(m));
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
  return { base, head, notices, problems: head.problems, resources: await withCascades(resources, before) };
}

/** A new state: no record, no salt (secrets are compared by reference, never hashed by value). */
const emptyState = (): State => ({ version: STATE_VERSION, salt: "-", resources: {} });

/** A dry run from the manifests alone: secrets by reference, no key id (no lock-out guard), no credential. */
function dryOptions(now: Date, log: Logger): DryRunOptions {
  return { now, log, deps: {}, desired: byReference };
}

/** What a reviewer should know of a head resource: what its rename costs, or that its base was invalid. */
function headNotes(
  view: PlanView,
  manifest: Manifest | undefined,
  renames: Renames,
  baseInvalid: ReadonlySet<string>,
  outcome: ResourceOutcome,
): string[] {
  const id = resourceId(view);
  const from = renames.byHead.get(id);
  const newHere = baseInvalid.has(id) && !outcome.first?.input?.record;
  return [
    ...(from && manifest ? renameCosts(from, manifest) : []),
    ...(newHere ? ["its manifest at the base is invalid: planned as if it were new"] : []),
  ];
}

/**
 * A base manifest gone from the head whose object is not deleted: orphaned by its deletion policy (an
 * object it adopted by id, or its annotation), or of a kind never deleted (an organization, a watch).
 */
function removed(m: Manifest): PlanView {
  const policy = deletionPolicyOf(m);
  const id = objectIdOf({ address: kindOf(m.kind).address(m.spec, undefined) });
  const view = {
    kind: m.kind,
    name: m.name,
    ...(id ? { id } : {}),
    outcome: "unmanaged" as const,
    changes: [],
  };
  if (policy === "orphan") {
    const stated = m.annotations[DRIFTLESS_ANNOTATIONS.deletionPolicy] === "orphan";
    const why = stated ? `${DRIFTLESS_ANNOTATIONS.deletionPolicy}: orphan` : "adopted by its id";
    return {
      ...view,
      action: "orphan",
      reason: `its manifest was removed and its deletion policy is orphan (${why}): nothing is sent, the object stays on the platform as it is, and driftless no longer changes it`,
    };
  }
  const never = isNone(kindOf(m.kind).delete) ? "; driftless never deletes this kind's object" : "";
  return {
    ...view,
    reason: `its manifest was removed: nothing is sent, and driftless no longer changes it${never}`,
  };
}
