import { walk } from "../drift/compare.js";
import { sameId } from "../manifests/identity.js";
import { diffPatch } from "../plan/patch.js";
import { appliedRecord } from "../plan/record.js";
import type { Change, ResourcePlan, SpecOf, Write } from "../plan/types.js";
import { omit } from "../plan/values.js";
import type { ReversePrivateEndpointCreate } from "../platform/management.js";
import type { ResourceRecord } from "../state/store.js";
import { type Complete, type LiveRead, none, type PlanInput, type Subject } from "./kind.js";
import { foldLive, specPathOf } from "./shared.js";

/**
 * A reverse private endpoint: created once with its POST (or adopted by `spec.id`); there is no update,
 * so its server id is remembered and a later change of its fields is refused, never sent. Read and
 * settled through the list of its service's endpoints.
 */

type Input = PlanInput<"ReversePrivateEndpoint">;
type Endpoint = Subject<"ReversePrivateEndpoint">;

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

/** The endpoint as the manifest wants it: what the create sends, what drift and a settling list compare. */
const desired = (spec: SpecOf<"ReversePrivateEndpoint">): ReversePrivateEndpointCreate =>
  omit(spec, ["organizationId", "serviceId", "id"]);

/** The status the platform last answered for the endpoint (the create's answer, or a read's). */
const statusOf = (record: ResourceRecord) => {
  const status = record.observed?.status;
  return typeof status === "string" ? status : undefined;
};

/** The record of an endpoint known to be `id` (created, found by a list, or adopted by spec.id). */
function adopted({ kind, name, spec, record }: Endpoint, id: string, live: object | undefined, at: string) {
  const { intent: _done, ...rest } = record ?? { kind, name };
  return appliedRecord({ kind, name, record: rest }, desired(spec), at, live, { serverId: id });
}

/** The endpoint the manifest names by `spec.id` is recorded, never created. */
function adoptPlan(input: Input, id: string): ResourcePlan {
  const { kind, name, record } = input;
  return {
    kind,
    name,
    outcome: "adopt",
    reason: `adopts the existing endpoint ${id} (spec.id); nothing is sent`,
    changes: [{ path: "id", ...(record?.serverId ? { from: record.serverId } : {}), to: id, op: "set" }],
    adopt: { id, record: (at) => adopted(input, id, undefined, at) },
  };
}

/** An endpoint already created: a changed field or a status that will not carry traffic is refused. */
function createdPlan({ kind, name, spec }: Input, record: ResourceRecord, serverId: string): ResourcePlan {
  const { changes } = diffPatch(desired(spec), record.applied, { reassert: false });
  if (changes.length > 0) {
    const reason =
      `${changes.map((c) => c.path).join(", ")} changed, but a reverse private endpoint cannot be updated: ` +
      `revert the change, or create a replacement under a new manifest name (and move the pipes to it)`;
    return { kind, name, outcome: "refuse", reason, changes };
  }
  // Without reads, the create answer's status is the last one driftless sees.
  const status = statusOf(record);
  const problem = status === undefined ? undefined : PROBLEMS[status];
  if (problem) {
    const reason =
      `the platform answered status ${status} for endpoint ${serverId}: ${problem}, so the pipes that name it cannot use it. ` +
      `Create a replacement under a new manifest name (and move the pipes to it), or adopt a working endpoint with spec.id`;
    return { kind, name, outcome: "refuse", reason, changes: [] };
  }
  const note = `created as ${serverId}${record.observed ? `, status ${String(status)} when created` : ", adopted"}`;
  return { kind, name, outcome: "none", reason: note, changes: [], note };
}

/** The endpoint's POST. */
function createPlan(input: Input): ResourcePlan {
  const { kind, name, spec } = input;
  const fields = desired(spec);
  const changes = Object.entries(fields).map(([path, to]): Change => ({ path, to, op: "set" }));
  const params = { organizationId: spec.organizationId, serviceId: spec.serviceId };
  return {
    kind,
    name,
    outcome: "send",
    reason: "not created yet",
    write: {
      request: { route: "createReversePrivateEndpoint", params, body: fields },
      record: (answer, at) => adopted(input, answer.id, answer, at),
    } satisfies Write<"createReversePrivateEndpoint">,
    changes,
  };
}

/** A listed endpoint equals what the manifest creates: its type, the type's fields and its description. */
function matches({ spec }: Endpoint, listed: Record<string, unknown>): boolean {
  return Object.entries(desired(spec)).every(([field, value]) => {
    const live = listed[field];
    // The platform may answer a description it was sent as "" as null, or leave it out.
    if (field === "description") return (live ?? "") === value;
    return live === value;
  });
}

/** An endpoint is read from its service's list: there is no GET of one in both contracts. */
function listedEndpoint({ spec, record }: Endpoint) {
  const id = record?.serverId ?? spec.id;
  if (id === undefined) return undefined;
  const { organizationId, serviceId } = spec;
  return {
    request: {
      route: "listReversePrivateEndpoints",
      params: { organizationId, serviceId },
      body: undefined,
    },
    live: (answer) => answer.find((endpoint) => sameId(endpoint.id, id)),
  } satisfies LiveRead<"listReversePrivateEndpoints">;
}

const ENDPOINT_FIXED =
  "changed outside git, and a reverse private endpoint cannot be updated: revert the change in the platform, or create a replacement under a new manifest name (and move the pipes to it)";

export const reversePrivateEndpoint: Complete<"ReversePrivateEndpoint"> = {
  kind: "ReversePrivateEndpoint",
  // Pipes name endpoints and need their ids: endpoints are applied first.
  phase: "prerequisites",
  references: () => [],
  address: (spec, record) => {
    const id = record?.serverId ?? spec.id;
    if (id === undefined) return undefined;
    return { organizationId: spec.organizationId, serviceId: spec.serviceId, reversePrivateEndpointId: id };
  },
  create: {
    noun: "endpoint",
    within: "of the service",
    idField: "id",
    idOf: (spec) => spec.id,
    plan: createPlan,
    list: ({ organizationId, serviceId }) =>
      ({
        request: {
          route: "listReversePrivateEndpoints",
          params: { organizationId, serviceId },
          body: undefined,
        },
        live: (answer) => answer,
      }) satisfies LiveRead<"listReversePrivateEndpoints">,
    matches,
    adopted,
    unusable: (record) => {
      const status = statusOf(record);
      return record.observed && status !== READY
        ? `created in this pass with status ${String(status)}, not ${READY}`
        : undefined;
    },
  },
  update: {
    plan: (input) => {
      const { spec, record } = input;
      if (spec.id && record?.serverId !== spec.id) return adoptPlan(input, spec.id);
      // Created (or adopted) before: the engine plans an update only once the endpoint exists.
      const serverId = record?.serverId ?? spec.id ?? "";
      return createdPlan(input, record ?? { kind: input.kind, name: input.name }, serverId);
    },
    learn: none("an endpoint has no three-way list to learn"),
  },
  delete: {
    request: ({ organizationId, serviceId, reversePrivateEndpointId }) =>
      organizationId && serviceId && reversePrivateEndpointId
        ? {
            route: "deleteReversePrivateEndpoint",
            params: { organizationId, serviceId, reversePrivateEndpointId },
            body: undefined,
          }
        : undefined,
  },
  observe: {
    read: listedEndpoint,
    drift: ({ spec }, live) => walk(desired(spec), live),
    // It cannot be updated: a change made outside git is reported (`fixed`), never sent back.
    fold: (record) => record,
    fixed: ENDPOINT_FIXED,
    // Met for the first time: recorded as adopted, what differs live as if it had been sent, so that the
    // plan shows the change it cannot send (and refuses it).
    baseline: (input, live, fields) => {
      const { id } = input.spec;
      if (id === undefined) return undefined;
      return foldLive(adopted(input, id, live, input.context.now.toISOString()), fields, live);
    },
    listed: listedEndpoint,
  },
  poll: none("an endpoint is written, not watched"),
  specPath: specPathOf(),
};
