import { randomBytes, randomUUID } from "node:crypto";
import type { Contract } from "../platform/routes.js";
import { type Answer, badRequest, type Handlers, notFound, Rejection, sameSecret } from "./http.js";
import type { ApiKey, Backup, DataPipe, PlatformState, ReverseEndpoint } from "./model.js";
import { EndpointCreate, KeyPatch, OrganizationPatch, PipePatch, parseBody } from "./requests.js";

/**
 * The management API over the live state, HTTP Basic auth against the keys that have a secret, and
 * the `{status, requestId, result}` envelope. Its five endpoints in `minimal` mode; in `full` mode also
 * the published contract's reads, its answer shapes and its GCP endpoint type (bodies are checked
 * against contracts/full/ before a handler runs, see index.ts).
 */

/** In which order a PATCH's postgres table mappings take effect: the published contract does not say. */
export type TableMappingOrder = "remove-first" | "add-first";

export type ManagementDeps = {
  state: PlatformState;
  contract: Contract;
  tableMappingOrder: TableMappingOrder;
  /** Called with each endpoint just created, so its status can move on to Ready later. */
  onEndpointCreated(endpoint: ReverseEndpoint): void;
  /** The status a new endpoint starts in. */
  initialEndpointStatus(): string;
};

/** A request body the `full` mode's contract check accepted, or the `minimal` mode's own parse of it. */
function bodyOf<T>(deps: ManagementDeps, schema: Parameters<typeof parseBody<T>>[0], body: unknown): T {
  if (deps.contract === "full") return withoutNulls(body) as T;
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

/** The key that `Authorization: Basic base64(id:secret)` proves: enabled, unexpired, secret matching. */
export function authenticateKey(state: PlatformState, authorization: string | undefined): ApiKey | undefined {
  const match = /^Basic\s+(\S+)$/i.exec(authorization ?? "");
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return undefined;
  const id = decoded.slice(0, colon);
  const secret = decoded.slice(colon + 1);
  const key = state.keys.find((k) => k.id === id);
  if (!key?.secret || !sameSecret(secret, key.secret) || key.state !== "enabled") return undefined;
  if (key.expireAt && Date.parse(key.expireAt) <= Date.now()) return undefined;
  key.usedAt = new Date().toISOString();
  return key;
}

const ok = (result: unknown, requestId: string | undefined): Answer => ({
  status: 200,
  body: { status: 200, requestId, result },
});

/** A key as results show it: without the organization it belongs to and without its secret. */
export function publicKey(key: ApiKey) {
  const { organizationId: _organization, secret: _secret, ...shown } = key;
  return shown;
}

/** A key as the published contract answers it: usedAt only once used, and its assigned roles. */
function keyAnswer(key: ApiKey, contract: Contract) {
  const shown = publicKey(key);
  if (contract === "minimal") return shown;
  const { usedAt, ...rest } = shown;
  return { ...rest, ...(usedAt ? { usedAt } : {}), assignedRoles: [] };
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

export function managementHandlers(deps: ManagementDeps): Handlers<"management", ApiKey> {
  const { state, contract } = deps;
  const now = () => new Date().toISOString();

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
  const service = (params: Record<string, string>, caller: ApiKey) => {
    const organizationId = params.organizationId ?? "";
    organization(organizationId, caller);
    const found = state.services.find(
      (s) => s.id === params.serviceId && s.organizationId === organizationId,
    );
    if (!found)
      throw notFound(`service ${params.serviceId} does not exist in organization ${organizationId}`);
    return found;
  };
  const key = (params: Record<string, string>, caller: ApiKey) => {
    organization(params.organizationId ?? "", caller);
    const found = state.keys.find((k) => k.id === params.keyId && k.organizationId === params.organizationId);
    if (!found) throw notFound(`key ${params.keyId} does not exist in organization ${params.organizationId}`);
    return found;
  };
  const pipe = (params: Record<string, string>, caller: ApiKey) => {
    service(params, caller);
    const found = state.pipes.find((p) => p.id === params.dataPipeId && p.serviceId === params.serviceId);
    if (!found)
      throw notFound(`data pipe ${params.dataPipeId} does not exist in service ${params.serviceId}`);
    return found;
  };

  return {
    updateOrganization({ params, body, caller, requestId }) {
      const org = organization(params.organizationId ?? "", caller);
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
      return ok(organization(params.organizationId ?? "", caller), requestId);
    },
    updateApiKey({ params, body, caller, requestId }) {
      const found = key(params, caller);
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
      return ok(keyAnswer(key(params, caller), contract), requestId);
    },
    updateDataPipe({ params, body, caller, requestId }) {
      const found = pipe(params, caller);
      applyPipePatch(state, found, bodyOf(deps, PipePatch, body), deps.tableMappingOrder);
      found.updatedAt = now();
      return ok(found, requestId);
    },
    getDataPipe({ params, caller, requestId }) {
      return ok(pipe(params, caller), requestId);
    },
    listReversePrivateEndpoints({ params, caller, requestId }) {
      const owner = service(params, caller);
      const listed = state.endpoints.filter((e) => e.serviceId === owner.id);
      return ok(
        listed.map((e) => endpointAnswer(e, contract)),
        requestId,
      );
    },
    getReversePrivateEndpoint({ params, caller, requestId }) {
      const owner = service(params, caller);
      const found = state.endpoints.find(
        (e) => e.id === params.reversePrivateEndpointId && e.serviceId === owner.id,
      );
      if (!found)
        throw notFound(
          `reverse private endpoint ${params.reversePrivateEndpointId} does not exist in service ${owner.id}`,
        );
      return ok(endpointAnswer(found, contract), requestId);
    },
    createReversePrivateEndpoint({ params, body, caller, requestId }) {
      const owner = service(params, caller);
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
    listBackups({ params, caller, requestId }) {
      const owner = service(params, caller);
      const backups = state.backups.filter((b) => b.serviceId === owner.id).sort(newestFirst(contract));
      return ok(
        backups.map((b) => backupAnswer(b, contract)),
        requestId,
      );
    },
  };
}

type SourceKind = keyof DataPipe["source"];

/**
 * Applies a validated pipe PATCH: only sent fields change; lists replace, except postgres table
 * mappings, a set keyed by (sourceSchemaName, sourceTable, targetTable). Credentials are accepted and
 * dropped, as results never carry them. Throws a 400 Rejection when the body names a source kind the
 * pipe does not have or an endpoint its service does not have.
 */
function applyPipePatch(
  state: PlatformState,
  pipe: DataPipe,
  patch: PipePatch,
  order: TableMappingOrder,
): void {
  const { validateSamples: _validateSamples, ...kinds } = patch.source ?? {};
  const current = (Object.keys(pipe.source) as SourceKind[]).find((k) => pipe.source[k] !== undefined);
  for (const kind of Object.keys(kinds) as SourceKind[]) {
    if (kinds[kind] !== undefined && kind !== current) {
      throw badRequest(`source.${kind}: the pipe's source is ${current ?? "unset"}, not ${kind}`);
    }
  }

  if (kinds.kafka && pipe.source.kafka) {
    const { credentials: _credentials, ...fields } = kinds.kafka;
    for (const id of fields.reversePrivateEndpointIds ?? []) {
      if (!state.endpoints.some((e) => e.id === id && e.serviceId === pipe.serviceId)) {
        throw badRequest(
          `source.kafka.reversePrivateEndpointIds: endpoint ${id} does not exist in service ${pipe.serviceId}`,
        );
      }
    }
    Object.assign(pipe.source.kafka, fields);
  }
  if (kinds.objectStorage && pipe.source.objectStorage) {
    // connectionString may embed an account key, so like every credential it is not kept for results.
    const { accessKey: _accessKey, connectionString: _connectionString, ...fields } = kinds.objectStorage;
    Object.assign(pipe.source.objectStorage, fields);
  }
  if (kinds.kinesis && pipe.source.kinesis) {
    const { accessKey: _accessKey, ...fields } = kinds.kinesis;
    Object.assign(pipe.source.kinesis, fields);
  }
  if (kinds.postgres && pipe.source.postgres) {
    const postgres = pipe.source.postgres;
    const {
      credentials: _credentials,
      settings,
      tableMappingsToAdd,
      tableMappingsToRemove,
      ...fields
    } = kinds.postgres;
    Object.assign(postgres, fields);
    if (settings) postgres.settings = { ...postgres.settings, ...settings };
    const key = (m: { sourceSchemaName: string; sourceTable: string; targetTable: string }) =>
      JSON.stringify([m.sourceSchemaName, m.sourceTable, m.targetTable]);
    const removed = new Set((tableMappingsToRemove ?? []).map(key));
    const remove = () => {
      postgres.tableMappings = postgres.tableMappings.filter((m) => !removed.has(key(m)));
    };
    // Either order is the platform's right: with add first, a mapping both added and removed is gone.
    if (order === "remove-first") remove();
    for (const mapping of tableMappingsToAdd ?? []) {
      postgres.tableMappings = [...postgres.tableMappings.filter((m) => key(m) !== key(mapping)), mapping];
    }
    if (order === "add-first") remove();
  }

  if (patch.name !== undefined) pipe.name = patch.name;
  if (patch.destination) pipe.destination.columns = patch.destination.columns;
  if (patch.fieldMappings) pipe.fieldMappings = patch.fieldMappings;
  if (patch.settings) pipe.settings = { ...pipe.settings, ...definedOnly(patch.settings) };
}

function definedOnly<T extends object>(value: T): Record<string, number | boolean> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}
