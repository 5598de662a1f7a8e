import { z } from "zod";
import type { Priority } from "./budget.js";
import type { HttpClient } from "./http.js";

/**
 * The management API (seeds/management-api.md): one method per endpoint. Request bodies are typed from
 * the seed's request tables; answers are checked for the `{status, requestId, result}` envelope and the
 * few result fields driftless uses, and every other field is kept as it came (a platform that adds
 * fields or enum values must never crash a pass).
 */

/** The Authorization header value of a management key. */
export function basicAuthorization(keyId: string, keySecret: string): string {
  return `Basic ${Buffer.from(`${keyId}:${keySecret}`).toString("base64")}`;
}

export const MANAGEMENT_ROUTES = {
  organization: "/v1/organizations/{organizationId}",
  apiKey: "/v1/organizations/{organizationId}/keys/{keyId}",
  dataPipe: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}",
  reversePrivateEndpoints:
    "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints",
  backups: "/v1/organizations/{organizationId}/services/{serviceId}/backups",
} as const;

// Request bodies, as the seed's request tables give them. Every field is optional: which are required
// is "not shown", and the planner sends only what changed.

export type PrivateEndpointEntry = { id: string; description: string };

export type UpdateOrganizationBody = {
  name?: string;
  privateEndpoints?: { add?: PrivateEndpointEntry[]; remove?: PrivateEndpointEntry[] };
};

export type IpAccessEntry = { source: string; description: string };

export type UpdateApiKeyBody = {
  name?: string;
  /** At least one of `admin`, `developer`, `query_endpoints`. */
  roles?: string[];
  /** ISO-8601; null or "" means the key never expires. */
  expireAt?: string | null;
  ipAccessList?: IpAccessEntry[];
};

export type AccessKey = { accessKeyId: string; secretKey: string };
export type UsernamePassword = { username: string; password: string };

export type TableMapping = {
  sourceSchemaName: string;
  sourceTable: string;
  targetTable: string;
  excludedColumns?: string[];
  useCustomSortingKey?: boolean;
  sortingKeys?: string[];
};

export type TableMappingRef = { sourceSchemaName: string; sourceTable: string; targetTable: string };

export type DataPipeSettings = {
  streaming_max_insert_wait_ms?: number;
  object_storage_concurrency?: number;
  object_storage_polling_interval_ms?: number;
  object_storage_max_insert_bytes?: number;
  object_storage_max_file_count?: number;
  engine_max_threads?: number;
  engine_max_insert_threads?: number;
  engine_min_insert_block_size_bytes?: number;
  engine_max_download_threads?: number;
  engine_parallel_distributed_insert_select?: number;
  object_storage_use_cluster_function?: boolean;
  engine_parallel_view_processing?: boolean;
};

export type UpdateDataPipeBody = {
  name?: string;
  source?: {
    kafka?: {
      iamRole?: string;
      caCertificate?: string;
      reversePrivateEndpointIds?: string[];
      credentials?: UsernamePassword;
    };
    objectStorage?: {
      iamRole?: string;
      connectionString?: string;
      path?: string;
      azureContainerName?: string;
      accessKey?: AccessKey;
    };
    kinesis?: { iamRole?: string; accessKey?: AccessKey };
    postgres?: {
      host?: string;
      port?: number;
      database?: string;
      credentials?: UsernamePassword;
      settings?: { syncIntervalSeconds?: number; pullBatchSize?: number };
      tableMappingsToAdd?: TableMapping[];
      tableMappingsToRemove?: TableMappingRef[];
    };
    validateSamples?: boolean;
  };
  destination?: { columns?: { name: string; type: string }[] };
  fieldMappings?: { sourceField: string; destinationField: string }[];
  settings?: DataPipeSettings;
};

export type ReversePrivateEndpointType = "VPC_ENDPOINT_SERVICE" | "VPC_RESOURCE" | "MSK_MULTI_VPC";

export type CreateReversePrivateEndpointBody = {
  /** At most 255 characters. */
  description: string;
  type: ReversePrivateEndpointType;
  vpcEndpointServiceName?: string | null;
  /** Required for VPC_RESOURCE. */
  vpcResourceConfigurationId?: string | null;
  /** Required for VPC_RESOURCE. */
  vpcResourceShareArn?: string | null;
  /** Required for MSK_MULTI_VPC. */
  mskClusterArn?: string | null;
  /** Required for MSK_MULTI_VPC. */
  mskAuthentication?: "SASL_IAM" | "SASL_SCRAM" | null;
};

// Results: only the fields driftless reads are checked; the rest pass through untouched.

export const Organization = z.looseObject({
  id: z.string(),
  name: z.string().optional(),
  privateEndpoints: z.array(z.looseObject({ id: z.string(), description: z.string().nullish() })).nullish(),
});
export type Organization = z.infer<typeof Organization>;

export const ApiKey = z.looseObject({
  id: z.string(),
  name: z.string().optional(),
  roles: z.array(z.string()).nullish(),
  /** `enabled` and `disabled` are known; others are kept as they come. */
  state: z.string().nullish(),
  expireAt: z.string().nullish(),
  ipAccessList: z.array(z.looseObject({ source: z.string(), description: z.string().nullish() })).nullish(),
});
export type ApiKey = z.infer<typeof ApiKey>;

export const DataPipe = z.looseObject({
  id: z.string(),
  name: z.string().optional(),
  /** Values not shown in the seed. */
  state: z.string().nullish(),
});
export type DataPipe = z.infer<typeof DataPipe>;

export const ReversePrivateEndpoint = z.looseObject({
  id: z.string(),
  description: z.string().nullish(),
  type: z.string().nullish(),
  endpointId: z.string().nullish(),
  /** `Ready` occurs; other values are not shown and are kept as they come. */
  status: z.string().nullish(),
});
export type ReversePrivateEndpoint = z.infer<typeof ReversePrivateEndpoint>;

export const Backup = z.looseObject({
  id: z.string(),
  startedAt: z.string().nullish(),
  finishedAt: z.string().nullish(),
  sizeInBytes: z.number().nullish(),
  durationInSeconds: z.number().nullish(),
});
export type Backup = z.infer<typeof Backup>;

/** The management answer: `{status, requestId, result}`. */
const envelope = <T extends z.ZodType>(result: T) =>
  z.looseObject({ status: z.number().optional(), requestId: z.string().optional(), result });

export type ManagementAnswer<T> = { result: T; requestId?: string };

/** Per call: the budget priority (default "change" for writes, "poll" for reads) and an abort signal. */
export type CallOptions = { priority?: Priority; signal?: AbortSignal };

export interface ManagementClient {
  updateOrganization(
    organizationId: string,
    body: UpdateOrganizationBody,
    options?: CallOptions,
  ): Promise<ManagementAnswer<Organization>>;
  updateApiKey(
    organizationId: string,
    keyId: string,
    body: UpdateApiKeyBody,
    options?: CallOptions,
  ): Promise<ManagementAnswer<ApiKey>>;
  updateDataPipe(
    organizationId: string,
    serviceId: string,
    dataPipeId: string,
    body: UpdateDataPipeBody,
    options?: CallOptions,
  ): Promise<ManagementAnswer<DataPipe>>;
  /** Never retried once it may have reached the server: throws UnknownOutcomeError instead. */
  createReversePrivateEndpoint(
    organizationId: string,
    serviceId: string,
    body: CreateReversePrivateEndpointBody,
    options?: CallOptions,
  ): Promise<ManagementAnswer<ReversePrivateEndpoint>>;
  /** Most recent first, as the platform returns them. */
  listBackups(
    organizationId: string,
    serviceId: string,
    options?: CallOptions,
  ): Promise<ManagementAnswer<Backup[]>>;
}

/** The management client over `http` (built with api "management" and basicAuthorization). */
export function createManagementClient(http: HttpClient): ManagementClient {
  async function call<T extends z.ZodType>(
    method: "GET" | "PATCH" | "POST",
    route: string,
    params: Record<string, string>,
    result: T,
    body: unknown,
    options: CallOptions = {},
  ): Promise<ManagementAnswer<z.infer<T>>> {
    const answer = await http.request({
      method,
      route,
      params,
      body,
      schema: envelope(result),
      priority: options.priority ?? (method === "GET" ? "poll" : "change"),
      signal: options.signal,
    });
    const requestId = answer.data.requestId ?? answer.requestId;
    return { result: answer.data.result as z.infer<T>, ...(requestId ? { requestId } : {}) };
  }

  return {
    updateOrganization: (organizationId, body, options) =>
      call("PATCH", MANAGEMENT_ROUTES.organization, { organizationId }, Organization, body, options),
    updateApiKey: (organizationId, keyId, body, options) =>
      call("PATCH", MANAGEMENT_ROUTES.apiKey, { organizationId, keyId }, ApiKey, body, options),
    updateDataPipe: (organizationId, serviceId, dataPipeId, body, options) =>
      call(
        "PATCH",
        MANAGEMENT_ROUTES.dataPipe,
        { organizationId, serviceId, dataPipeId },
        DataPipe,
        body,
        options,
      ),
    createReversePrivateEndpoint: (organizationId, serviceId, body, options) =>
      call(
        "POST",
        MANAGEMENT_ROUTES.reversePrivateEndpoints,
        { organizationId, serviceId },
        ReversePrivateEndpoint,
        body,
        options,
      ),
    listBackups: (organizationId, serviceId, options) =>
      call(
        "GET",
        MANAGEMENT_ROUTES.backups,
        { organizationId, serviceId },
        z.array(Backup),
        undefined,
        options,
      ),
  };
}
