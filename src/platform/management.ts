import { z } from "zod";

/**
 * The management API's types (docs/platform-apis.md#management-endpoints): request bodies as the API takes
 * them, and the few answer fields driftless reads; every other answer field is kept as it came (a
 * platform that adds fields or enum values must never crash a pass). The endpoints are in routes.ts.
 */

/** The Authorization header value of a management key. */
export function basicAuthorization(keyId: string, keySecret: string): string {
  return `Basic ${Buffer.from(`${keyId}:${keySecret}`).toString("base64")}`;
}

// Request bodies, as the API's request tables give them. Every field is optional: the API does not say
// which are required, and the planner sends only what changed.

/**
 * A credential in a request body: a string on the wire, and until the sender reveals it, an object that
 * masks itself everywhere else (plan/secret.ts).
 */
export type Sensitive = string | { reveal(): string };

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
  /** ISO-8601; null means the key never expires (both contracts take null; only the minimal one ""). */
  expireAt?: string | null;
  ipAccessList?: IpAccessEntry[];
  /** The published contract's; sent only when a manifest states it. */
  state?: "enabled" | "disabled";
};

export type AccessKey = { accessKeyId: Sensitive; secretKey: Sensitive };
export type UsernamePassword = { username: string; password: Sensitive };

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
      connectionString?: Sensitive;
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

export type ReversePrivateEndpointType =
  | "VPC_ENDPOINT_SERVICE"
  | "VPC_RESOURCE"
  | "MSK_MULTI_VPC"
  /** The published contract's only. */
  | "GCP_PSC_SERVICE_ATTACHMENT";

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
  /** Required for GCP_PSC_SERVICE_ATTACHMENT. */
  gcpServiceAttachment?: string | null;
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
  /** Values the API does not list. */
  state: z.string().nullish(),
});
export type DataPipe = z.infer<typeof DataPipe>;

export const ReversePrivateEndpoint = z.looseObject({
  /** Recorded as the endpoint's identity: an answer without a usable id leaves the create's outcome unknown. */
  id: z.string().min(1),
  description: z.string().nullish(),
  type: z.string().nullish(),
  endpointId: z.string().nullish(),
  /** `Ready` occurs; the published contract names eight (docs/platform-apis.md#reverse-private-endpoint-status); any is kept. */
  status: z.string().nullish(),
});
export type ReversePrivateEndpoint = z.infer<typeof ReversePrivateEndpoint>;

/**
 * A backup. The published contract adds `status` (done, error, in_progress) and `type`, and gives
 * `finishedAt` only once finished (docs/platform-apis.md#backups).
 */
export const Backup = z.looseObject({
  id: z.string(),
  status: z.string().nullish(),
  startedAt: z.string().nullish(),
  finishedAt: z.string().nullish(),
  sizeInBytes: z.number().nullish(),
  durationInSeconds: z.number().nullish(),
});
export type Backup = z.infer<typeof Backup>;
