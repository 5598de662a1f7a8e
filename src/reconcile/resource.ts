import type { KeyPair } from "../credentials.js";
import { isApiError, isUnknownOutcomeError, messageOf } from "../errors.js";
import { createOf, kindOf } from "../kinds/index.js";
import { isNone } from "../kinds/kind.js";
import { manifestId } from "../manifests/identity.js";
import type { Manifest } from "../manifests/manifest.js";
import { notFoundHint } from "../manifests/not-found.js";
import type { SecretTarget } from "../manifests/specs/api-key.js";
import type { ResourcePlan, Write } from "../plan/types.js";
import { isPlainObject } from "../plan/values.js";
import { type PlanView, viewOf } from "../plan/view.js";
import type { Priority } from "../platform/budget.js";
import { ROUTES, type RouteName } from "../platform/routes.js";
import { type Cause, objectIdOf, resourceId, resultOf, type Trigger } from "../resources.js";
import type { ResourceRecord } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import { admit, decide, type Facts, unknownCreateMessage } from "./decide.js";
import type { Effects, Writing } from "./effects.js";
import type { ListReads } from "./list-reads.js";
import { type ReadFirst, readFirst } from "./read-first.js";
import { managedRecord } from "./records.js";
import type { Admitted, Step, Stop } from "./step.js";
import type { ResourceOutcome } from "./types.js";
import { isWriteRefusedError } from "./write-guard.js";

/**
 * The reconcile pass, inner part: one resource as a straight pipeline, the same for apply and plan. Ask
 * the decision (decide.ts) what to do, do it through the pass's effects (apply: the platform and the
 * store; plan: answers made up in memory), and ask again until it says stop. Each step returns the
 * resource's outcome when it cannot go on; what the pass must know (an object created, writing
 * stopped, a refusal) travels back in the outcome, never through shared flags.
 */

/** What one resource's run reads of its pass. */
export type ResourceRun = {
  facts: Facts;
  effects: Effects;
  log: Logger;
  trigger: Trigger;
  /** Aborted on shutdown: a failed request is then reported as interrupted, not as a failure. */
  signal?: AbortSignal;
  /** The lists the pass read for its first contacts (reads on), each read once per pass. */
  lists: ListReads;
};

/** One resource's way through the pipeline: what was sent, the last request id, and how it ends. */
class Job {
  readonly id: string;
  readonly sent: PlanView[] = [];
  requestId: string | undefined;
  first: Step | undefined;
  created = false;
  /** Its object was created by a POST of this pass. */
  madeObject = false;
  answered = false;
  failedRequests = 0;
  #log: Logger | undefined;

  constructor(
    readonly manifest: Manifest,
    readonly run: ResourceRun,
  ) {
    this.id = manifestId(manifest);
  }

  /** Made on first use: a child logger costs, and most resources of a pass log nothing (a plan's none). */
  get log(): Logger {
    this.#log ??= this.run.log.level === "silent" ? this.run.log : this.run.log.child({ resource: this.id });
    return this.#log;
  }

  get record(): ResourceRecord | undefined {
    return this.run.facts.state.resources[this.id];
  }

  /** Writes the record through the effects; every record written knows its API object (renames). */
  write(record: ResourceRecord | undefined): void {
    const serverId = record?.serverId;
    if (serverId !== undefined && serverId !== this.record?.serverId) this.created = true;
    this.run.effects.record(this.id, record && managedRecord(this.manifest, record));
  }

  /** The time the engine stamps now: the pass's clock. */
  now(): string {
    return this.run.facts.clock().toISOString();
  }

  finish(
    cause: Cause,
    message?: string,
    signals?: Pick<ResourceOutcome, "stopped" | "refusal">,
  ): ResourceOutcome {
    const { manifest } = this;
    // This pass's request, else the last write's: a Synced resource names the request that made it so.
    const requestId = this.requestId ?? this.record?.requestId;
    const organization = "organizationId" in manifest.spec ? manifest.spec.organizationId : undefined;
    const { record } = this;
    const lastAppliedAt = record?.appliedAt;
    // The record's address is stamped from the manifest every pass; a manifest without a record yet
    // may still name its object's id.
    const address = record?.address ?? kindOf(manifest.kind).address(manifest.spec, record);
    const id = objectIdOf({ address, serverId: record?.serverId });
    const status = resultOf(manifest, cause, { organization, id, message, requestId, lastAppliedAt });
    if (status.status !== "Synced")
      this.log.warn({ status: status.status, reason: message, requestId }, "resource not in sync");
    const outcome: ResourceOutcome = { status, cause, sent: this.sent };
    if (signals?.stopped !== undefined) outcome.stopped = signals.stopped;
    if (signals?.refusal) outcome.refusal = signals.refusal;
    if (this.first) outcome.first = this.first;
    if (this.created) outcome.created = true;
    if (this.madeObject) outcome.lifecycle = "create";
    if (this.answered) outcome.answered = true;
    if (this.failedRequests > 0) outcome.failedRequests = this.failedRequests;
    return outcome;
  }
}

/**
 * Decide, act, decide again while there is something to send. Never throws (a promise it returns never
 * rejects). Synchronous until there is something to send or a secret to read: most resources of a pass
 * are in sync, and a pass over 10,000 of them would otherwise suspend and resume each one.
 */
export function runResource(
  manifest: Manifest,
  run: ResourceRun,
): ResourceOutcome | Promise<ResourceOutcome> {
  const job = new Job(manifest, run);
  const admitted = admit(manifest, run.facts);
  const read = (a: Admitted | Stop) => (a.action === "plan" ? readFirst(a, readRun(job)) : a);
  const ready = admitted instanceof Promise ? admitted.then(read) : read(admitted);
  return ready instanceof Promise ? ready.then((a) => next(job, a, 1)) : next(job, ready, 1);
}

/** What the read before planning (read-first.ts) uses of a resource's run. */
function readRun(job: Job): ReadFirst {
  const { effects, facts, lists } = job.run;
  return {
    effects,
    state: facts.state,
    log: () => job.log,
    write: (record) => job.write(record),
    context: { now: facts.now, ref: facts.ref, reassert: false },
    lists,
  };
}

/** The decision of round `round`, acted on. */
function next(
  job: Job,
  resource: Admitted | Stop,
  round: number,
): ResourceOutcome | Promise<ResourceOutcome> {
  const step = resource.action === "plan" ? decide(resource, round, job.run.facts) : resource;
  job.first ??= step;
  if (step.action === "stop") {
    job.requestId ??= step.requestId;
    return job.finish(step.cause, step.message);
  }
  if (step.action === "adopt") return adopt(job, step.adopt);
  // Plan again against the record as it is now: a follow-up sees the first answer.
  return send(job, step, round).then((stopped) => stopped ?? next(job, resource, round + 1));
}

/** Records a server id the plan found (named by the manifest, or made by a lost create); nothing is sent. */
async function adopt(
  job: Job,
  adopted: Extract<Step, { action: "adopt" }>["adopt"],
): Promise<ResourceOutcome> {
  job.write(adopted.record(job.now()));
  try {
    await job.run.effects.save();
  } catch (error) {
    return job.finish("save-failed", `adopted, but the state could not be saved: ${messageOf(error)}`);
  }
  job.log.info({ serverId: adopted.id }, "resource adopted");
  return job.finish("adopted", job.first?.plan.reason);
}

/** Sends one decided request, records the answer and saves; the outcome when the resource stops here. */
async function send(
  job: Job,
  step: Extract<Step, { action: "create" | "update" }>,
  round: number,
): Promise<ResourceOutcome | undefined> {
  const { effects, facts, trigger } = job.run;
  const write = { manifest: job.manifest, stopped: facts.stopped };
  const notSent = await effects.mayWrite(write);
  if (notSent) return job.finish(notSent.cause, notSent.message, notSent);

  // A create is not idempotent: its intent is saved first, so a crash after the POST is seen; a
  // credential it makes is written before the POST, so that no key is made whose secret nobody has.
  const route = ROUTES[step.write.request.route];
  const creates = step.action === "create";
  let sent: Write = step.write;
  if (creates) {
    const credential = step.plan.credential ? await makeCredential(job, step.plan.credential) : undefined;
    if (credential && "outcome" in credential) return credential.outcome;
    const refused = await saveIntent(job, step.allowed, credential?.pair.keyId);
    if (refused) return refused;
    if (credential) {
      const unwritten = await writeCredential(job, credential);
      if (unwritten) return unwritten;
      sent = credential.write;
    }
  }

  // Send exactly the decision; changes from git go first, re-assertions last.
  const view = viewOf(step.plan, step.input.record?.applied);
  const change = trigger === "retry" ? "retry" : "change";
  const priority = step.plan.changes.length > 0 || round > 1 ? change : "poll";
  const started = performance.now();
  let answered: Answered;
  try {
    answered = await sendWrite(effects, sent, { ...write, priority }, () => job.now());
  } catch (error) {
    return failed(job, view, creates, error, step.fingerprint);
  }
  const { record, requestId, timing } = answered;
  job.answered = true;
  if (creates) job.madeObject = true;
  job.requestId = requestId;
  job.sent.push(view);

  // Record the answer and save at once, so a crash loses nothing that was sent. A save that fails
  // leaves the record in memory for the pass's next save; on disk a create keeps its intent, so a
  // crash now shows Unknown rather than creating the object twice.
  job.write(requestId ? { ...record, requestId } : record);
  try {
    await effects.save();
  } catch (error) {
    return job.finish("save-failed", `sent, but the state could not be saved: ${messageOf(error)}`);
  }
  // The request's own time apart from its wait for the rate budget: a 10 s wait is not a slow API.
  const totalMs = Math.round(performance.now() - started);
  const { method, template } = route;
  // A re-assertion changes nothing driftless knows of: it names what it sent again instead. A list
  // field changed by several entries (two endpoints added) is one field.
  const changed = [...new Set(step.plan.changes.map((c) => c.path))];
  const fields = changed.length > 0 ? changed : pathsOf(step.write.request.body);
  const reasserted = changed.length === 0 ? { reasserted: true } : {};
  job.log.info(
    {
      method,
      route: template,
      fields,
      ...reasserted,
      requestId: job.requestId,
      ...(timing ?? { budgetWaitMs: 0, requestMs: 0 }),
      totalMs,
    },
    "resource applied",
  );
  return undefined;
}

/** A write's answer, folded into the record by the kind that planned it. */
type Answered = {
  record: ResourceRecord;
  requestId?: string;
  timing?: Awaited<ReturnType<Effects["send"]>>["timing"];
};

/**
 * Sends `write` and folds its answer into the record: generic in the route, so the answer reaches the
 * kind's fold typed by the route's schema.
 */
async function sendWrite<R extends RouteName>(
  effects: Effects,
  write: Write<R>,
  options: Writing & { priority: Priority },
  now: () => string,
): Promise<Answered> {
  const answer = await effects.send(write.request, options);
  const record = write.record(answer.result, now());
  return {
    record,
    ...(answer.requestId ? { requestId: answer.requestId } : {}),
    ...(answer.timing ? { timing: answer.timing } : {}),
  };
}

/** Saves the intent of a create before its POST; the outcome to return when it cannot be saved. */
async function saveIntent(job: Job, allowed: boolean, keyId?: string): Promise<ResourceOutcome | undefined> {
  const before = job.record;
  const now = job.now();
  job.write({
    ...(before ?? { kind: job.manifest.kind, name: job.manifest.name }),
    // The id of a key driftless makes is not secret: it tells this key's pair from another's.
    intent: { action: "create", startedAt: now, ...(keyId ? { keyId } : {}) },
    // An allowance buys one attempt: recorded with the intent, so a restart cannot spend it again.
    ...(allowed ? { allowanceUsedAt: now } : {}),
  });
  try {
    await job.run.effects.save();
    return undefined;
  } catch (error) {
    // Nothing was sent: the intent must not reach the state with a later save of another resource.
    job.write(before);
    return job.finish("save-failed", `not sent: the create intent could not be saved: ${messageOf(error)}`);
  }
}

/** A credential made for a create: the pair, whether it still has to be written, and the write that sends its hashes. */
type Made = { pair: KeyPair; target: SecretTarget; unwritten: boolean; write: Write };

/**
 * The credential of a create (an API key's id and secret): the pair its target already holds for this
 * key's own earlier attempt, or a new one. The outcome to return when the target holds another's.
 */
async function makeCredential(
  job: Job,
  credential: NonNullable<ResourcePlan["credential"]>,
): Promise<Made | { outcome: ResourceOutcome }> {
  const { effects } = job.run;
  const pending = job.record?.intent?.keyId;
  let made: Awaited<ReturnType<NonNullable<Effects["credential"]>>>;
  try {
    if (!effects.credential) throw new Error("no place to write a key's secret");
    made = await effects.credential(credential.target, typeof pending === "string" ? pending : undefined);
  } catch (error) {
    return {
      outcome: job.finish(
        "save-failed",
        `not sent: the key's secret target could not be read: ${messageOf(error)}`,
      ),
    };
  }
  if ("refused" in made) return { outcome: job.finish("refused", made.refused) };
  return { ...made, target: credential.target, write: credential.write(made.pair) };
}

/** Writes a new credential to its target, after the intent that names it; the outcome when it cannot be. */
async function writeCredential(job: Job, made: Made): Promise<ResourceOutcome | undefined> {
  if (!made.unwritten) return undefined;
  try {
    await job.run.effects.writeCredential?.(made.target, made.pair);
    return undefined;
  } catch (error) {
    const unsaved = await voidIntent(job);
    return job.finish(
      "save-failed",
      `not sent: the key's secret could not be written: ${messageOf(error)}${unsaved}`,
    );
  }
}

/**
 * A create that did not happen (the platform answered, or the request never left): its intent is void.
 * Returns what to add to the message when the state could not be saved.
 */
async function voidIntent(job: Job): Promise<string> {
  const { intent: _void, ...rest } = job.record ?? { kind: job.manifest.kind, name: job.manifest.name };
  job.write(rest);
  try {
    await job.run.effects.save();
    return "";
  } catch (saveError) {
    // Safe, not silent: on disk the intent stays, so a restart reports Unknown rather than creating twice.
    job.log.warn({ err: saveError }, "create intent could not be cleared: the state save failed");
    return `; the state could not be saved (${messageOf(saveError)}), so a restart may report this create as Unknown`;
  }
}

/** The outcome of a request that failed: its cause, from what the failure says of the request. */
async function failed(
  job: Job,
  view: PlanView,
  creates: boolean,
  error: unknown,
  fingerprint: string,
): Promise<ResourceOutcome> {
  const { manifest, run } = job;
  if (isUnknownOutcomeError(error)) {
    job.sent.push(view);
    const startedAt = job.record?.intent?.startedAt ?? "now";
    const create = createOf(manifest.kind);
    const how = isNone(create) ? "" : ` ${unknownCreateMessage(create, resourceId(manifest), startedAt)}`;
    return job.finish("create-unanswered", `${error.message}.${how}`);
  }
  const unsaved = creates ? await voidIntent(job) : "";
  if (isWriteRefusedError(error)) return job.finish(error.verdict, error.message + unsaved, error);
  if (run.signal?.aborted && !isApiError(error)) {
    return job.finish(
      "interrupted",
      "not completed: the pass was stopped (shutdown or lost leadership); the next pass sends it again",
    );
  }
  if (!isApiError(error)) return job.finish("platform-error", messageOf(error) + unsaved);
  // An error answer: the request was sent (an ApiError without a status never left, or got no answer).
  if (error.context.status !== undefined) job.failedRequests++;
  job.requestId = error.context.requestId ?? job.requestId;
  if (error.context.retryable) return job.finish("platform-error", error.message + unsaved);
  const message = error.message + notFoundHint(manifest.kind, error);
  const refusal = { fingerprint, message, ...(job.requestId ? { requestId: job.requestId } : {}) };
  return job.finish("refused-by-platform", message + unsaved, { refusal });
}

/** The dotted paths of a body's leaves (a list is one leaf): what a request sent, never its values. */
function pathsOf(body: unknown, prefix = ""): string[] {
  if (!isPlainObject(body)) return prefix ? [prefix] : [];
  return Object.entries(body).flatMap(([key, value]) =>
    value === undefined ? [] : pathsOf(value, prefix ? `${prefix}.${key}` : key),
  );
}
