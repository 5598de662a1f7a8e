import { isApiError, messageOf } from "../errors.js";
import { kindOf } from "../kinds/index.js";
import { isNone, PHASES } from "../kinds/kind.js";
import { manifestObject, sameId } from "../manifests/identity.js";
import { isKind, type Manifest } from "../manifests/manifest.js";
import { mapLimited } from "../map-limited.js";
import type { PlannedRequest } from "../plan/types.js";
import { type PlanView, viewOf } from "../plan/view.js";
import { type Cause, objectIdOf, parseResourceId, resourceId, resultOf } from "../resources.js";
import type { ResourceRecord } from "../state/store.js";
import type { PassRun } from "./pass.js";
import type { EngineDeps, Pass, PassOptions, ResourceOutcome } from "./types.js";
import { isWriteRefusedError, type Writer } from "./write-guard.js";

/**
 * The deletes of a pass: the objects whose manifest left git and whose deletion policy says delete
 * (records.ts finds them), after the pass's creates and updates. What keeps them from being sent, in
 * order: a revision that does not read whole (a problem in any manifest: a reference it holds is not
 * known); the object being one that is never deleted (the key driftless authenticates with, an object
 * another manifest now addresses by its id: orphaned instead); a manifest that still names it; then the
 * mass-deletion guard over the deletes left (more than the pass may send: none is sent, an operator
 * lets them go). Dependents go first (a pipe before the endpoint it names); a 404 answer counts as
 * deleted.
 */

/** The most deletes one pass sends unless an operator allows more (DRIFTLESS_MAX_DELETES). */
export const DEFAULT_MAX_DELETES = 5;

/** What the deletes of a pass read beyond its run. */
export type DeleteLimits = {
  /** DRIFTLESS_MAX_DELETES. */
  maxDeletes: number;
  /** `--allow-deletes N`: this pass may send up to N deletes (the guard's limit, raised). */
  allowDeletes?: number | undefined;
  /** The key id driftless authenticates with on an organization, when known: that key is never deleted. */
  keyIdOf(organizationId: string | undefined): string | undefined;
  /** The pass's time, for the orphans' Unmanaged mark. */
  now: Date;
};

/** What the deletes of a pass may send: DRIFTLESS_MAX_DELETES, the operator's allowance, the keys never deleted. */
export function deleteLimits(
  deps: Pick<EngineDeps, "maxDeletes" | "managementKeyId">,
  options: Pick<PassOptions, "allowDeletes">,
  now: Date,
): DeleteLimits {
  return {
    maxDeletes: deps.maxDeletes ?? DEFAULT_MAX_DELETES,
    allowDeletes: options.allowDeletes,
    now,
    keyIdOf: (organizationId) => {
      try {
        return organizationId === undefined ? undefined : deps.managementKeyId?.(organizationId);
      } catch {
        return undefined;
      }
    },
  };
}

/** What a pass's deletes came to: each record's outcome, and how many the guard holds. */
export type Deletes = { outcomes: ResourceOutcome[]; held: number };

/**
 * Runs the deletes of `ids` (records whose manifest is gone and whose policy deletes their object):
 * what may not be deleted is orphaned or waits first, then the guard counts the deletes left to send,
 * which are held, or sent one kind-phase after another, dependents first.
 */
export async function runDeletes(
  run: PassRun,
  ids: readonly string[],
  limits: DeleteLimits,
): Promise<Deletes> {
  if (ids.length === 0) return { outcomes: [], held: 0 };
  const deletes = await decideDeletes(run, ids, limits);
  for (const outcome of deletes.outcomes) run.deps.onResource?.(outcome);
  return deletes;
}

/** Each record's outcome, before it is reported (runDeletes). */
async function decideDeletes(run: PassRun, ids: readonly string[], limits: DeleteLimits): Promise<Deletes> {
  const { pass } = run;
  if (pass.set.problems.length > 0) {
    const why = `not deleted yet: the manifests of this revision have ${pass.set.problems.length} problem(s), and a manifest with a problem may still name this object; nothing is deleted until the revision reads whole`;
    return { outcomes: ids.map((id) => stop(pass, id, "waiting", why)), held: 0 };
  }
  const outcomes: ResourceOutcome[] = [];
  const toSend: Sendable[] = [];
  for (const id of ids) {
    const verdict = triage(pass, id, limits);
    if ("request" in verdict) toSend.push(verdict);
    else if ("orphan" in verdict) outcomes.push(await orphan(run, id, verdict.record, verdict.orphan));
    else outcomes.push(stop(pass, id, "waiting", verdict.wait));
  }
  const limit = Math.max(limits.maxDeletes, limits.allowDeletes ?? 0);
  const count = toSend.length;
  if (count > limit) {
    const why = `held by the mass-deletion guard: this pass would delete ${count} objects, more than ${limit} (DRIFTLESS_MAX_DELETES${limits.allowDeletes === undefined ? "" : ", --allow-deletes"}); nothing is deleted until an operator allows it: driftless apply --allow-deletes ${count}, or driftless reconcile --allow-deletes ${count} with a daemon`;
    outcomes.push(...toSend.map(({ id }) => stop(pass, id, "delete-held", why)));
    return { outcomes, held: count };
  }
  // Dependents first: what names an object goes before it.
  for (const phase of [...PHASES].reverse()) {
    const ofPhase = toSend.filter(({ record }) => phaseOfRecord(record) === phase);
    outcomes.push(...(await mapLimited(ofPhase, run.deps.concurrency ?? 4, (one) => send(run, one))));
  }
  return { outcomes, held: 0 };
}

const phaseOfRecord = ({ kind }: ResourceRecord) => (isKind(kind) ? kindOf(kind).phase : PHASES[0]);

/** A record that stops without a request: its cause and why, as `plan` shows it too. */
function stop(pass: Pass, id: string, cause: Cause, message: string): ResourceOutcome {
  const record = pass.state.resources[id];
  const resource = parseResourceId(id);
  const objectId = objectIdOf(record);
  const status = resultOf(resource, cause, { id: objectId, message, lastAppliedAt: record?.appliedAt });
  const orphan = cause === "unmanaged";
  const shown: PlanView = {
    ...resource,
    ...(objectId ? { id: objectId } : {}),
    outcome: orphan ? "unmanaged" : status.status === "Failed" ? "refuse" : "wait",
    reason: message,
    changes: [],
    action: orphan ? "orphan" : "delete",
  };
  return { status, cause, sent: [], shown };
}

/** What a delete is of, for the write guard and the effects: the record, without its manifest. */
const writerOf = (record: ResourceRecord): Writer => ({
  kind: isKind(record.kind) ? record.kind : "Organization",
  name: record.name,
  annotations: {},
  spec: {},
});

/** A delete to send: the record and its request. */
type Sendable = { id: string; record: ResourceRecord; request: PlannedRequest };

/**
 * What becomes of one record's object before the guard counts: orphaned (never deleted, or cannot be:
 * the key driftless authenticates with, an object another manifest now addresses by its id, a record
 * that does not say where its object is), waiting (a manifest still names it), or a delete to send.
 */
function triage(
  pass: Pass,
  id: string,
  limits: DeleteLimits,
): Sendable | { orphan: string; record: ResourceRecord } | { wait: string } {
  // The ids are the state's own: a record is always there.
  const record: ResourceRecord = pass.state.resources[id] ?? parseResourceId(id);
  const { kind } = record;
  if (!isKind(kind)) return { orphan: "not deleted: a kind this driftless does not know", record };
  const remover = kindOf(kind).delete;
  const request = isNone(remover) || !record.address ? undefined : remover.request(record.address);
  const kept = isNone(remover)
    ? undefined
    : remover.kept?.(record, limits.keyIdOf(record.address?.organizationId));
  if (kept || !request) return { orphan: kept ?? cannotDelete(record), record };
  const owner = addressedBy(pass, record);
  if (owner)
    return {
      orphan: `${resourceId(owner)} addresses the same object by its id and manages it now: never deleted (left as it is)`,
      record,
    };
  const naming = namedBy(pass, record);
  if (naming)
    return { wait: `not deleted: ${resourceId(naming)} still names it; it is deleted once no manifest does` };
  return { id, record, request };
}

/** The valid manifest of the revision that addresses the record's object by its ids, if any. */
function addressedBy(pass: Pass, record: ResourceRecord): Manifest | undefined {
  const { object } = record;
  return object === undefined ? undefined : pass.set.manifests.find((m) => manifestObject(m) === object);
}

/** Why a record's object cannot be deleted by driftless. */
function cannotDelete(record: ResourceRecord): string {
  if (record.intent)
    return "its create's outcome is unknown, so driftless does not know its id: if the create made an object, delete it in the platform's console";
  return "its record does not say where its object is (it was last seen by an older driftless): left as it is";
}

/**
 * The valid manifest of the revision that names the record's object, by its manifest name or by its
 * server id (a pipe naming an endpoint), if any.
 */
function namedBy(pass: Pass, record: ResourceRecord): Manifest | undefined {
  const { kind, name, serverId } = record;
  return pass.set.manifests.find((manifest) => {
    const module = kindOf(manifest.kind);
    if (module.references(manifest.spec).some((ref) => ref.kind === kind && ref.name === name)) return true;
    if (serverId === undefined) return false;
    const ids = module.referencedIds?.(manifest.spec) ?? [];
    return ids.some((ref) => ref.kind === kind && sameId(ref.id, serverId));
  });
}

/** An object that must never be deleted, or cannot be: left as it is, its record kept as Unmanaged. */
async function orphan(
  run: PassRun,
  id: string,
  record: ResourceRecord,
  why: string,
): Promise<ResourceOutcome> {
  const since = record.unmanagedSince ?? run.now.toISOString();
  const outcome = stop(run.pass, id, "unmanaged", `its manifest is gone since ${since}; ${why}`);
  if (record.unmanagedSince !== undefined) return outcome;
  run.effects.record(id, { ...record, unmanagedSince: since });
  await run.effects.save().catch(() => {});
  return { ...outcome, lifecycle: "orphan" };
}

/** Sends the delete; a 404 is as good as an answer: the object is gone either way. */
async function send(run: PassRun, { id, record, request }: Sendable): Promise<ResourceOutcome> {
  const { effects } = run;
  const write = { manifest: writerOf(record), stopped: () => undefined };
  const view = deleteView(record, request);
  const notSent = await effects.mayWrite(write);
  if (notSent) return stop(run.pass, id, notSent.cause, notSent.message);
  let requestId: string | undefined;
  try {
    requestId = (await effects.send(request, { ...write, priority: "change" })).requestId;
  } catch (error) {
    if (!(isApiError(error) && error.context.status === 404)) return failed(run, id, error);
  }
  effects.record(id, undefined);
  try {
    await effects.save();
  } catch (error) {
    run.log.warn({ resource: id, err: error }, "deleted, but the state could not be saved yet");
  }
  run.log.info({ resource: id, requestId }, "object deleted: its manifest left git");
  const status = resultOf(record, "deleted", {
    id: objectIdOf(record),
    message: "its manifest left git and its deletion policy is delete: the object was deleted",
    requestId,
    lastAppliedAt: run.now.toISOString(),
  });
  return { status, cause: "deleted", sent: [view], answered: true, shown: view, lifecycle: "delete" };
}

function failed(run: PassRun, id: string, error: unknown): ResourceOutcome {
  if (isWriteRefusedError(error)) return stop(run.pass, id, error.verdict, error.message);
  const retry = !isApiError(error) || error.context.retryable;
  const outcome = stop(
    run.pass,
    id,
    retry ? "platform-error" : "refused-by-platform",
    `not deleted: ${messageOf(error)}`,
  );
  return {
    ...outcome,
    sent: [],
    failedRequests: isApiError(error) && error.context.status !== undefined ? 1 : 0,
  };
}

/** What `plan` and `apply` show of a delete. */
export function deleteView(record: ResourceRecord, request: PlannedRequest): PlanView {
  const kind = isKind(record.kind) ? record.kind : undefined;
  const remover = kind ? kindOf(kind).delete : undefined;
  const cascade = remover && !isNone(remover) ? remover.cascade : undefined;
  const view = viewOf(
    {
      kind: kind ?? "Organization",
      name: record.name,
      outcome: "send",
      reason: "its manifest left git and its deletion policy is delete",
      changes: [],
      write: { request, record: () => record },
    },
    undefined,
  );
  const id = objectIdOf(record);
  return {
    ...view,
    kind: record.kind,
    ...(id ? { id } : {}),
    action: "delete",
    ...(cascade ? { notes: [cascade] } : {}),
  };
}
