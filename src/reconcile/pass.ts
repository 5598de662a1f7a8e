import { createOf, phaseOf, readyObject } from "../kinds/index.js";
import { isNone, PHASES, type Phase, type PlanContext } from "../kinds/kind.js";
import { manifestId } from "../manifests/identity.js";
import { loadRevision, type ManifestSet } from "../manifests/load.js";
import type { Manifest } from "../manifests/manifest.js";
import type { Problem } from "../manifests/problem.js";
import type { SecretSources } from "../manifests/secrets.js";
import { mapLimited } from "../map-limited.js";
import { type ResourceStatus, resourceId } from "../resources.js";
import type { State } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import type { Facts } from "./decide.js";
import { resolveDesired } from "./desired.js";
import type { Effects } from "./effects.js";
import { type ListReads, listReads } from "./list-reads.js";
import { DEFAULT_UNMANAGED_RETENTION_MS, followManifests, type RecordChanges } from "./records.js";
import { runResource } from "./resource.js";
import type { EngineDeps, Pass, PassOptions, Refusal, ResourceOutcome } from "./types.js";

/**
 * The reconcile pass, outer part, as apply and plan share it: the pass's manifests and state, the
 * records prepared before anything is planned (allowances re-armed, renames followed, removals kept),
 * then each phase's resources through the inner pipeline (resource.ts) with the facts their decisions
 * read. What apply adds (saves, memory across passes, status, metrics) is engine.ts's; what plan adds
 * (its views, answers made up in memory) is dry-run.ts's.
 */

/** A pass over manifests and a state already read (plan --base reads both from git). */
export function passOf(set: ManifestSet, state: State, startedAt: Date, secretKey = state.salt): Pass {
  const invalid = new Map<string, Problem[]>();
  for (const problem of set.problems) {
    if (!problem.resource) continue;
    invalid.set(problem.resource, [...(invalid.get(problem.resource) ?? []), problem]);
  }
  const valid = new Set(set.manifests.map(manifestId));
  return { set, state, invalid, valid, startedAt, secretKey };
}

/** Reads the manifests and the state. Throws ConfigError (the folder), StateError (the state). */
export async function startPass(deps: EngineDeps): Promise<Pass> {
  // The state first: of two manifests addressing one object, the one it has a record of keeps it.
  const state = await deps.store.load();
  const existing = (m: Manifest) => state.resources[manifestId(m)] !== undefined;
  const set = await loadRevision(deps.manifests, { cache: deps.parseCache, existing });
  return passOf(set, state, deps.now?.() ?? new Date(), deps.secretKey?.() ?? state.salt);
}

/**
 * Forgets that an allowance to create again was spent, for the resources no longer allowed: the
 * operator took the allowance back, so giving it again allows one more attempt. The ids it changed.
 */
function rearmAllowances(state: State, allow: ReadonlySet<string>): string[] {
  const rearmed: string[] = [];
  for (const id in state.resources) {
    const record = state.resources[id];
    if (record?.allowanceUsedAt === undefined || allow.has(id)) continue;
    const { allowanceUsedAt: _rearmed, ...rest } = record;
    state.resources[id] = rest;
    rearmed.push(id);
  }
  return rearmed;
}

/**
 * What a pass changes before anything is planned, in memory: allowances re-armed, renames followed,
 * records of deleted manifests kept or dropped (records.ts). `changed` lists the records to save.
 */
export function prepareRecords(
  pass: Pass,
  options: { allow: ReadonlySet<string>; retentionMs?: number; now: Date; log: Logger; prune?: boolean },
): RecordChanges {
  const rearmed = rearmAllowances(pass.state, options.allow);
  const retentionMs = options.retentionMs ?? DEFAULT_UNMANAGED_RETENTION_MS;
  const { now, log } = options;
  const followed = followManifests(pass, { retentionMs, now, log, prune: options.prune ?? true });
  return { ...followed, changed: [...rearmed, ...followed.changed] };
}

/**
 * How a resource sees another that it names (a pipe its endpoints, an alert its dashboard), from the
 * state as it is now: ready once its object has an id (the one its manifest adopts, or the one its
 * create was answered with), with the ids of its parts (a dashboard's tiles). `afterCreates`: the
 * objects this pass created are used as they are (once the phase that created them is done); before,
 * one its kind finds not usable yet (an endpoint not Ready) is waited for.
 */
export function refLookup(pass: Pass, afterCreates: boolean): PlanContext["ref"] {
  let manifests: Map<string, Manifest> | undefined;
  return (kind, name) => {
    const id = resourceId({ kind, name });
    if (pass.invalid.has(id))
      return { state: "waiting", reason: `waits for ${id}, whose manifest is invalid` };
    if (!pass.valid.has(id)) return { state: "missing", reason: `names ${id}, which has no manifest` };
    manifests ??= new Map(pass.set.manifests.map((m) => [manifestId(m), m]));
    const named = manifests.get(id);
    const record = pass.state.resources[id];
    const ready = named && readyObject(named, record);
    if (!ready) {
      const why = record?.intent ? "its create has an unknown outcome" : "it is not created yet";
      return { state: "waiting", reason: `waits for ${id}: ${why}` };
    }
    // Without reads, an object's state is known only from its create's answer: a resource that names
    // it waits out the pass that created it and uses it from the next one.
    const create = createOf(kind);
    const createdNow =
      !afterCreates &&
      record?.appliedAt !== undefined &&
      Date.parse(record.appliedAt) >= pass.startedAt.getTime();
    const unusable = createdNow && record && !isNone(create) ? create.unusable(record) : undefined;
    if (unusable)
      return {
        state: "waiting",
        reason: `waits for ${id}: ${unusable}; used once the pass's other resources are done`,
      };
    return ready;
  };
}

/** A pass's resources as the outer part runs them: its options, effects, memory and what it reads. */
export type PassRun = {
  pass: Pass;
  effects: Effects;
  log: Logger;
  options: PassOptions;
  deps: Pick<EngineDeps, "managementKeyId" | "credentialVersion" | "concurrency" | "onResource">;
  /** When the pass started: "now" for the lock-out guard. */
  now: Date;
  /** The pass's clock, for the times the engine stamps. */
  clock: () => Date;
  /** Requests refused for good in earlier passes, and records whose last answer is not saved yet. */
  memory: { refusals: ReadonlyMap<string, Refusal>; unsaved: ReadonlyMap<string, string> };
  /** The desired spec of a manifest: its secrets read (readSecrets), or stood in for (plan's options). */
  desired: Facts["desired"];
  /** The lists read for first contacts, if reads before the pass began (plan's id check): new by default. */
  lists?: ListReads;
};

/** The desired spec with every secret read and hashed with the pass's key (apply, plan). */
export function readSecrets(secrets: SecretSources, pass: Pass): Facts["desired"] {
  return (manifest) => resolveDesired(manifest, secrets, pass.secretKey);
}

/** What the phases came to: every manifest's status in pass order, and the outcomes of those that ran. */
export type PhasesResult = { statuses: ResourceStatus[]; outcomes: ResourceOutcome[] };

/** Each phase's resources, a few at once; a phase starts once the one before it is done. */
export async function runPhases(run: PassRun): Promise<PhasesResult> {
  const seen = passSignals(run.log);
  const facts = factsOf(run, seen);
  const lists = run.lists ?? listReads();
  const result: PhasesResult = { statuses: [], outcomes: [] };
  for (const phase of PHASES) {
    const ran = await runPhase(run, phase, { facts, lists }, seen);
    for (const item of ran) {
      if ("held" in item) result.statuses.push(item.held);
      else {
        result.statuses.push(item.status);
        result.outcomes.push(item);
      }
    }
  }
  return result;
}

/** What the pass learns from its resources' outcomes, which later decisions read. */
type PassSignals = {
  stopped: string | undefined;
  /** A resource of the pass got a server id: resources waiting for it are run again. */
  created: boolean;
  note(outcome: ResourceOutcome): void;
};

function passSignals(log: Logger): PassSignals {
  const signals: PassSignals = {
    stopped: undefined,
    created: false,
    note(outcome) {
      if (outcome.created) signals.created = true;
      if (outcome.stopped === undefined || signals.stopped !== undefined) return;
      signals.stopped = outcome.stopped;
      log.error({ reason: outcome.stopped }, "this process may no longer write: the pass sends nothing more");
    },
  };
  return signals;
}

/** The facts every decision of the pass reads (decide.ts). */
function factsOf(run: PassRun, seen: PassSignals): Facts {
  const { pass, options, deps, memory } = run;
  return {
    state: pass.state,
    allow: new Set(options.allowCreate ?? []),
    reassert: options.reassert ?? false,
    ...(options.heal?.length ? { heal: new Set(options.heal) } : {}),
    now: run.now,
    clock: run.clock,
    ref: refLookup(pass, false),
    keyOf: keyIdsOf(deps.managementKeyId),
    refusals: memory.refusals,
    unsaved: memory.unsaved,
    stopped: () => seen.stopped,
    credentials: credentialsOf(deps.credentialVersion),
    desired: run.desired,
  };
}

/**
 * Each organization's key id, read once per pass (key files are read at each use: per resource,
 * 10,000 resources would read them 10,000 times), or what reading it threw.
 */
function keyIdsOf(managementKeyId: EngineDeps["managementKeyId"]): Facts["keyOf"] {
  const keys = new Map<string, { id: string | undefined } | { error: unknown }>();
  return (organizationId) => {
    let key = keys.get(organizationId);
    if (key) return key;
    try {
      key = { id: managementKeyId?.(organizationId) };
    } catch (error) {
      key = { error };
    }
    keys.set(organizationId, key);
    return key;
  };
}

/** The fingerprint of the credentials a request goes with ("" when unknown: a missing key fails elsewhere). */
function credentialsOf(credentialVersion: EngineDeps["credentialVersion"]): Facts["credentials"] {
  return (request) => {
    const organizationId = "organizationId" in request.params ? request.params.organizationId : undefined;
    try {
      return credentialVersion?.(organizationId) ?? "";
    } catch {
      return "";
    }
  };
}

/** A resource a retry pass left alone (its backoff is not due yet): its last status, reported again. */
type Held = { held: ResourceStatus };

/**
 * The resources of one phase, a few at once. A dependent left waiting for an endpoint that this pass
 * created is run once more when the phase is done, so that one apply converges where it can.
 */
async function runPhase(
  run: PassRun,
  phase: Phase,
  { facts, lists }: { facts: Facts; lists: ListReads },
  seen: PassSignals,
): Promise<(ResourceOutcome | Held)[]> {
  const { options, deps } = run;
  const manifests = run.pass.set.manifests.filter((m) => phaseOf(m.kind) === phase);
  const inner = {
    facts,
    lists,
    effects: run.effects,
    log: run.log,
    trigger: options.trigger,
    signal: options.signal,
  };
  const waited = new Set<Manifest>();
  const report = (m: Manifest, outcome: ResourceOutcome): ResourceOutcome => {
    seen.note(outcome);
    if (outcome.cause === "waiting" && seen.created) waited.add(m);
    else deps.onResource?.(outcome);
    return outcome;
  };
  const ran = await mapLimited(
    manifests,
    deps.concurrency ?? 4,
    (m): ResourceOutcome | Held | Promise<ResourceOutcome> => {
      const held = options.hold?.(manifestId(m));
      if (held) return { held };
      const outcome = runResource(m, inner);
      return outcome instanceof Promise ? outcome.then((done) => report(m, done)) : report(m, outcome);
    },
  );
  if (waited.size === 0) return ran;
  // The objects created in this pass are used from here on, as a next pass would use them.
  const afterCreates = { ...inner, facts: { ...facts, ref: refLookup(run.pass, true) } };
  for (const [index, m] of manifests.entries()) {
    const first = ran[index];
    if (!waited.has(m) || !first || "held" in first) continue;
    const again = await runResource(m, afterCreates);
    seen.note(again);
    const failedRequests = (first.failedRequests ?? 0) + (again.failedRequests ?? 0);
    const merged = {
      ...again,
      sent: [...first.sent, ...again.sent],
      ...(failedRequests > 0 ? { failedRequests } : {}),
    };
    ran[index] = merged;
    deps.onResource?.(merged);
  }
  return ran;
}
