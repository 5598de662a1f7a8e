import { messageOf } from "../errors.js";
import { manifestId } from "../manifests/identity.js";
import { loadSettled } from "../manifests/load.js";
import type { Kind, Manifest, ManifestOf } from "../manifests/manifest.js";
import { formatProblem, type Problem } from "../manifests/problem.js";
import { createParseCache } from "../manifests/read-file.js";
import { mapLimited } from "../map-limited.js";
import { phaseOf, planResource } from "../plan/planners.js";
import { READY } from "../plan/reverse-private-endpoint.js";
import { type EndpointRef, PHASES, type Phase, type Specs } from "../plan/types.js";
import { member } from "../plan/values.js";
import { type PlanView, viewOf } from "../plan/view.js";
import { parseResourceId, resourceId } from "../resources.js";
import type { ResourceRecord } from "../state/store.js";
import { PassMetrics } from "../telemetry/pass-metrics.js";
import {
  applyResource,
  keyContext,
  markChanged,
  type ResourceRun,
  suspendedBecause,
  type TerminalFailures,
} from "./apply-resource.js";
import { resolveDesired } from "./desired.js";
import { DEFAULT_UNMANAGED_RETENTION_MS, type SettledRecords, settleRecords } from "./records.js";
import type {
  ApplyOptions,
  EngineDeps,
  Pass,
  PassResult,
  Reconciler,
  ResourceOutcome,
  ResourceStatus,
} from "./types.js";

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
  const valid = new Set(set.manifests.map(manifestId));
  return {
    set,
    state,
    invalid,
    valid,
    startedAt: deps.now?.() ?? new Date(),
    secretKey: deps.secretKey?.() ?? state.salt,
    dirty: new Map(),
    keyIds: new Map(),
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

function contextOf(pass: Pass, deps: EngineDeps): ResourceRun["base"] {
  return { now: deps.now?.() ?? new Date(), endpoint: endpointLookup(pass) };
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
  // Only in memory: plan shows the records renames would move and the ones that are Unmanaged.
  const settled = settle(pass, deps, deps.logger);
  const base = contextOf(pass, deps);
  const allow = new Set(options.allowCreate ?? []);
  const resources: PlanView[] = [];
  for (const phase of PHASES) {
    for (const m of pass.set.manifests) {
      if (phaseOf(m.kind) !== phase) continue;
      const id = manifestId(m);
      const record = pass.state.resources[id];
      // What apply would do: send nothing for it (status Suspended).
      const suspended = suspendedBecause(m, pass.state.suspended);
      if (suspended) {
        resources.push({ kind: m.kind, name: m.name, outcome: "wait", reason: suspended, changes: [] });
        continue;
      }
      try {
        const resolved = options.desired
          ? options.desired(m, record)
          : resolveDesired(m, deps.secrets, pass.secretKey);
        const spec = resolved instanceof Promise ? await resolved : resolved;
        const context = {
          ...base,
          ...keyContext(deps, m, pass),
          reassert: options.reassert ?? false,
          allowCreate: allow.has(id),
        };
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
  resources.push(...unmanagedViews(settled));
  return {
    ...(pass.set.revision ? { revision: pass.set.revision } : {}),
    stateEmpty: Object.keys(pass.state.resources).length === 0,
    problems: pass.set.problems,
    resources,
  };
}

/** Renames followed, records of deleted manifests kept or dropped (see records.ts). */
function settle(pass: Pass, deps: EngineDeps, log: EngineDeps["logger"]): SettledRecords {
  const retentionMs = deps.unmanagedRetentionMs ?? DEFAULT_UNMANAGED_RETENTION_MS;
  return settleRecords(pass, { retentionMs, now: deps.now?.() ?? new Date(), log });
}

/** What `plan` shows of the records without a manifest: nothing is sent for them. */
function unmanagedViews(settled: SettledRecords): PlanView[] {
  const view = (s: ResourceStatus, reason: string): PlanView => ({
    kind: s.kind,
    name: s.name,
    outcome: "unmanaged",
    reason,
    changes: [],
  });
  return [
    ...settled.unmanaged.map((s) => view(s, s.message ?? "")),
    ...settled.dropped.map((s) => view(s, `${s.message ?? ""}; the next apply drops its record`)),
  ];
}

/**
 * Forgets that an allowance to create again was spent, for the resources no longer allowed: the
 * operator took the allowance back, so giving it again allows one more attempt. True when any changed.
 */
function rearmAllowances(run: PassRun): void {
  const { resources } = run.pass.state;
  for (const id in resources) {
    const record = resources[id] as ResourceRecord;
    if (record.allowanceUsedAt === undefined || run.allow.has(id)) continue;
    const { allowanceUsedAt: _rearmed, ...rest } = record;
    resources[id] = rest;
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
  const terminal: TerminalFailures = new Map();
  return {
    async pass(options) {
      const { result, pass } = await applyPass(deps, options, passMetrics, { unsaved, terminal });
      unsaved = new Map([...pass.dirty.keys()].map((id) => [id, pass.state.resources[id]]));
      return result;
    },
  };
}

/**
 * Forgets the refusals of resources without a valid manifest in this pass (removed, renamed, invalid):
 * a daemon would otherwise keep them for its whole life, and a manifest brought back is a new word
 * from git, whose request is sent again.
 */
function forgetRefusalsOfGone(terminal: TerminalFailures, pass: Pass): void {
  for (const id of terminal.keys()) if (!pass.valid.has(id)) terminal.delete(id);
}

/** Lays the records an earlier pass could not save over the loaded state. */
function restoreUnsaved(run: PassRun, unsaved: ReadonlyMap<string, ResourceRecord | undefined>): void {
  const { pass } = run;
  for (const [id, record] of unsaved) {
    if (record) pass.state.resources[id] = record;
    else delete pass.state.resources[id];
    markChanged(pass, id);
  }
}

/** Saves what the pass changed before applying anything (restored, re-armed, renamed, unmanaged). */
async function saveBeforeApplying(run: PassRun): Promise<void> {
  const { pass } = run;
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
  memory: { unsaved: ReadonlyMap<string, ResourceRecord | undefined>; terminal: TerminalFailures },
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
    save: chainedSaves(deps, pass),
    log,
    terminal: memory.terminal,
  };
  deps.suspension?.sync(pass.state);
  forgetRefusalsOfGone(memory.terminal, pass);
  restoreUnsaved(run, memory.unsaved);
  rearmAllowances(run);
  const settled = settle(pass, deps, log);
  for (const id of settled.changed) markChanged(pass, id);
  await saveSuspension(run);
  await saveBeforeApplying(run);

  const statuses = [...invalidStatuses(pass, deps), ...unmanagedStatuses(settled, deps)];
  for (const phase of PHASES) statuses.push(...(await applyPhase(run, phase)));
  await run.save.settled();
  return { result: finishPass(run, statuses, passMetrics), pass };
}

/** A suspend or resume asked for since the last save is saved before anything is sent. */
async function saveSuspension(run: PassRun): Promise<void> {
  if (!run.deps.suspension?.pending()) return;
  try {
    await run.save();
  } catch (error) {
    run.log.warn({ err: error }, "suspend or resume not saved yet: the next save of the state records it");
  }
}

type PassRun = ResourceRun & { save: ChainedSave };
type ChainedSave = (() => Promise<void>) & { settled(): Promise<void> };

/**
 * Saves chained one after the other, so two resources finishing together never write the state at once.
 * A save that succeeds counts the records changed before it as saved.
 */
function chainedSaves({ store, suspension }: EngineDeps, pass: Pass): ChainedSave {
  let saving: Promise<void> = Promise.resolve();
  const save = (): Promise<void> => {
    const next = saving.then(async () => {
      const changes = new Map(pass.dirty);
      const token = suspension?.sync(pass.state);
      await store.save(pass.state);
      if (token !== undefined) suspension?.saved(token);
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

/** The records kept without a manifest: reported, nothing sent. */
function unmanagedStatuses(settled: SettledRecords, deps: EngineDeps): ResourceStatus[] {
  for (const status of settled.unmanaged) deps.onResource?.({ status, sent: [] });
  return settled.unmanaged;
}

/**
 * The resources of one phase, a few at once. A dependent left waiting for an endpoint that this pass
 * created is tried once more when the phase is done, so that one apply converges where it can.
 */
async function applyPhase(run: PassRun, phase: Phase): Promise<ResourceStatus[]> {
  const { deps, pass, options } = run;
  const manifests = pass.set.manifests.filter((m) => phaseOf(m.kind) === phase);
  const waited = new Set<Manifest>();
  const report = (m: Manifest, outcome: ResourceOutcome): ResourceOutcome => {
    if (outcome.status.status === "Pending" && pass.createdEndpoint) waited.add(m);
    else deps.onResource?.(outcome);
    return outcome;
  };
  const outcomes = await mapLimited(manifests, deps.concurrency ?? 4, (m) => {
    const held = options.hold?.(manifestId(m));
    if (held) return { status: held, sent: [] };
    const outcome = applyResource(m, run);
    return outcome instanceof Promise ? outcome.then((done) => report(m, done)) : report(m, outcome);
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
    // A record kept after its manifest was deleted is as the manifests say, and Suspended is an
    // operator's choice (DriftlessSuspendedTooLong watches it): neither is a failure.
    ok:
      pass.set.problems.length === 0 &&
      statuses.every((s) => s.status === "Synced" || s.status === "Unmanaged" || s.status === "Suspended"),
  };
  passMetrics?.recordPass(result);
  passMetrics?.recordStatuses(result.statuses);
  const counts: Record<string, number> = {};
  for (const s of statuses) counts[s.status] = (counts[s.status] ?? 0) + 1;
  log.info({ ok: result.ok, ...counts, manifestErrors: result.manifestErrors }, "reconcile pass finished");
  return result;
}
