import type { CreateReversePrivateEndpointBody } from "../platform/management.js";
import { resourceId } from "../resources.js";
import type { ResourceRecord } from "../state/store.js";
import { diffPatch } from "./patch.js";
import { appliedRecord } from "./record.js";
import type { Change, KindPlanner, PlanInput, ResourcePlan, SpecOf } from "./types.js";
import { member, omit } from "./values.js";

/**
 * The `createReversePrivateEndpoint` route, once. There is no update (nor GET) for an endpoint, so the
 * server id is remembered, a later change of its fields is reported and never sent, and a create whose
 * outcome is unknown is never repeated without an operator's word.
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

/** An endpoint not created yet: its POST, unless an earlier create's outcome is unknown. */
function createPlan({ kind, name, spec, record, context }: Input): ResourcePlan {
  if (record?.intent && !context.allowCreate) {
    const reason = unknownCreateMessage(kind, name, record.intent.startedAt);
    return { kind, name, outcome: "unknown", reason, changes: [] };
  }
  const fields = requestFields(spec);
  const changes = Object.entries(fields).map(([path, to]): Change => ({ path, to, op: "set" }));
  return {
    kind,
    name,
    outcome: "send",
    reason: record?.intent ? "new create attempt allowed by the operator" : "not created yet",
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
      adopted ? undefined : result,
      {
        ...(typeof serverId === "string" && serverId !== "" ? { serverId } : {}),
      },
    );
  },
};
