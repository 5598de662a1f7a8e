import { createHash } from "node:crypto";
import { messageOf } from "../errors.js";
import { createOf, updatePlan } from "../kinds/index.js";
import { type Create, isNone, type PlanContext, type PlanInput, type ReferenceState } from "../kinds/kind.js";
import { manifestId } from "../manifests/identity.js";
import type { Kind, ManagedKind, Manifest, ManifestOf } from "../manifests/manifest.js";
import type { Outcome, PlannedRequest, ResourcePlan, Specs } from "../plan/types.js";
import { stored } from "../plan/values.js";
import { type Cause, resourceId } from "../resources.js";
import type { ResourceRecord, State } from "../state/store.js";
import type { Admitted, Settlement, Step, Stop } from "./step.js";
import type { Refusal } from "./types.js";
import { suspendedBecause } from "./write-guard.js";

/**
 * What one resource comes to in one round, decided in one place for `plan`, `plan --base` and `apply`:
 * a request to send, a server id to adopt, or the cause it stops at. Pure: it reads the resource, its
 * record as it is now and the pass's facts. Apply sends what it says; plan prints it.
 */

/**
 * Requests one resource may send in a pass: a first contact with a three-way list takes two, a changed
 * table mapping one more (removed, then added again), a pipe's state command and its scaling one each;
 * more means the plan does not converge.
 */
export const MAX_ROUNDS = 5;

/** What a resource's decision reads of its pass. The outer pass builds it; no decision changes it. */
export type Facts = {
  /** The state as it is now: the records (a follow-up sees the first answer) and the suspension. */
  state: State;
  /** Resources the operator allows one new create attempt (`--allow-create`). */
  allow: ReadonlySet<string>;
  /** Re-send unchanged fields too (the periodic re-assertion). */
  reassert: boolean;
  /** Resources to re-send as a re-assertion would, in this pass only (a read found them drifted). */
  heal?: ReadonlySet<string>;
  /** When the pass started: "now" for the lock-out guard. */
  now: Date;
  /** The pass's clock, for every time the engine stamps (an answer's, an intent's, an allowance's). */
  clock(): Date;
  /** A resource of `kind` by manifest name, as a resource that names it sees it now. */
  ref(kind: ManagedKind, name: string): ReferenceState;
  /** The management key id of an organization, or what reading it threw (ConfigError: no key). */
  keyOf(organizationId: string): { id: string | undefined } | { error: unknown };
  /** Requests the platform refused for good in earlier passes, by resource. */
  refusals: ReadonlyMap<string, Refusal>;
  /** Resources whose last answer is not saved yet: the save's error, by resource. */
  unsaved: ReadonlyMap<string, string>;
  /** Why this process may no longer write, once a write of this pass found out. */
  stopped(): string | undefined;
  /** A fingerprint of the credentials `request` goes with ("" when unknown). */
  credentials(request: PlannedRequest): string;
  /** The desired spec: secrets resolved (apply, plan), or stood in for (--secrets skip, --base). */
  desired<K extends Kind>(
    manifest: ManifestOf<K>,
    record: ResourceRecord | undefined,
  ): Specs[K] | Promise<Specs[K]>;
};

/** The cause of a plan's outcome when nothing is sent. */
const CAUSE_OF: Record<Outcome, Cause> = {
  none: "in-sync",
  adopt: "adopted",
  send: "waiting",
  wait: "waiting",
  refuse: "refused",
  unknown: "create-unknown",
};

/** A stop before any plan, with the plan `plan` shows for it: `outcome` and the reason. */
function stopBefore(manifest: Manifest, cause: Cause, outcome: Outcome, reason: string): Stop {
  const plan: ResourcePlan = { kind: manifest.kind, name: manifest.name, outcome, reason, changes: [] };
  return { action: "stop", cause, plan, message: reason };
}

/**
 * Round 1 up to the plan: what sends nothing without reading a secret (suspended, an answer not saved
 * yet), then the key of the resource's organization and its desired spec. Synchronous unless a secret
 * must be read.
 */
export function admit(manifest: Manifest, facts: Facts): Admitted | Stop | Promise<Admitted | Stop> {
  const id = manifestId(manifest);
  const suspended = suspendedBecause(manifest, facts.state.suspended);
  if (suspended) return stopBefore(manifest, "suspended", "wait", suspended);
  const unsaved = facts.unsaved.get(id);
  if (unsaved !== undefined) {
    const reason = `not sent: the answer of its last request is not saved yet (${unsaved}); nothing more is sent for it until the state can be saved`;
    return stopBefore(manifest, "unsaved", "wait", reason);
  }
  const organizationId = "organizationId" in manifest.spec ? manifest.spec.organizationId : undefined;
  const key = organizationId === undefined ? { id: undefined } : facts.keyOf(organizationId);
  if ("error" in key) return stopBefore(manifest, "no-key", "refuse", messageOf(key.error));
  const admitted = (spec: PlanInput["spec"]): Admitted => ({
    action: "plan",
    manifest,
    id,
    spec,
    managementKeyId: key.id,
  });
  const unreadable = (error: unknown) =>
    stopBefore(manifest, "secret-unreadable", "refuse", messageOf(error));
  let spec: PlanInput["spec"] | Promise<PlanInput["spec"]>;
  try {
    spec = facts.desired(manifest, facts.state.resources[id]);
  } catch (error) {
    return unreadable(error);
  }
  return spec instanceof Promise ? spec.then(admitted, unreadable) : admitted(spec);
}

/**
 * The step of `resource` in `round`, planned against its record as it is now. The operator's allowance
 * and a re-assertion count for the first round only; a request refused for good before is not sent
 * again unchanged; nothing is sent once this process may no longer write.
 */
export function decide(resource: Admitted, round: number, facts: Facts): Step {
  const { manifest, id } = resource;
  const record = facts.state.resources[id];
  const reassert = facts.reassert || (facts.heal?.has(id) ?? false);
  // Made field by field: this runs for every resource of every pass.
  const context: PlanContext = { now: facts.now, ref: facts.ref, reassert: reassert && round === 1 };
  if (resource.managementKeyId) context.managementKeyId = resource.managementKeyId;
  const input: PlanInput = { kind: manifest.kind, name: manifest.name, spec: resource.spec, record, context };
  const allowed = round === 1 && facts.allow.has(id) && !record?.allowanceUsedAt;
  const settled = round === 1 ? resource.settled : undefined;
  const { action, plan } = planOf(input, { allowed, settled });
  if (plan.adopt) return { action: "adopt", input, plan, adopt: plan.adopt };
  if (plan.outcome !== "send" || !plan.write) return nothingToSend(input, plan, round, facts);
  if (round > MAX_ROUNDS) {
    const reason = `still had changes to send after ${MAX_ROUNDS} requests; the platform's answers do not match the manifest`;
    return notSent(input, plan, "not-converging", reason);
  }
  const { request } = plan.write;
  const fingerprint = fingerprintOf(request, facts.credentials(request));
  const refused = reassert ? undefined : facts.refusals.get(id);
  if (refused?.fingerprint === fingerprint) {
    const reason = `${refused.message}; not sent again: the platform refused it, and would again until the manifest, a secret or the credentials change (or the next re-assertion)`;
    return { ...notSent(input, plan, "refused-before", reason), ...requestIdOf(refused) };
  }
  const stopped = facts.stopped();
  if (stopped !== undefined) return notSent(input, plan, "may-not-write", `not sent: ${stopped}`);
  // An allowance is spent only on the create it allows: that of an outcome still unknown.
  const spends = action === "create" && allowed && record?.intent !== undefined;
  return { action, input, plan, write: plan.write, fingerprint, allowed: spends };
}

/**
 * Create or update: the one place that tells them apart. A kind that creates, whose manifest names no
 * existing object and whose record has none, is created; once, since a create is not idempotent: a
 * create whose answer was lost (its intent still recorded) is `unknown` until a list finds what it made
 * (adopted then) or shows it made nothing, or until the operator allows a new attempt.
 */
function planOf(
  input: PlanInput,
  { allowed, settled }: { allowed: boolean; settled: Settlement | undefined },
): { action: "create" | "update"; plan: ResourcePlan } {
  const create = createOf(input.kind);
  if (isNone(create) || exists(create, input)) return { action: "update", plan: updatePlan(input) };
  const intent = input.record?.intent;
  if (intent && settled?.state === "found")
    return { action: "create", plan: foundPlan(create, input, intent.startedAt, settled) };
  if (intent && !allowed && settled?.state !== "absent") {
    const unclear =
      settled?.state === "unclear"
        ? `; listing the ${create.noun}s ${create.within} did not settle it: ${settled.reason}`
        : "";
    const reason = unknownCreateMessage(create, resourceId(input), intent.startedAt) + unclear;
    return {
      action: "create",
      plan: { kind: input.kind, name: input.name, outcome: "unknown", reason, changes: [] },
    };
  }
  const plan = create.plan(input);
  if (plan.outcome !== "send" || !intent) return { action: "create", plan };
  const reason = allowed
    ? "new create attempt allowed by the operator"
    : `the create sent at ${intent.startedAt} did not create it (no ${create.noun} ${create.within} matches): created again`;
  return { action: "create", plan: { ...plan, reason } };
}

/** Whether the object of a creating kind exists: its manifest names it, or driftless created it. */
const exists = (create: Create<Kind>, { spec, record }: PlanInput): boolean =>
  create.idOf(spec) !== undefined || record?.serverId !== undefined;

/** The object a create with a lost answer made, found in the list: its id is recorded, nothing is sent. */
function foundPlan(
  create: Create<Kind>,
  input: PlanInput,
  startedAt: string,
  found: Extract<Settlement, { state: "found" }>,
): ResourcePlan {
  const { kind, name } = input;
  return {
    kind,
    name,
    outcome: "adopt",
    reason: `the create sent at ${startedAt} did create it: found as ${found.id} in the list of the ${create.noun}s ${create.within}; its id is recorded, nothing is sent again`,
    changes: [{ path: create.idField, to: found.id, op: "set" }],
    adopt: { id: found.id, record: (at) => create.adopted(input, found.id, found.live, at) },
  };
}

/** How an operator resolves an Unknown create; also printed by `plan`. */
export function unknownCreateMessage(create: Create<Kind>, id: string, startedAt: string): string {
  return (
    `a create request sent at ${startedAt} may or may not have created the ${create.noun} (no answer was received). ` +
    `If it exists in the platform, adopt it: set spec.${create.idField} to its id. If it does not, allow a new attempt: ` +
    `driftless apply --allow-create ${id}`
  );
}

/** A request the decision keeps back: shown as the refusal it is, its changes kept, no request. */
function notSent(input: PlanInput, plan: ResourcePlan, cause: Cause, reason: string): Stop {
  const { kind, name, changes } = plan;
  const shown: ResourcePlan = { kind, name, outcome: "refuse", reason, changes };
  return { action: "stop", cause, plan: shown, message: reason, input };
}

const requestIdOf = ({ requestId }: Refusal) => (requestId ? { requestId } : {});

/** A plan that sends nothing: in sync (quietly, once it converged), waiting, refused or unknown. */
function nothingToSend(input: PlanInput, plan: ResourcePlan, round: number, facts: Facts): Stop {
  const cause = CAUSE_OF[plan.outcome];
  const quiet = plan.outcome === "none" && (plan.note === undefined || round > 1);
  const spent = plan.outcome === "unknown" ? spentAllowance(input, facts) : "";
  const shown = spent ? { ...plan, reason: plan.reason + spent } : plan;
  const stop: Stop = { action: "stop", cause, plan: shown, input };
  if (!quiet) stop.message = shown.reason;
  return stop;
}

/** What to tell an operator whose allowance to create again was already spent. */
function spentAllowance({ kind, name, record }: PlanInput, facts: Facts): string {
  const usedAt = record?.allowanceUsedAt;
  if (!usedAt || !record?.intent || !facts.allow.has(resourceId({ kind, name }))) return "";
  return `. The allowance to create it again was already used by the attempt at ${usedAt}: let one pass run without it, then give it again to allow one more attempt`;
}

/** What a request depends on: its route, parameters and body (secrets as hashes) and the credentials. */
export function fingerprintOf(request: PlannedRequest, credentials: string): string {
  const sent = JSON.stringify([request.route, request.params, stored(request.body), credentials]);
  return createHash("sha256").update(sent).digest("hex");
}
