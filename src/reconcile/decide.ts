import { createHash } from "node:crypto";
import { messageOf } from "../errors.js";
import { manifestId } from "../manifests/identity.js";
import type { Kind, Manifest, ManifestOf } from "../manifests/manifest.js";
import { planResource } from "../plan/planners.js";
import type {
  EndpointRef,
  Outcome,
  PlanContext,
  PlanInput,
  PlannedRequest,
  ResourcePlan,
  Settlement,
  Specs,
} from "../plan/types.js";
import { stored } from "../plan/values.js";
import { type Cause, resourceId } from "../resources.js";
import type { ResourceRecord, State } from "../state/store.js";
import type { Refusal } from "./types.js";
import { suspendedBecause } from "./write-guard.js";

/**
 * What one resource comes to in one round, decided in one place for `plan`, `plan --base` and `apply`:
 * a request to send, a server id to adopt, or the cause it stops at. Pure: it reads the resource, its
 * record as it is now and the pass's facts. Apply sends what it says; plan prints it.
 */

/**
 * Requests one resource may send in a pass: a first contact with a three-way list takes two, and a
 * changed table mapping one more (removed, then added again); more means the plan does not converge.
 */
export const MAX_ROUNDS = 3;

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
  /** When "now" is, for the lock-out guard. */
  now: Date;
  /** A ReversePrivateEndpoint by manifest name, as a pipe that names it sees it now. */
  endpoint(name: string): EndpointRef;
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

/** A resource ready to be planned: its desired spec and the key id of its organization, when known. */
export type Admitted = {
  action: "plan";
  manifest: Manifest;
  id: string;
  spec: PlanInput["spec"];
  managementKeyId: string | undefined;
  /** With reads on: how the list of its service's endpoints settles an earlier create's unknown outcome. */
  settled?: Settlement;
};

/** What to do next for a resource; every step carries the plan `plan` shows for it. */
export type Step =
  | { action: "send"; input: PlanInput; plan: ResourcePlan; request: PlannedRequest; fingerprint: string }
  | { action: "adopt"; input: PlanInput; plan: ResourcePlan }
  | Stop;

/** The resource stops here: the cause decides its status and next step (resources.ts CAUSES). */
export type Stop = {
  action: "stop";
  cause: Cause;
  plan: ResourcePlan;
  /** What the status says; none for a resource quietly in sync. */
  message?: string;
  /** The plan's input, when it got as far as a plan. */
  input?: PlanInput;
  requestId?: string;
};

/** The cause of a planner's outcome when nothing is sent. */
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
  const context: PlanContext = {
    now: facts.now,
    endpoint: facts.endpoint,
    reassert: reassert && round === 1,
    allowCreate: round === 1 && facts.allow.has(id) && !record?.allowanceUsedAt,
  };
  if (resource.managementKeyId) context.managementKeyId = resource.managementKeyId;
  if (resource.settled && round === 1) context.settled = resource.settled;
  const input: PlanInput = { kind: manifest.kind, name: manifest.name, spec: resource.spec, record, context };
  const plan = planResource(input);
  if (plan.outcome === "adopt") return { action: "adopt", input, plan };
  if (plan.outcome !== "send" || !plan.request) return nothingToSend(input, plan, round, facts);
  if (round > MAX_ROUNDS) {
    const reason = `still had changes to send after ${MAX_ROUNDS} requests; the platform's answers do not match the manifest`;
    return notSent(input, plan, "not-converging", reason);
  }
  const fingerprint = fingerprintOf(plan.request, facts.credentials(plan.request));
  const refused = reassert ? undefined : facts.refusals.get(id);
  if (refused?.fingerprint === fingerprint) {
    const reason = `${refused.message}; not sent again: the platform refused it, and would again until the manifest, a secret or the credentials change (or the next re-assertion)`;
    return { ...notSent(input, plan, "refused-before", reason), ...requestIdOf(refused) };
  }
  const stopped = facts.stopped();
  if (stopped !== undefined) return notSent(input, plan, "may-not-write", `not sent: ${stopped}`);
  return { action: "send", input, plan, request: plan.request, fingerprint };
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
  const quiet = plan.outcome === "none" && (plan.reason.startsWith("in sync") || round > 1);
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
