import { messageOf } from "../errors.js";
import { loadSettled } from "../manifests/load.js";
import type { Kind, Manifest, ManifestOf } from "../manifests/manifest.js";
import { formatProblem, type Problem } from "../manifests/problem.js";
import { createParseCache } from "../manifests/read-file.js";
import { mapLimited } from "../map-limited.js";
import { phaseOf, planResource } from "../plan/planners.js";
import { READY } from "../plan/reverse-private-endpoint.js";
import { type EndpointRef, PHASES, type Phase, type PlanContext, type Specs } from "../plan/types.js";
import { member } from "../plan/values.js";
import { type PlanView, viewOf } from "../plan/view.js";
import { parseResourceId, resourceId } from "../resources.js";
import type { ResourceRecord, StateStore } from "../state/store.js";
import { PassMetrics } from "../telemetry/pass-metrics.js";
import { applyResource, markChanged, type ResourceRun } from "./apply-resource.js";
import { resolveDesired } from "./desired.js";
import type { ApplyOptions, EngineDeps, Pass, PassResult, Reconciler, ResourceStatus } from "./types.js";

/**
 * The reconcile pass, outer part: loading, ordering, the context planners see, status and metrics.
 * The inner part, per resource, is apply-resource.ts.
 */

/** What `plan` shows: per resource, the first request an apply would send (or why none). */
export type PlanReport = {
  revision?: string;
  /** The state holds no record at all: every resource is planned as a first contact. */
  stateEmpty: boolean;
  problems: Problem[];
  resources: PlanView[];
};

async function startPass(deps: EngineDeps): Promise<Pass> {
  const set = await loadSettled(deps.manifests, { cache: deps.parseCache });
  const state = await deps.store.load();
  const invalid = new Map<string, Problem[]>();
  for (const problem of set.problems) {
    if (!problem.resource) continue;
    invalid.set(problem.resource, [...(invalid.get(problem.resource) ?? []), problem]);
  }
  const valid = new Set(set.manifests.map(resourceId));
  return {
    set,
    state,
    invalid,
    valid,
    startedAt: deps.now?.() ?? new Date(),
    dirty: new Map(),
    undurable: new Map(),
  };
}

/** How a pipe sees a ReversePrivateEndpoint it names, from the state as it is now. */
function endpointLookup(pass: Pass): (name: string) => EndpointRef {
  return (name) => {
    const id = resourceId({ kind: "ReversePrivateEndpoint", name });
    if (pass.invalid.has(id))
      return { state: "waiting", reason: `waits for ${id}, whose manifest is invalid` };
    if (!pass.valid.has(id)) return { state: "missing", reason: `names ${id}, which has no manifest` };
    const record = pass.state.resources[id];
    if (!record?.serverId) {
      const why = record?.intent ? "its create has an unknown outcome" : "it is not created yet";
      return { state: "waiting", reason: `waits for ${id}: ${why}` };
    }
    // There is no GET for endpoints, so a status other than Ready is known only from the create
    // answer: the pipe waits out the pass that created it and uses the endpoint from the next one.
    const status = member(record.observed, "status");
    const createdNow =
      !pass.endpointsSettled &&
      record.appliedAt !== undefined &&
      Date.parse(record.appliedAt) >= pass.startedAt.getTime();
    if (record.observed && status !== READY && createdNow) {
      return {
        state: "waiting",
        reason: `waits for ${id}: created in this pass with status ${String(status)}, not ${READY}; used once the pass's other resources are done`,
      };
    }
    return { state: "ready", id: record.serverId };
  };
}

function contextOf(pass: Pass, deps: EngineDeps): Omit<PlanContext, "reassert" | "allowCreate"> {
  const managementKeyId = deps.managementKeyId?.();
  return {
    now: deps.now?.() ?? new Date(),
    endpoint: endpointLookup(pass),
    ...(managementKeyId ? { managementKeyId } : {}),
  };
}

function invalidStatus(id: string, problems: Problem[], record: ResourceRecord | undefined): ResourceStatus {
  return {
    ...parseResourceId(id),
    status: "Invalid",
    message: problems.map(formatProblem).join("; "),
    ...(record?.appliedAt ? { lastAppliedAt: record.appliedAt } : {}),
  };
}

/**
 * What an apply would send, per resource, without sending anything or saving the state. Throws
 * ConfigError when the manifests folder cannot be read, StateError when the state cannot.
 */
export async function planPass(
  deps: EngineDeps,
  options: {
    reassert?: boolean;
    allowCreate?: readonly string[];
    /** Replaces secret resolution (`plan --secrets skip`): the desired spec without reading any secret. */
    desired?: <K extends Kind>(manifest: ManifestOf<K>, record: ResourceRecord | undefined) => Specs[K];
  } = {},
): Promise<PlanReport> {
  const pass = await startPass(deps);
  const base = contextOf(pass, deps);
  const allow = new Set(options.allowCreate ?? []);
  const resources: PlanView[] = [];
  for (const phase of PHASES) {
    for (const m of pass.set.manifests) {
      if (phaseOf(m.kind) !== phase) continue;
      const id = resourceId(m);
      const record = pass.state.resources[id];
      try {
        const resolved = options.desired
          ? options.desired(m, record)
          : resolveDesired(m, deps.secrets, pass.state.salt);
        const spec = resolved instanceof Promise ? await resolved : resolved;
        const context = { ...base, reassert: options.reassert ?? false, allowCreate: allow.has(id) };
        resources.push(
          viewOf(planResource({ kind: m.kind, name: m.name, spec, record, context }), record?.applied),
        );
      } catch (error) {
        resources.push({
          kind: m.kind,
          name: m.name,
          outcome: "refuse",
          reason: messageOf(error),
          changes: [],
        });
      }
    }
  }
  return {
    ...(pass.set.revision ? { revision: pass.set.revision } : {}),
    stateEmpty: Object.keys(pass.state.resources).length === 0,
    problems: pass.set.problems,
    resources,
  };
}

/**
 * Forgets that an allowance to create again was spent, for the resources no longer allowed: the
 * operator took the allowance back, so giving it again allows one more attempt. True when any changed.
 */
function rearmAllowances(run: PassRun): void {
  for (const [id, record] of Object.entries(run.pass.state.resources)) {
    if (record.allowanceUsedAt === undefined || run.allow.has(id)) continue;
    delete record.allowanceUsedAt;
    markChanged(run.pass, id);
  }
}

/** The Reconciler of the apply command and the daemon. */
export function createReconciler(
  given: EngineDeps,
): Reconciler & { pass(options: ApplyOptions): Promise<PassResult> } {
  const deps = { parseCache: createParseCache(), ...given };
  const passMetrics = deps.metrics ? new PassMetrics(deps.metrics) : undefined;
  // Records a pass changed but could not save: the store's copy is older than what was sent, so the
  // next pass starts from these instead (tile ids and owned entries must never be forgotten).
  let unsaved = new Map<string, ResourceRecord | undefined>();
  return {
    async pass(options) {
      const { result, pass } = await applyPass(deps, options, passMetrics, unsaved);
      unsaved = new Map([...pass.dirty.keys()].map((id) => [id, pass.state.resources[id]]));
      return result;
    },
  };
}

/** Lays the records an earlier pass could not save over the loaded state, and tries to save them now. */
async function restoreUnsaved(run: PassRun, unsaved: ReadonlyMap<string, ResourceRecord | undefined>) {
  const { pass } = run;
  for (const [id, record] of unsaved) {
    if (record) pass.state.resources[id] = record;
    else delete pass.state.resources[id];
    markChanged(pass, id);
  }
  rearmAllowances(run);
  if (pass.dirty.size === 0) return;
  try {
    await run.save();
  } catch (error) {
    for (const id of pass.dirty.keys()) pass.undurable.set(id, messageOf(error));
    run.log.warn({ err: error, resources: pass.undurable.size }, "state still not saved");
  }
}

async function applyPass(
  deps: EngineDeps,
  options: ApplyOptions,
  passMetrics: PassMetrics | undefined,
  unsaved: ReadonlyMap<string, ResourceRecord | undefined>,
): Promise<{ result: PassResult; pass: Pass }> {
  const pass = await startPass(deps);
  const log = options.logger
    ? options.logger.child({ revision: pass.set.revision })
    : deps.logger.child({ pass: options.trigger, revision: pass.set.revision });
  log.info(
    { manifests: pass.set.manifests.length, problems: pass.set.problems.length },
    "reconcile pass started",
  );
  const run: PassRun = {
    deps,
    pass,
    base: contextOf(pass, deps),
    allow: new Set(options.allowCreate ?? []),
    options,
    save: chainedSaves(deps.store, pass),
    log,
  };
  await restoreUnsaved(run, unsaved);

  const statuses = invalidStatuses(pass, deps);
  for (const phase of PHASES) statuses.push(...(await applyPhase(run, phase)));
  await run.save.settled();
  return { result: finishPass(run, statuses, passMetrics), pass };
}

type PassRun = ResourceRun & { save: ChainedSave };
type ChainedSave = (() => Promise<void>) & { settled(): Promise<void> };

/**
 * Saves chained one after the other, so two resources finishing together never write the state at once.
 * A save that succeeds counts the records changed before it as saved.
 */
function chainedSaves(store: StateStore, pass: Pass): ChainedSave {
  let saving: Promise<void> = Promise.resolve();
  const save = (): Promise<void> => {
    const next = saving.then(async () => {
      const changes = new Map(pass.dirty);
      await store.save(pass.state);
      for (const [id, count] of changes) if (pass.dirty.get(id) === count) pass.dirty.delete(id);
    });
    saving = next.catch(() => {});
    return next;
  };
  return Object.assign(save, { settled: () => saving });
}

/** The statuses of manifests that are invalid (and have no valid twin). */
function invalidStatuses(pass: Pass, deps: EngineDeps): ResourceStatus[] {
  const statuses: ResourceStatus[] = [];
  for (const [id, problems] of pass.invalid) {
    if (pass.valid.has(id)) continue;
    const status = invalidStatus(id, problems, pass.state.resources[id]);
    statuses.push(status);
    deps.onResource?.({ status, sent: [] });
  }
  return statuses;
}

/**
 * The resources of one phase, a few at once. A dependent left waiting for an endpoint that this pass
 * created is tried once more when the phase is done, so that one apply converges where it can.
 */
async function applyPhase(run: PassRun, phase: Phase): Promise<ResourceStatus[]> {
  const { deps, pass, options } = run;
  const manifests = pass.set.manifests.filter((m) => phaseOf(m.kind) === phase);
  const waited = new Set<Manifest>();
  const outcomes = await mapLimited(manifests, deps.concurrency ?? 4, async (m) => {
    const held = options.hold?.(resourceId(m));
    if (held) return { status: held, sent: [] };
    const outcome = await applyResource(m, run);
    if (outcome.status.status === "Pending" && createdInThisPass(pass)) waited.add(m);
    else deps.onResource?.(outcome);
    return outcome;
  });
  if (waited.size > 0) {
    // There is no GET for endpoints: the ones created in this pass are used from here on, as a next
    // pass would use them.
    pass.endpointsSettled = true;
    for (const [index, m] of manifests.entries()) {
      if (!waited.has(m)) continue;
      const outcome = await applyResource(m, run);
      const first = outcomes[index];
      outcomes[index] = { status: outcome.status, sent: [...(first?.sent ?? []), ...outcome.sent] };
      deps.onResource?.(outcomes[index]);
    }
  }
  return outcomes.map((o) => o.status);
}

/** Whether this pass created a reverse private endpoint (it has a server id recorded since the pass began). */
function createdInThisPass(pass: Pass): boolean {
  return Object.values(pass.state.resources).some(
    (r) =>
      r.kind === "ReversePrivateEndpoint" &&
      r.serverId !== undefined &&
      r.appliedAt !== undefined &&
      Date.parse(r.appliedAt) >= pass.startedAt.getTime(),
  );
}

function finishPass(
  run: PassRun,
  statuses: ResourceStatus[],
  passMetrics: PassMetrics | undefined,
): PassResult {
  const { deps, pass, log } = run;
  const finishedAt = deps.now?.() ?? new Date();
  const result: PassResult = {
    ...(pass.set.revision ? { revision: pass.set.revision } : {}),
    startedAt: pass.startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    statuses,
    manifestErrors: pass.set.problems.length,
    ok: pass.set.problems.length === 0 && statuses.every((s) => s.status === "Synced"),
  };
  passMetrics?.recordPass(result);
  passMetrics?.recordStatuses(result.statuses);
  const counts: Record<string, number> = {};
  for (const s of statuses) counts[s.status] = (counts[s.status] ?? 0) + 1;
  log.info({ ok: result.ok, ...counts, manifestErrors: result.manifestErrors }, "reconcile pass finished");
  return result;
}
