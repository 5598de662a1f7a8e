import type { CreateReversePrivateEndpointBody } from "../platform/management.js";
import { resourceId } from "../resources.js";
import type { ResourceRecord } from "../state/store.js";
import { diffPatch } from "./patch.js";
import { appliedRecord } from "./record.js";
import type {
  Change,
  KindPlanner,
  LiveFinding,
  LiveInput,
  LiveRead,
  PlanInput,
  ReadOutcome,
  ResourcePlan,
  Settlement,
  SpecOf,
} from "./types.js";
import { isPlainObject, member, omit } from "./values.js";

/**
 * The `createReversePrivateEndpoint` route, once. There is no update for an endpoint (and no read in the
 * minimal contract), so the server id is remembered, a later change of its fields is reported and never
 * sent, and a create whose outcome is unknown is never repeated without an operator's word, or, with
 * reads on, without the list of the service's endpoints showing that it made nothing.
 */

/** The status value the API shows for a usable endpoint. */
export const READY = "Ready";

/**
 * The published contract's statuses of an endpoint that will not carry traffic without someone acting,
 * and what to do (docs/platform-apis.md#reverse-private-endpoint-status). The others (Unknown,
 * Provisioning, PendingAcceptance, Deleting, Ready, or any value a platform adds) are shown as they come.
 */
const PROBLEMS: Record<string, string> = {
  Failed: "the platform could not set it up",
  Rejected: "the owner of the service it connects to rejected the connection",
  Expired: "the connection was not accepted in time",
};

export const requestFields = (spec: SpecOf<"ReversePrivateEndpoint">): CreateReversePrivateEndpointBody =>
  omit(spec, ["organizationId", "serviceId", "id"]);

/** How an operator resolves an Unknown create; also printed by `plan`. */
export function unknownCreateMessage(kind: string, name: string, startedAt: string): string {
  return (
    `a create request sent at ${startedAt} may or may not have created the endpoint (no answer was received). ` +
    `If it exists in the platform, adopt it: set spec.id to its id. If it does not, allow a new attempt: ` +
    `driftless apply --allow-create ${resourceId({ kind, name })}`
  );
}

type Input = PlanInput<"ReversePrivateEndpoint">;

/**
 * With reads on, the list that settles a create whose outcome is unknown: the endpoints of its service.
 * None when there is nothing to settle (no intent, already created, or adopted by spec.id).
 */
function settleRead({ spec, record }: LiveInput<"ReversePrivateEndpoint">): LiveRead | undefined {
  if (!record?.intent || record.serverId || spec.id) return undefined;
  const params = { organizationId: spec.organizationId, serviceId: spec.serviceId };
  return { route: "listReversePrivateEndpoints", params, body: undefined };
}

/** A listed endpoint equals what the manifest creates: its type, the type's fields and its description. */
function matches(fields: CreateReversePrivateEndpointBody, live: Record<string, unknown>): boolean {
  return Object.entries(fields).every(([field, value]) => {
    const listed = live[field];
    // The platform may answer a description it was sent as "" as null, or leave it out.
    if (field === "description") return (listed ?? "") === value;
    return listed === value;
  });
}

/**
 * What the list of the service's endpoints says of a create whose answer was lost. `taken`: the ids
 * other resources already recorded, which cannot be this one's. Found only when exactly one endpoint
 * matches; absent only when the list was read and none does.
 */
export function settle(
  spec: SpecOf<"ReversePrivateEndpoint">,
  listed: unknown,
  taken: ReadonlySet<string>,
): Settlement {
  if (!Array.isArray(listed)) return { state: "unclear", reason: "the answer was not a list" };
  const fields = requestFields(spec);
  const found = listed
    .filter(isPlainObject)
    .filter((live) => typeof live.id === "string" && live.id !== "" && !taken.has(live.id))
    .filter((live) => matches(fields, live));
  const [only] = found;
  if (found.length === 0) return { state: "absent" };
  if (found.length > 1 || !only)
    return {
      state: "unclear",
      reason: `${found.length} endpoints of the service match the manifest (${found.map((e) => String(e.id)).join(", ")}), so the list cannot tell which one the create made`,
    };
  return { state: "found", id: String(only.id), live: only };
}

/** The endpoint the manifest names by `spec.id` is recorded, never created. */
function adoptPlan({ kind, name, record }: Input, adopt: string): ResourcePlan {
  return {
    kind,
    name,
    outcome: "adopt",
    reason: `adopts the existing endpoint ${adopt} (spec.id); nothing is sent`,
    changes: [{ path: "id", ...(record?.serverId ? { from: record.serverId } : {}), to: adopt, op: "set" }],
    adoptId: adopt,
  };
}

/** An endpoint already created: a changed field or a status that will not carry traffic is refused. */
function createdPlan({ kind, name, spec }: Input, record: ResourceRecord, serverId: string): ResourcePlan {
  const { changes } = diffPatch(requestFields(spec), record.applied, { reassert: false });
  if (changes.length > 0) {
    const reason =
      `${changes.map((c) => c.path).join(", ")} changed, but a reverse private endpoint cannot be updated: ` +
      `revert the change, or create a replacement under a new manifest name (and move the pipes to it)`;
    return { kind, name, outcome: "refuse", reason, changes };
  }
  // driftless does not read endpoints: the create answer's status is the last one it sees.
  const status = member(record.observed, "status");
  const problem = typeof status === "string" ? PROBLEMS[status] : undefined;
  if (problem) {
    const reason =
      `the platform answered status ${status} for endpoint ${serverId}: ${problem}, so the pipes that name it cannot use it. ` +
      `Create a replacement under a new manifest name (and move the pipes to it), or adopt a working endpoint with spec.id`;
    return { kind, name, outcome: "refuse", reason, changes: [] };
  }
  const shown = record.observed ? `, status ${String(status)} when created` : ", adopted";
  return { kind, name, outcome: "none", reason: `created as ${serverId}${shown}`, changes: [] };
}

/** The endpoint a create with a lost answer made, found in the service's list: its id is recorded. */
function foundPlan(
  { kind, name }: Input,
  startedAt: string,
  id: string,
  live: Record<string, unknown>,
): ResourcePlan {
  return {
    kind,
    name,
    outcome: "adopt",
    reason: `the create sent at ${startedAt} did create it: found as ${id} in the list of the service's endpoints; its id is recorded, nothing is sent again`,
    changes: [{ path: "id", to: id, op: "set" }],
    adoptId: id,
    adoptLive: live,
  };
}

/** Why a new create is sent: the operator allowed it, or the list showed the earlier one made nothing. */
function createReason({ record, context }: Input): string {
  if (!record?.intent) return "not created yet";
  if (context.allowCreate) return "new create attempt allowed by the operator";
  return `the create sent at ${record.intent.startedAt} did not create it (no endpoint of the service matches): created again`;
}

/**
 * An endpoint not created yet: its POST, unless an earlier create's outcome is unknown. With reads on,
 * the list of the service's endpoints settles that outcome: found, its id is recorded (even when the
 * operator allowed a new attempt: a second endpoint is never what they meant); absent, it is created again.
 */
function createPlan(input: Input): ResourcePlan {
  const { kind, name, spec, record, context } = input;
  const { settled } = context;
  if (record?.intent && settled?.state === "found")
    return foundPlan(input, record.intent.startedAt, settled.id, settled.live);
  if (record?.intent && !context.allowCreate && settled?.state !== "absent") {
    const unclear =
      settled?.state === "unclear"
        ? `; listing the service's endpoints did not settle it: ${settled.reason}`
        : "";
    const reason = unknownCreateMessage(kind, name, record.intent.startedAt) + unclear;
    return { kind, name, outcome: "unknown", reason, changes: [] };
  }
  const fields = requestFields(spec);
  const changes = Object.entries(fields).map(([path, to]): Change => ({ path, to, op: "set" }));
  return {
    kind,
    name,
    outcome: "send",
    reason: createReason(input),
    request: {
      route: "createReversePrivateEndpoint",
      params: { organizationId: spec.organizationId, serviceId: spec.serviceId },
      body: fields,
    },
    changes,
  };
}

export const reversePrivateEndpointPlanner: KindPlanner<"ReversePrivateEndpoint"> = {
  // Pipes name endpoints and need their ids: endpoints are applied first.
  phase: "prerequisites",

  plan(input) {
    const { spec, record } = input;
    if (spec.id && record?.serverId !== spec.id) return adoptPlan(input, spec.id);
    if (record?.serverId) return createdPlan(input, record, record.serverId);
    return createPlan(input);
  },

  record({ kind, name, spec, record }, plan, result, at) {
    const { intent: _done, ...rest } = record ?? { kind, name };
    const adopted = plan.outcome === "adopt";
    const serverId = adopted ? plan.adoptId : member(result, "id");
    return appliedRecord(
      { kind, name, record: rest },
      requestFields(spec),
      at,
      adopted ? plan.adoptLive : result,
      {
        ...(typeof serverId === "string" && serverId !== "" ? { serverId } : {}),
      },
    );
  },

  liveRead: settleRead,
  fromRead: ({ spec, taken }: LiveInput<"ReversePrivateEndpoint">, read: ReadOutcome): LiveFinding => ({
    settled:
      "error" in read
        ? { state: "unclear", reason: `the list could not be read (${read.error})` }
        : settle(spec, read.answer, taken),
  }),
};
