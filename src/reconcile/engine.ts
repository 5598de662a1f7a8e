import { messageOf } from "../errors.js";
import { observeOf } from "../kinds/index.js";
import { isNone } from "../kinds/kind.js";
import { isKind, type Kind, type ManifestOf } from "../manifests/manifest.js";
import { formatProblem, type Problem } from "../manifests/problem.js";
import { createParseCache } from "../manifests/read-file.js";
import type { Specs } from "../plan/types.js";
import type { PlanView } from "../plan/view.js";
import type { Read } from "../platform/client.js";
import {
  type LifecycleEvent,
  objectIdOf,
  parseResourceId,
  passOk,
  resourceId,
  resultOf,
} from "../resources.js";
import type { ResourceRecord } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import { PassMetrics } from "../telemetry/pass-metrics.js";
import { teamAlerts, withCascades } from "./cascade.js";
import { deleteLimits, runDeletes } from "./deletes.js";
import { dryRun, unmanagedViews, viewOfOutcome } from "./dry-run.js";
import { type ApplyEffects, applyEffects } from "./effects.js";
import { type ListReads, listReads } from "./list-reads.js";
import { prepareRecords, readSecrets, refLookup, runPhases, startPass } from "./pass.js";
import {
  type DriftCounts,
  type DriftReads,
  driftCounts,
  foldAll,
  readDrift,
  viewWithDrift,
} from "./plan-drift.js";
import type { RecordChanges } from "./records.js";
import type {
  ApplyOptions,
  EngineDeps,
  Pass,
  PassResult,
  Reconciler,
  Refusal,
  ResourceOutcome,
  ResourceStatus,
} from "./types.js";

/**
 * The engine's two entry points: `createReconciler` (apply and the daemon: a pass that sends, saves and
 * reports) and `planPass` (plan: the same pass, dry). The pass is pass.ts, one resource's way through it
 * resource.ts, and what a resource sends is decided in decide.ts, for both.
 */

/** What `plan` shows: per resource, the first request an apply would send (or why none). */
export type PlanReport = {
  revision?: string;
  /** The state holds no record at all: every resource is planned as a first contact. */
  stateEmpty: boolean;
  problems: Problem[];
  resources: PlanView[];
  /** With reads on: how many live objects were read, differ from git, could not be read, were never applied. */
  reads?: DriftCounts;
};

/**
 * What an apply would send, per resource, without sending anything or saving the state: apply's pass
 * with the platform's answers made up (dry-run.ts). Throws ConfigError when the manifests folder cannot
 * be read, StateError when the state cannot.
 */
export async function planPass(
  deps: EngineDeps,
  options: {
    reassert?: boolean;
    allowCreate?: readonly string[];
    /** Replaces secret resolution (`plan --secrets skip`): the desired spec without reading any secret. */
    desired?: <K extends Kind>(manifest: ManifestOf<K>, record: ResourceRecord | undefined) => Specs[K];
    /** With `deps.read`: reads each managed object, and shows what differs from git as changes to send. */
    readDrift?: boolean;
    /** The plan's pass may send up to this many deletes past DRIFTLESS_MAX_DELETES (--allow-deletes). */
    allowDeletes?: number;
  } = {},
): Promise<PlanReport> {
  const pass = await startPass(deps);
  const stateEmpty = Object.keys(pass.state.resources).length === 0;
  // The records as the plan found them: what the alerts were last sent with (cascade.ts).
  const before = { ...pass.state.resources };
  const clock = deps.now ?? (() => new Date());
  const now = clock();
  // One read of each list serves the id check and the first contacts the pass then compares.
  const lists = listReads();
  const reads =
    options.readDrift && deps.read
      ? await readAndFoldDrift(deps, deps.read, pass, now, { checkIds: lists })
      : undefined;
  const { outcomes, records } = await dryRun(pass, {
    ...options,
    log: deps.logger.child({}, { level: "silent" }),
    now,
    clock,
    deps,
    desired: options.desired ?? readSecrets(deps.secrets, pass),
    lists,
  });
  const fixed = (kind: string) => {
    const observe = isKind(kind) ? observeOf(kind) : undefined;
    return observe === undefined || isNone(observe) ? undefined : observe.fixed;
  };
  const resources = [
    ...outcomes.map((outcome) => {
      const view = viewOfOutcome(outcome);
      return viewWithDrift(view, reads?.findings.get(resourceId(outcome.status)), fixed(view.kind));
    }),
    ...unmanagedViews(records),
  ];
  const liveAlerts = options.readDrift && deps.read ? teamAlerts(deps.read) : undefined;
  return {
    ...(pass.set.revision ? { revision: pass.set.revision } : {}),
    stateEmpty,
    problems: pass.set.problems,
    resources: await withCascades(resources, before, liveAlerts),
    ...(reads ? { reads: driftCounts(reads) } : {}),
  };
}

/**
 * Reads each managed object and lays what was changed outside git over its record, so that the pass
 * sends it back (plan-drift.ts); a read that fails leaves its resource as with reads off. Plan also
 * checks the ids of the resources never applied (`checkIds`); apply learns of a missing one from the
 * answer to its request.
 */
async function readAndFoldDrift(
  deps: EngineDeps,
  read: Read,
  pass: Pass,
  now: Date,
  { checkIds }: { checkIds?: ListReads } = {},
): Promise<DriftReads> {
  const { manifests } = pass.set;
  const context = { now, reassert: false, ref: refLookup(pass, true) };
  const reads = await readDrift(manifests, pass.state, read, {
    concurrency: deps.concurrency ?? 4,
    context,
    ...(checkIds ? { checkIds } : {}),
  });
  foldAll(manifests, pass.state, reads.findings);
  return reads;
}

/** What a reconciler keeps from pass to pass. */
type Memory = {
  /**
   * Records a pass changed but could not save: the store's copy is older than what was sent, so the
   * next pass starts from these instead (tile ids and owned entries must never be forgotten).
   */
  carried: Map<string, ResourceRecord | undefined>;
  /** Requests the platform refused for good, by resource: not sent again while unchanged. */
  refusals: Map<string, Refusal>;
};

/** The Reconciler of the apply command and the daemon. */
export function createReconciler(given: EngineDeps): Reconciler {
  const deps = { parseCache: createParseCache(), ...given };
  const passMetrics = deps.metrics ? new PassMetrics(deps.metrics) : undefined;
  const memory: Memory = { carried: new Map(), refusals: new Map() };
  return {
    async pass(options) {
      const result = await applyPass(deps, options, memory);
      passMetrics?.recordPass(result);
      passMetrics?.recordStatuses(result.statuses);
      return result;
    },
  };
}

/** One pass that sends: prepare and save the records, run the phases, remember, report. */
async function applyPass(deps: EngineDeps, options: ApplyOptions, memory: Memory): Promise<PassResult> {
  const pass = await startPass(deps);
  const log = (options.logger ?? deps.logger).child({
    ...(options.logger ? {} : { pass: options.trigger }),
    revision: pass.set.revision,
  });
  log.info(
    { manifests: pass.set.manifests.length, problems: pass.set.problems.length },
    "reconcile pass started",
  );
  const clock = deps.now ?? (() => new Date());
  const now = clock();
  if (deps.readDrift && deps.read) await readDriftBeforeApplying(deps, deps.read, pass, now, log);
  logProblems(log, pass.set.problems);
  const effects = applyEffects(deps, pass, options.signal);
  deps.suspension?.sync(pass.state);
  forgetRefusalsOfGone(memory.refusals, pass);
  restoreCarried(effects, memory.carried);
  const allow = new Set(options.allowCreate ?? []);
  const records = prepareRecords(pass, {
    allow,
    retentionMs: deps.unmanagedRetentionMs,
    now,
    log,
    prune: deps.prune ?? true,
  });
  for (const id of records.changed) effects.changed(id);
  await saveSuspension(deps, effects, log);
  const unsaved = await saveBeforeApplying(effects, log);

  const statuses = [...invalidStatuses(pass, deps), ...unmanagedStatuses(records, deps)];
  const desired = readSecrets(deps.secrets, pass);
  const run = {
    pass,
    effects,
    log,
    options,
    deps,
    now,
    clock,
    desired,
    memory: { refusals: memory.refusals, unsaved },
  };
  const phases = await runPhases(run);
  statuses.push(...phases.statuses);
  // Deletes after the creates and updates: nothing of this revision needs what they remove.
  const deletes = await runDeletes(run, records.deletions, deleteLimits(deps, options, now));
  statuses.push(...deletes.outcomes.map((outcome) => outcome.status));
  await effects.saved();
  const outcomes = [...phases.outcomes, ...deletes.outcomes];
  remember(memory, outcomes, effects, pass);
  const lifecycle = lifecycleOf(outcomes, records.orphaned);
  return { ...finishPass(pass, statuses, log, deps), lifecycle, deletesHeld: deletes.held };
}

/** The objects a pass created, deleted and orphaned, by kind. */
function lifecycleOf(outcomes: readonly ResourceOutcome[], orphaned: readonly string[]): LifecycleEvent[] {
  const events: LifecycleEvent[] = [];
  for (const { status, lifecycle } of outcomes)
    if (lifecycle) events.push({ kind: status.kind, action: lifecycle });
  for (const id of orphaned) events.push({ kind: parseResourceId(id).kind, action: "orphan" });
  return events;
}

/** Apply with reads on: what changed outside git is read first, and sent back by the pass. */
async function readDriftBeforeApplying(
  deps: EngineDeps,
  read: Read,
  pass: Pass,
  now: Date,
  log: Logger,
): Promise<void> {
  const { drifted, unread } = driftCounts(await readAndFoldDrift(deps, read, pass, now));
  if (drifted + unread > 0)
    log.info({ drifted, unread }, "live objects read: what changed outside git is sent back");
}

/**
 * Forgets the refusals of resources without a valid manifest in this pass (removed, renamed, invalid):
 * a daemon would otherwise keep them for its whole life, and a manifest brought back is a new word
 * from git, whose request is sent again.
 */
function forgetRefusalsOfGone(refusals: Map<string, Refusal>, pass: Pass): void {
  for (const id of refusals.keys()) if (!pass.valid.has(id)) refusals.delete(id);
}

/** Lays the records an earlier pass could not save over the loaded state. */
function restoreCarried(
  effects: ApplyEffects,
  carried: ReadonlyMap<string, ResourceRecord | undefined>,
): void {
  for (const [id, record] of carried) effects.record(id, record);
}

/** A suspend or resume asked for since the last save is saved before anything is sent. */
async function saveSuspension(deps: EngineDeps, effects: ApplyEffects, log: Logger): Promise<void> {
  if (!deps.suspension?.pending()) return;
  try {
    await effects.save();
  } catch (error) {
    log.warn({ err: error }, "suspend or resume not saved yet: the next save of the state records it");
  }
}

/**
 * Saves what the pass changed before applying anything (restored, re-armed, renamed, unmanaged). The
 * records it could not save, with the save's error: nothing more is sent for them until they are saved,
 * so that no request builds on a state the store does not hold.
 */
async function saveBeforeApplying(effects: ApplyEffects, log: Logger): Promise<Map<string, string>> {
  const unsaved = new Map<string, string>();
  if (effects.dirty.size === 0) return unsaved;
  try {
    await effects.save();
  } catch (error) {
    for (const id of effects.dirty.keys()) unsaved.set(id, messageOf(error));
    log.warn({ err: error, resources: unsaved.size }, "state still not saved");
  }
  return unsaved;
}

/** What the next pass must know: the refusals, and the records this pass could not save. */
function remember(
  memory: Memory,
  outcomes: readonly ResourceOutcome[],
  effects: ApplyEffects,
  pass: Pass,
): void {
  for (const outcome of outcomes) {
    const id = resourceId(outcome.status);
    if (outcome.refusal) memory.refusals.set(id, outcome.refusal);
    else if (outcome.answered) memory.refusals.delete(id);
  }
  memory.carried = new Map([...effects.dirty.keys()].map((id) => [id, pass.state.resources[id]]));
}

/** The most problems one log line carries; validate lists them all. */
const LOGGED_PROBLEMS = 50;

/**
 * The manifests' problems themselves, not only their count: where, which field, what. A problem's
 * message never holds a secret's value (the manifests hold references, and validation never echoes a
 * value it reads from a secret).
 */
function logProblems(log: Logger, problems: readonly Problem[]): void {
  if (problems.length === 0) return;
  const listed = problems.slice(0, LOGGED_PROBLEMS).map((problem) => ({
    at: `${problem.file}:${problem.line}:${problem.col}`,
    ...(problem.resource ? { resource: problem.resource } : {}),
    ...(problem.field ? { field: problem.field } : {}),
    message: problem.message,
  }));
  log.warn({ count: problems.length, problems: listed }, "manifests have problems");
}

function invalidStatus(id: string, problems: Problem[], record: ResourceRecord | undefined): ResourceStatus {
  const message = problems.map(formatProblem).join("; ");
  return resultOf(parseResourceId(id), "invalid", {
    id: objectIdOf(record),
    message,
    lastAppliedAt: record?.appliedAt,
  });
}

/** The statuses of manifests that are invalid (and have no valid twin). */
function invalidStatuses(pass: Pass, deps: EngineDeps): ResourceStatus[] {
  const statuses: ResourceStatus[] = [];
  for (const [id, problems] of pass.invalid) {
    if (pass.valid.has(id)) continue;
    const status = invalidStatus(id, problems, pass.state.resources[id]);
    statuses.push(status);
    deps.onResource?.({ status, cause: "invalid", sent: [] });
  }
  return statuses;
}

/** The records kept without a manifest: reported, nothing sent. */
function unmanagedStatuses(records: RecordChanges, deps: EngineDeps): ResourceStatus[] {
  for (const status of records.unmanaged) deps.onResource?.({ status, cause: "unmanaged", sent: [] });
  return records.unmanaged;
}

function finishPass(pass: Pass, statuses: ResourceStatus[], log: Logger, deps: EngineDeps): PassResult {
  const finishedAt = deps.now?.() ?? new Date();
  const manifestErrors = pass.set.problems.length;
  const result: PassResult = {
    ...(pass.set.revision ? { revision: pass.set.revision } : {}),
    startedAt: pass.startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    statuses,
    manifestErrors,
    ok: passOk(statuses, manifestErrors),
  };
  const counts: Record<string, number> = {};
  for (const s of statuses) counts[s.status] = (counts[s.status] ?? 0) + 1;
  log.info({ ok: result.ok, ...counts, manifestErrors }, "reconcile pass finished");
  return result;
}
