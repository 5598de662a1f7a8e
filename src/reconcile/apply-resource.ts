import { createHash } from "node:crypto";
import { isApiError, isUnknownOutcomeError, messageOf } from "../errors.js";
import { manifestId } from "../manifests/identity.js";
import type { Manifest } from "../manifests/manifest.js";
import { planResource, recordResult } from "../plan/planners.js";
import { unknownCreateMessage } from "../plan/reverse-private-endpoint.js";
import type { PlanContext, PlanInput, PlannedRequest, ResourcePlan } from "../plan/types.js";
import { stored } from "../plan/values.js";
import { type PlanView, viewOf } from "../plan/view.js";
import { ROUTES } from "../platform/routes.js";
import type { Failure, ResourceStatus, ResourceStatusName } from "../resources.js";
import type { ResourceRecord } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import { resolveDesired } from "./desired.js";
import { managedRecord } from "./records.js";
import type { Sent } from "./send.js";
import type { ApplyOptions, EngineDeps, Pass, ResourceOutcome } from "./types.js";
import {
  ensureMayWrite,
  isWriteRefusedError,
  refusalOf,
  suspendedBecause,
  type WriteContext,
  writeSignal,
} from "./write-guard.js";

export { suspendedBecause } from "./write-guard.js";

/**
 * The reconcile pass, inner part: one resource as a straight pipeline. Resolve its secrets, plan, send,
 * record the answer, save, and plan again until nothing is left (a first contact may take two requests).
 * Each step returns early with the resource's status when it cannot go on.
 */

/**
 * Requests one resource may send in a pass: a first contact with a three-way list takes two, and a
 * changed table mapping one more (removed, then added again); more means the plan does not converge.
 */
const MAX_ROUNDS = 3;

/**
 * Requests the platform refused for good (4xx other than 408/409/425/429), by resource: the fingerprint
 * of what was sent (request and credentials) and what the platform said. Kept across passes.
 */
export type TerminalFailures = Map<string, { fingerprint: string; message: string; requestId?: string }>;

export type ResourceRun = {
  terminal: TerminalFailures;
  deps: EngineDeps;
  pass: Pass;
  base: Omit<PlanContext, "reassert" | "allowCreate" | "managementKeyId">;
  allow: Set<string>;
  options: ApplyOptions;
  save: () => Promise<void>;
  log: Logger;
};

const STATUS_OF: Record<ResourcePlan["outcome"], ResourceStatusName> = {
  none: "Synced",
  adopt: "Synced",
  send: "Pending",
  wait: "Pending",
  refuse: "Failed",
  unknown: "Unknown",
};

/** The fingerprint of the credentials `request` goes with ("" when unknown: a missing key fails elsewhere). */
function credentialsOf(deps: EngineDeps, request: PlannedRequest): string {
  const organizationId = "organizationId" in request.params ? request.params.organizationId : undefined;
  try {
    return deps.credentialVersion?.(organizationId) ?? "";
  } catch {
    return "";
  }
}

/** What a request depends on: its route, parameters and body (secrets as hashes) and the credentials. */
function fingerprintOf(request: PlannedRequest, credentials: string): string {
  const sent = JSON.stringify([request.route, request.params, stored(request.body), credentials]);
  return createHash("sha256").update(sent).digest("hex");
}

/** Marks a record changed in memory, so that the next successful save counts it as saved. */
export function markChanged(pass: Pass, id: string): void {
  pass.dirty.set(id, (pass.dirty.get(id) ?? 0) + 1);
}

/** The organization a manifest acts in, for the kinds addressed under one. */
export function organizationOf(manifest: Manifest): string | undefined {
  return "organizationId" in manifest.spec ? manifest.spec.organizationId : undefined;
}

/**
 * The lock-out guard's key id for `manifest`: the key of its organization, as `pass` read it. Throws
 * ConfigError when that organization has no key.
 */
export function keyContext(
  deps: EngineDeps,
  manifest: Manifest,
  pass: Pass,
): Pick<PlanContext, "managementKeyId"> {
  const organizationId = organizationOf(manifest);
  if (organizationId === undefined || !deps.managementKeyId) return {};
  let key = pass.keyIds.get(organizationId);
  if (!key) {
    try {
      key = { id: deps.managementKeyId(organizationId) };
    } catch (error) {
      key = { error };
    }
    pass.keyIds.set(organizationId, key);
  }
  if ("error" in key) throw key.error;
  return key.id ? { managementKeyId: key.id } : {};
}

/** Whether `record` is of a reverse private endpoint whose server id was recorded in `pass`. */
function isNewEndpoint(record: ResourceRecord | undefined, pass: Pass): boolean {
  return (
    record?.kind === "ReversePrivateEndpoint" &&
    record.serverId !== undefined &&
    record.appliedAt !== undefined &&
    Date.parse(record.appliedAt) >= pass.startedAt.getTime()
  );
}

/** One resource's way through the pipeline: what was sent, the last request id, and how it ends. */
class Job {
  readonly id: string;
  readonly sent: PlanView[] = [];
  requestId: string | undefined;
  #log: Logger | undefined;

  constructor(
    readonly manifest: Manifest,
    readonly run: ResourceRun,
  ) {
    this.id = manifestId(manifest);
  }

  /** Made on first use: a child logger costs, and most resources of a pass log nothing. */
  get log(): Logger {
    this.#log ??= this.run.log.child({ resource: this.id });
    return this.#log;
  }

  get record(): ResourceRecord | undefined {
    return this.run.pass.state.resources[this.id];
  }

  set record(record: ResourceRecord | undefined) {
    const { pass } = this.run;
    // Every record written knows its API object, so a rename before the next pass still finds it.
    if (record) pass.state.resources[this.id] = managedRecord(this.manifest, record);
    else delete pass.state.resources[this.id];
    markChanged(pass, this.id);
    // Noted where records are written, rather than found by walking every record per Pending one.
    if (isNewEndpoint(record, pass)) pass.createdEndpoint = true;
  }

  finish(status: ResourceStatusName, message?: string, failure?: Failure): ResourceOutcome {
    const { manifest, requestId } = this;
    const appliedAt = this.record?.appliedAt;
    const organization = organizationOf(manifest);
    if (status !== "Synced") this.log.warn({ status, reason: message, requestId }, "resource not in sync");
    // Made field by field: one object per resource per pass, no spread temporaries.
    const outcome: ResourceStatus = { kind: manifest.kind, name: manifest.name, status };
    if (organization) outcome.organization = organization;
    if (message) outcome.message = message;
    if (requestId) outcome.requestId = requestId;
    if (appliedAt) outcome.lastAppliedAt = appliedAt;
    if (failure) outcome.failure = failure;
    return { status: outcome, sent: this.sent };
  }
}

/**
 * Plan, send, record, save; again while the plan still has something to send. Never throws (a promise
 * it returns never rejects). Synchronous until there is something to send or a secret to read: most
 * resources of a pass are in sync, and a pass over 10,000 of them would otherwise suspend and resume
 * each one.
 */
export function applyResource(
  manifest: Manifest,
  run: ResourceRun,
): ResourceOutcome | Promise<ResourceOutcome> {
  const job = new Job(manifest, run);
  const suspended = suspendedBecause(manifest, run.pass.state.suspended);
  if (suspended) return job.finish("Suspended", suspended);
  const unsaved = run.pass.undurable.get(job.id);
  if (unsaved !== undefined) {
    return job.finish(
      "Pending",
      `not sent: the answer of its last request is not saved yet (${unsaved}); nothing more is sent for it until the state can be saved`,
    );
  }
  let key: Pick<PlanContext, "managementKeyId">;
  let spec: PlanInput["spec"] | Promise<PlanInput["spec"]>;
  try {
    // Step 0: the key of the resource's organization (none: Failed, and nothing is sent).
    key = keyContext(run.deps, manifest, run.pass);
    // Step 1: resolve the secrets (a rotated one is sent again because its hash changed).
    spec = resolveDesired(manifest, run.deps.secrets, run.pass.secretKey);
  } catch (error) {
    return job.finish("Failed", messageOf(error));
  }
  if (!(spec instanceof Promise)) return converge(job, spec, key, 1);
  return spec.then(
    (resolved) => converge(job, resolved, key, 1),
    (error: unknown) => job.finish("Failed", messageOf(error)),
  );
}

/** Steps 2 to 5 from round `round`: plan against the record as it is now (a follow-up sees the first answer). */
function converge(
  job: Job,
  spec: PlanInput["spec"],
  key: Pick<PlanContext, "managementKeyId">,
  round: number,
): ResourceOutcome | Promise<ResourceOutcome> {
  const { run } = job;
  const input: PlanInput = {
    kind: job.manifest.kind,
    name: job.manifest.name,
    spec,
    record: job.record,
    context: {
      ...run.base,
      ...key,
      reassert: (run.options.reassert ?? false) && round === 1,
      allowCreate: run.allow.has(job.id) && !job.record?.allowanceUsedAt && round === 1,
    },
  };
  const plan = planResource(input);
  if (plan.outcome === "send" && round > MAX_ROUNDS) {
    return job.finish(
      "Failed",
      `still had changes to send after ${MAX_ROUNDS} requests; the platform's answers do not match the manifest`,
    );
  }
  if (plan.outcome === "adopt") return adopt(job, input, plan);
  if (plan.outcome !== "send" || !plan.request) {
    const quiet = plan.outcome === "none" && (plan.reason.startsWith("in sync") || round > 1);
    return job.finish(STATUS_OF[plan.outcome], quiet ? undefined : plan.reason + spentAllowance(job));
  }
  return sendAndRecord(job, input, plan, plan.request, round).then(
    (stopped) => stopped ?? converge(job, spec, key, round + 1),
  );
}

/** What to tell an operator whose allowance to create again was already spent. */
function spentAllowance(job: Job): string {
  const usedAt = job.record?.allowanceUsedAt;
  if (!usedAt || !job.run.allow.has(job.id) || !job.record?.intent) return "";
  return `. The allowance to create it again was already used by the attempt at ${usedAt}: let one pass run without it, then give it again to allow one more attempt`;
}

/** Records the server id the manifest names; nothing is sent. */
async function adopt(job: Job, input: PlanInput, plan: ResourcePlan): Promise<ResourceOutcome> {
  job.record = recordResult(input, plan, undefined, new Date().toISOString());
  try {
    await job.run.save();
  } catch (error) {
    return job.finish("Failed", `adopted, but the state could not be saved: ${messageOf(error)}`);
  }
  job.log.info({ serverId: plan.adoptId }, "resource adopted");
  return job.finish("Synced", plan.reason);
}

/** Steps 3 to 5 for one planned request; returns the resource's outcome when it must stop here. */
async function sendAndRecord(
  job: Job,
  input: PlanInput,
  plan: ResourcePlan,
  request: PlannedRequest,
  round: number,
): Promise<ResourceOutcome | undefined> {
  const { run } = job;
  const { deps, options } = run;
  if (options.signal?.aborted) return job.finish("Pending", "not sent: the pass was stopped (shutdown)");
  if (!deps.send) return job.finish("Pending", "not sent: no API client");
  const fingerprint = fingerprintOf(request, credentialsOf(deps, request));
  const stop = refusedBefore(job, fingerprint) ?? (await mayWrite(job));
  if (stop) return stop;

  // Step 3: a create is not idempotent: its intent is saved first, so a crash after the POST is seen.
  const route = ROUTES[request.route];
  const creates = route.method === "POST";
  if (creates) {
    const refused = await saveIntent(job, input.context.allowCreate);
    if (refused) return refused;
  }

  // Step 4: send exactly the plan; changes from git go first, re-assertions last.
  const view = viewOf(plan, input.record?.applied);
  const change = options.trigger === "retry" ? "retry" : "change";
  const priority = plan.changes.length > 0 || round > 1 ? change : "poll";
  const started = performance.now();
  const context = writeContext(job);
  const writing = writeSignal(context, options.signal);
  let answer: Sent;
  try {
    // Asked again right before each attempt: retries too may wait long enough to lose the right to write.
    const guard = () => ensureMayWrite(context);
    answer = await deps.send(request, { priority, signal: writing.signal, guard });
  } catch (error) {
    return failed(job, view, creates, refusalOf(error, writing.signal) ?? error, fingerprint);
  } finally {
    writing.dispose();
  }
  job.run.terminal.delete(job.id);
  job.requestId = answer.requestId;
  job.sent.push(view);

  // Step 5: record the answer and save at once, so a crash loses nothing that was sent. A save that
  // fails leaves the record in memory for the pass's next save; on disk a create keeps its intent, so
  // a crash now shows Unknown rather than creating the endpoint twice.
  job.record = recordResult(input, plan, answer.result, new Date().toISOString());
  try {
    await run.save();
  } catch (error) {
    return job.finish("Failed", `sent, but the state could not be saved: ${messageOf(error)}`);
  }
  const durationMs = Math.round(performance.now() - started);
  const fields = plan.changes.map((c) => c.path);
  job.log.info(
    { method: route.method, route: route.template, fields, requestId: job.requestId, durationMs },
    "resource applied",
  );
  return undefined;
}

/** The outcome to return when the platform refused this very request for good in an earlier pass. */
function refusedBefore(job: Job, fingerprint: string): ResourceOutcome | undefined {
  const refused = job.run.options.reassert ? undefined : job.run.terminal.get(job.id);
  if (refused?.fingerprint !== fingerprint) return undefined;
  job.requestId = refused.requestId;
  return job.finish(
    "Failed",
    `${refused.message}; not sent again: the platform refused it, and would again until the manifest, a secret or the credentials change (or the next re-assertion)`,
    "terminal",
  );
}

/**
 * Asks, right before a write, whether it may still be sent (write-guard.ts): not while suspended, and
 * only while this process holds its lock and leadership. The outcome to return when it may not.
 */
async function mayWrite(job: Job): Promise<ResourceOutcome | undefined> {
  try {
    await ensureMayWrite(writeContext(job));
    return undefined;
  } catch (error) {
    if (!isWriteRefusedError(error)) throw error;
    return job.finish(error.status, error.message);
  }
}

function writeContext(job: Job): WriteContext {
  return { deps: job.run.deps, pass: job.run.pass, manifest: job.manifest, log: job.log };
}

/** Saves the intent of a create before its POST; the outcome to return when it cannot be saved. */
async function saveIntent(job: Job, allowed: boolean): Promise<ResourceOutcome | undefined> {
  const before = job.record;
  const now = new Date().toISOString();
  job.record = {
    ...(before ?? { kind: job.manifest.kind, name: job.manifest.name }),
    intent: { action: "create", startedAt: now },
    // An allowance buys one attempt: recorded with the intent, so a restart cannot spend it again.
    ...(allowed ? { allowanceUsedAt: now } : {}),
  };
  try {
    await job.run.save();
    return undefined;
  } catch (error) {
    // Nothing was sent: the intent must not reach the state with a later save of another resource.
    job.record = before;
    return job.finish("Failed", `not sent: the create intent could not be saved: ${messageOf(error)}`);
  }
}

/** The outcome of a request that failed: Unknown when it may have taken effect, else Failed or Pending. */
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
    return job.finish(
      "Unknown",
      `${error.message}. ${unknownCreateMessage(manifest.kind, manifest.name, startedAt)}`,
    );
  }
  let unsaved = "";
  if (creates) {
    // Not an unknown outcome: the platform answered, or the request never left (a shutdown while it
    // waited for the rate budget). The create did not happen, so the intent is void.
    const { intent: _void, ...rest } = job.record ?? { kind: manifest.kind, name: manifest.name };
    job.record = rest;
    try {
      await run.save();
    } catch (saveError) {
      // Safe, not silent: on disk the intent stays, so a restart reports Unknown rather than creating twice.
      job.log.warn({ err: saveError }, "create intent could not be cleared: the state save failed");
      unsaved = `; the state could not be saved (${messageOf(saveError)}), so a restart may report this create as Unknown`;
    }
  }
  if (isWriteRefusedError(error)) return job.finish(error.status, error.message + unsaved);
  if (run.options.signal?.aborted && !isApiError(error)) {
    return job.finish(
      "Pending",
      "not completed: the pass was stopped (shutdown or lost leadership); the next pass sends it again",
    );
  }
  if (isApiError(error)) {
    job.requestId = error.context.requestId ?? job.requestId;
    if (error.context.retryable) return job.finish("Failed", error.message + unsaved, "transient");
    const requestId = job.requestId;
    job.run.terminal.set(job.id, {
      fingerprint,
      message: error.message,
      ...(requestId ? { requestId } : {}),
    });
    return job.finish("Failed", error.message + unsaved, "terminal");
  }
  return job.finish("Failed", messageOf(error) + unsaved, "transient");
}
