import { randomBytes, randomUUID } from "node:crypto";
import type { Contract } from "../platform/routes.js";
import { type Answer, badRequest, type Handlers, notFound, Rejection } from "./http.js";
import { createKey, type KeyCreate, keyAnswer } from "./keys.js";
import type { ApiKey, Backup, PipeScaling, PlatformState, ReverseEndpoint } from "./model.js";
import {
  applyPipePatch,
  commandPipe,
  createPipe,
  type PipeCreate,
  scalePipe,
  type TableMappingOrder,
} from "./pipes.js";
import { EndpointCreate, KeyPatch, OrganizationPatch, PipePatch, parseBody } from "./requests.js";

/**
 * The management API over the live state, HTTP Basic auth against the keys (keys.ts), and the
 * `{status, requestId, result}` envelope. Its five endpoints in `minimal` mode; in `full` mode also the
 * published contract's reads, its lifecycle (creates, lists, deletes, a pipe's state and scaling), its
 * answer shapes and its GCP endpoint type (bodies are checked against contracts/full/ before a handler
 * runs, see index.ts). An id it does not know is a 404, as the platform answers it
 * (docs/platform-apis.md#unknown-ids).
 */

export { authenticateKey } from "./keys.js";
export type { TableMappingOrder } from "./pipes.js";

export type ManagementDeps = {
  state: PlatformState;
  contract: Contract;
  tableMappingOrder: TableMappingOrder;
  /** Called with each endpoint just created, so its status can move on to Ready later. */
  onEndpointCreated(endpoint: ReverseEndpoint): void;
  /** The status a new endpoint starts in. */
  initialEndpointStatus(): string;
};

/**
 * A request body the `full` mode's contract check accepted, or the `minimal` mode's own parse of it
 * (`schema`; none for a route only the published contract has).
 */
function bodyOf<T>(
  deps: ManagementDeps,
  schema: Parameters<typeof parseBody<T>>[0] | undefined,
  body: unknown,
): T {
  if (deps.contract === "full" || schema === undefined) return (withoutNulls(body) ?? {}) as T;
  return parseBody(schema, body);
}

/** The published contract lets a PATCH send null for "not set": the simulator then changes nothing. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, child]) => child !== null)
      .map(([key, child]) => [key, withoutNulls(child)]),
  );
}

export const managementErrorBody = (status: number, code: string, message: string, requestId?: string) => ({
  status,
  error: `${code}: ${message}`,
  requestId,
});

const ok = (result: unknown, requestId: string | undefined): Answer => ({
  status: 200,
  body: { status: 200, requestId, result },
});

/** A delete's answer: the envelope without a result. */
const deleted = (requestId: string | undefined): Answer => ({
  status: 200,
  body: { status: 200, requestId },
});

/** Takes `item` out of `list` in place, so a test holding the list sees it gone. */
function remove<T>(list: T[], item: T): void {
  list.splice(list.indexOf(item), 1);
}

/** An endpoint as answered: the published contract also names the GCP service attachment (null when none). */
function endpointAnswer(endpoint: ReverseEndpoint, contract: Contract) {
  if (contract === "minimal") return endpoint;
  return { ...endpoint, gcpServiceAttachment: endpoint.gcpServiceAttachment ?? null };
}

/**
 * A backup as answered. The minimal contract shows finished backups without a status; the published
 * one adds `status` and `type`, gives finishedAt only once finished, and names the bucket's provider.
 */
function backupAnswer(backup: Backup, contract: Contract) {
  const { status = "done", type = "incremental", ...shown } = backup;
  if (contract === "minimal") return shown;
  const { finishedAt: _unfinished, ...running } = shown;
  return {
    ...(status === "in_progress" ? running : shown),
    status,
    type,
    bucket: { bucketProvider: "AWS", ...backup.bucket },
  };
}

/** Newest first: by finish time in the minimal contract (it shows finished ones), by start in the published one. */
const newestFirst = (contract: Contract) => (a: Backup, b: Backup) =>
  contract === "minimal"
    ? Date.parse(b.finishedAt) - Date.parse(a.finishedAt)
    : Date.parse(b.startedAt) - Date.parse(a.startedAt);

type Params = Record<string, string>;
type Find = ReturnType<typeof finder>;
type Group<N extends keyof Handlers<"management", ApiKey>> = Pick<Handlers<"management", ApiKey>, N>;

export function managementHandlers(deps: ManagementDeps): Handlers<"management", ApiKey> {
  const find = finder(deps.state);
  return {
    ...organizationHandlers(deps, find),
    ...keyHandlers(deps, find),
    ...pipeHandlers(deps, find),
    ...endpointHandlers(deps, find),
    listBackups({ params, caller, requestId }) {
      const owner = find.service(params, caller);
      const { state, contract } = deps;
      const backups = state.backups.filter((b) => b.serviceId === owner.id).sort(newestFirst(contract));
      return ok(
        backups.map((b) => backupAnswer(b, contract)),
        requestId,
      );
    },
  };
}

/** The objects of a request's path, each checked to belong to the one before: 403 or 404 when not. */
function finder(state: PlatformState) {
  const organization = (organizationId: string, caller: ApiKey) => {
    const found = state.organizations.find((o) => o.id === organizationId);
    if (!found) throw notFound(`organization ${organizationId} does not exist`);
    if (caller.organizationId !== organizationId) {
      throw new Rejection(
        403,
        "FORBIDDEN",
        `key ${caller.id} does not belong to organization ${organizationId}`,
      );
    }
    return found;
  };
  const service = (params: Params, caller: ApiKey) => {
    const organizationId = params.organizationId ?? "";
    organization(organizationId, caller);
    const found = state.services.find(
      (s) => s.id === params.serviceId && s.organizationId === organizationId,
    );
    if (!found)
      throw notFound(`service ${params.serviceId} does not exist in organization ${organizationId}`);
    return found;
  };
  const key = (params: Params, caller: ApiKey) => {
    organization(params.organizationId ?? "", caller);
    const found = state.keys.find((k) => k.id === params.keyId && k.organizationId === params.organizationId);
    if (!found) throw notFound(`key ${params.keyId} does not exist in organization ${params.organizationId}`);
    return found;
  };
  const pipe = (params: Params, caller: ApiKey) => {
    service(params, caller);
    const found = state.pipes.find((p) => p.id === params.dataPipeId && p.serviceId === params.serviceId);
    if (!found)
      throw notFound(`data pipe ${params.dataPipeId} does not exist in service ${params.serviceId}`);
    return found;
  };
  const endpoint = (params: Params, caller: ApiKey) => {
    const owner = service(params, caller);
    const found = state.endpoints.find(
      (e) => e.id === params.reversePrivateEndpointId && e.serviceId === owner.id,
    );
    if (!found)
      throw notFound(
        `reverse private endpoint ${params.reversePrivateEndpointId} does not exist in service ${owner.id}`,
      );
    return found;
  };
  return { organization, service, key, pipe, endpoint };
}

function organizationHandlers(
  deps: ManagementDeps,
  find: Find,
): Group<"updateOrganization" | "getOrganization"> {
  return {
    updateOrganization({ params, body, caller, requestId }) {
      const org = find.organization(params.organizationId ?? "", caller);
      const patch = bodyOf(deps, OrganizationPatch, body);
      if (patch.name !== undefined) org.name = patch.name;
      // Entries are a set keyed by id: remove first, then add (an added id replaces its old entry).
      const removed = new Set((patch.privateEndpoints?.remove ?? []).map((e) => e.id));
      org.privateEndpoints = org.privateEndpoints.filter((e) => !removed.has(e.id));
      for (const entry of patch.privateEndpoints?.add ?? []) {
        org.privateEndpoints = [...org.privateEndpoints.filter((e) => e.id !== entry.id), entry];
      }
      return ok(org, requestId);
    },
    getOrganization({ params, caller, requestId }) {
      return ok(find.organization(params.organizationId ?? "", caller), requestId);
    },
  };
}

function keyHandlers(
  deps: ManagementDeps,
  find: Find,
): Group<"updateApiKey" | "getApiKey" | "listApiKeys" | "createApiKey" | "deleteApiKey"> {
  const { state, contract } = deps;
  return {
    updateApiKey({ params, body, caller, requestId }) {
      const found = find.key(params, caller);
      // `state` is the published contract's: the minimal mode's parse refuses it.
      const patch = bodyOf<KeyPatch & { state?: ApiKey["state"] }>(deps, KeyPatch, body);
      if (patch.name !== undefined) found.name = patch.name;
      if (patch.roles !== undefined) found.roles = patch.roles;
      if (patch.expireAt !== undefined) found.expireAt = patch.expireAt || null;
      if (patch.ipAccessList !== undefined)
        found.ipAccessList = patch.ipAccessList.map((e) => ({ ...e, description: e.description ?? "" }));
      if (patch.state !== undefined) found.state = patch.state;
      return ok(keyAnswer(found, contract), requestId);
    },
    getApiKey({ params, caller, requestId }) {
      return ok(keyAnswer(find.key(params, caller), contract), requestId);
    },
    listApiKeys({ params, caller, requestId }) {
      const { id } = find.organization(params.organizationId ?? "", caller);
      const keys = state.keys.filter((k) => k.organizationId === id);
      return ok(
        keys.map((k) => keyAnswer(k, contract)),
        requestId,
      );
    },
    createApiKey({ params, body, caller, requestId }) {
      const { id } = find.organization(params.organizationId ?? "", caller);
      const { key, ...credentials } = createKey(state, id, bodyOf<KeyCreate>(deps, undefined, body));
      return ok({ key: keyAnswer(key, contract), ...credentials }, requestId);
    },
    deleteApiKey({ params, caller, requestId }) {
      const found = find.key(params, caller);
      if (found === caller) throw badRequest("the key that authenticates this request cannot delete itself");
      remove(state.keys, found);
      return deleted(requestId);
    },
  };
}

function pipeHandlers(
  deps: ManagementDeps,
  find: Find,
): Group<
  | "updateDataPipe"
  | "getDataPipe"
  | "listDataPipes"
  | "createDataPipe"
  | "deleteDataPipe"
  | "updateDataPipeState"
  | "updateDataPipeScaling"
> {
  const { state } = deps;
  return {
    updateDataPipe({ params, body, caller, requestId }) {
      const found = find.pipe(params, caller);
      applyPipePatch(state, found, bodyOf(deps, PipePatch, body), deps.tableMappingOrder);
      found.updatedAt = new Date().toISOString();
      return ok(found, requestId);
    },
    getDataPipe({ params, caller, requestId }) {
      return ok(find.pipe(params, caller), requestId);
    },
    listDataPipes({ params, caller, requestId }) {
      const owner = find.service(params, caller);
      return ok(
        state.pipes.filter((p) => p.serviceId === owner.id),
        requestId,
      );
    },
    createDataPipe({ params, body, caller, requestId }) {
      const owner = find.service(params, caller);
      return ok(createPipe(state, owner, bodyOf<PipeCreate>(deps, undefined, body)), requestId);
    },
    deleteDataPipe({ params, caller, requestId }) {
      remove(state.pipes, find.pipe(params, caller));
      return deleted(requestId);
    },
    updateDataPipeState({ params, body, caller, requestId }) {
      const found = find.pipe(params, caller);
      commandPipe(found, bodyOf<{ command?: string }>(deps, undefined, body).command);
      return ok(found, requestId);
    },
    updateDataPipeScaling({ params, body, caller, requestId }) {
      const found = find.pipe(params, caller);
      scalePipe(found, bodyOf<PipeScaling>(deps, undefined, body));
      return ok(found, requestId);
    },
  };
}

function endpointHandlers(
  deps: ManagementDeps,
  find: Find,
): Group<
  | "listReversePrivateEndpoints"
  | "getReversePrivateEndpoint"
  | "createReversePrivateEndpoint"
  | "deleteReversePrivateEndpoint"
> {
  const { state, contract } = deps;
  return {
    listReversePrivateEndpoints({ params, caller, requestId }) {
      const owner = find.service(params, caller);
      const listed = state.endpoints.filter((e) => e.serviceId === owner.id);
      return ok(
        listed.map((e) => endpointAnswer(e, contract)),
        requestId,
      );
    },
    getReversePrivateEndpoint({ params, caller, requestId }) {
      return ok(endpointAnswer(find.endpoint(params, caller), contract), requestId);
    },
    createReversePrivateEndpoint({ params, body, caller, requestId }) {
      const owner = find.service(params, caller);
      const request = bodyOf<
        EndpointCreate & { type: ReverseEndpoint["type"]; gcpServiceAttachment?: string }
      >(deps, EndpointCreate, body);
      const id = randomUUID();
      const endpointId = `vpce-${randomBytes(9).toString("hex").slice(0, 17)}`;
      const endpoint: ReverseEndpoint = {
        id,
        serviceId: owner.id,
        description: request.description ?? "",
        type: request.type,
        vpcEndpointServiceName: request.vpcEndpointServiceName ?? null,
        vpcResourceConfigurationId: request.vpcResourceConfigurationId ?? null,
        vpcResourceShareArn: request.vpcResourceShareArn ?? null,
        mskClusterArn: request.mskClusterArn ?? null,
        mskAuthentication: request.mskAuthentication ?? null,
        ...(request.gcpServiceAttachment ? { gcpServiceAttachment: request.gcpServiceAttachment } : {}),
        endpointId,
        dnsNames: [`${endpointId}.vpce-svc.eu-west-1.vpce.amazonaws.com`],
        privateDnsNames: [`${id.slice(0, 8)}.datapipes.${owner.id.slice(0, 8)}.private.platform.internal`],
        status: deps.initialEndpointStatus(),
      };
      state.endpoints.push(endpoint);
      deps.onEndpointCreated(endpoint);
      return ok(endpointAnswer(endpoint, contract), requestId);
    },
    deleteReversePrivateEndpoint({ params, caller, requestId }) {
      remove(state.endpoints, find.endpoint(params, caller));
      return deleted(requestId);
    },
  };
}
