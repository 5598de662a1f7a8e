import { createHash } from "node:crypto";
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

export type OrganizationUpdate = {
  name?: string;
  privateEndpoints?: { add?: PrivateEndpointEntry[]; remove?: PrivateEndpointEntry[] };
};

export type IpAccessEntry = { source: string; description: string };

export type ApiKeyUpdate = {
  name?: string;
  /** At least one of `admin`, `developer`, `query_endpoints`. */
  roles?: string[];
  /** ISO-8601; null means the key never expires (both contracts take null; only the minimal one ""). */
  expireAt?: string | null;
  ipAccessList?: IpAccessEntry[];
  /** The published contract's; sent only when a manifest states it. */
  state?: "enabled" | "disabled";
};

/**
 * A key's id and secret as the key create's `hashData` carries them, made by the caller: the base64 of
 * the raw SHA-256 digest of each, and the id's last four characters in clear
 * (docs/platform-apis.md#create-an-api-key). Only these leave driftless; the platform never sees the
 * secret.
 */
export type KeyHashes = { keyIdHash: string; keyIdSuffix: string; keySecretHash: string };

/** The hashData of a key id and secret, by the recipe the published contract gives. */
export function keyHashes(keyId: string, keySecret: string): KeyHashes {
  const digest = (value: string) => createHash("sha256").update(value, "utf8").digest("base64");
  return { keyIdHash: digest(keyId), keyIdSuffix: keyId.slice(-4), keySecretHash: digest(keySecret) };
}

/**
 * The published key create as driftless sends it: always with `hashData`, so that the answer carries no
 * credential. `key.id` of the answer (the id of the key's paths) is not the id that authenticates.
 */
export type ApiKeyCreate = {
  name: string;
  hashData: KeyHashes;
  roles?: string[];
  expireAt?: string | null;
  ipAccessList?: IpAccessEntry[];
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

export type DataPipeUpdate = {
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
  destination?: { columns?: Column[] };
  fieldMappings?: FieldMapping[];
  settings?: DataPipeSettings;
};

export type Column = { name: string; type: string };
export type FieldMapping = { sourceField: string; destinationField: string };

/** The published contract's per-pipe scaling (Kafka, Kinesis and object-storage pipes); null leaves a field as it is. */
export type DataPipeScaling = {
  replicas?: number | null;
  replicaCpuMillicores?: number | null;
  replicaMemoryGb?: number | null;
};

/**
 * The published data pipe create (docs/platform-apis.md#create-a-data-pipe): one source kind, and
 * unless it is postgres, a destination table with its columns, each named by a field mapping.
 * Credentials are sent and never answered.
 */
export type DataPipeCreate = {
  name: string;
  source: {
    kafka?: {
      type?: string;
      format?: string;
      brokers?: string;
      topics?: string;
      consumerGroup?: string;
      authentication?: string;
      iamRole?: string;
      offset?: { strategy: string; timestamp?: string };
      schemaRegistry?: {
        url: string;
        authentication?: string;
        caCertificate?: string;
        credentials?: UsernamePassword;
      };
      caCertificate?: string;
      reversePrivateEndpointIds?: string[];
      exactlyOnce?: boolean;
      credentials?: UsernamePassword | AccessKey;
    };
    objectStorage?: {
      type?: string;
      format?: string;
      url?: string;
      delimiter?: string;
      compression?: string;
      isContinuous?: boolean;
      queueUrl?: string;
      authentication?: string;
      iamRole?: string;
      connectionString?: Sensitive;
      path?: string;
      azureContainerName?: string;
      accessKey?: AccessKey;
      serviceAccountKey?: Sensitive;
    };
    kinesis?: {
      format?: string;
      streamName?: string;
      region?: string;
      useEnhancedFanOut?: boolean;
      iteratorType?: string;
      timestamp?: number;
      authentication?: string;
      iamRole?: string;
      accessKey?: AccessKey;
    };
    postgres?: {
      type?: string;
      host?: string;
      port?: number;
      database?: string;
      credentials?: UsernamePassword;
      settings?: Record<string, string | number | boolean>;
      authentication?: string;
      iamRole?: string;
      tlsHost?: string;
      caCertificate?: string;
      disableTls?: boolean;
      skipCertVerification?: boolean;
      tableMappings?: TableMapping[];
    };
    validateSamples?: boolean;
  };
  destination?: {
    database?: string;
    table?: string;
    managedTable?: boolean;
    tableDefinition?: Record<string, unknown>;
    columns?: Column[];
    roles?: string[];
  };
  fieldMappings?: FieldMapping[];
  scaling?: DataPipeScaling;
  settings?: DataPipeSettings;
};

/** A pipe's state command: `stop` from any state, `start` from Stopped or Failed, `resync` for database pipes. */
export type DataPipeCommand = "start" | "stop" | "resync";
export type DataPipeStateUpdate = { command: DataPipeCommand };

export type ReversePrivateEndpointType =
  | "VPC_ENDPOINT_SERVICE"
  | "VPC_RESOURCE"
  | "MSK_MULTI_VPC"
  /** The published contract's only. */
  | "GCP_PSC_SERVICE_ATTACHMENT";

export type ReversePrivateEndpointCreate = {
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

export const OrganizationAnswer = z.looseObject({
  id: z.string(),
  name: z.string().optional(),
  privateEndpoints: z.array(z.looseObject({ id: z.string(), description: z.string().nullish() })).nullish(),
});
export type OrganizationAnswer = z.infer<typeof OrganizationAnswer>;

export const ApiKeyAnswer = z.looseObject({
  id: z.string(),
  name: z.string().optional(),
  roles: z.array(z.string()).nullish(),
  /** `enabled` and `disabled` are known; others are kept as they come. */
  state: z.string().nullish(),
  expireAt: z.string().nullish(),
  ipAccessList: z.array(z.looseObject({ source: z.string(), description: z.string().nullish() })).nullish(),
  /** The last four characters of the id that authenticates (which is not `id`); the published contract's. */
  keySuffix: z.string().nullish(),
});
export type ApiKeyAnswer = z.infer<typeof ApiKeyAnswer>;

/**
 * The answer of a key create: the key. Without `hashData` it would also carry `keyId` and `keySecret`,
 * which driftless never asks for (it always sends hashData) and never reads.
 */
export const ApiKeyCreated = z.looseObject({ key: ApiKeyAnswer });
export type ApiKeyCreated = z.infer<typeof ApiKeyCreated>;

export const DataPipeAnswer = z.looseObject({
  id: z.string(),
  name: z.string().optional(),
  /** Values the API does not list. */
  state: z.string().nullish(),
  /** The published contract's, for Kafka, Kinesis and object-storage pipes. */
  scaling: z
    .looseObject({
      replicas: z.number().nullish(),
      replicaCpuMillicores: z.number().nullish(),
      replicaMemoryGb: z.number().nullish(),
    })
    .nullish(),
});
export type DataPipeAnswer = z.infer<typeof DataPipeAnswer>;

export const ReversePrivateEndpointAnswer = z.looseObject({
  /** Recorded as the endpoint's identity: an answer without a usable id leaves the create's outcome unknown. */
  id: z.string().min(1),
  description: z.string().nullish(),
  type: z.string().nullish(),
  endpointId: z.string().nullish(),
  /** `Ready` occurs; the published contract names eight (docs/platform-apis.md#reverse-private-endpoint-status); any is kept. */
  status: z.string().nullish(),
});
export type ReversePrivateEndpointAnswer = z.infer<typeof ReversePrivateEndpointAnswer>;

/**
 * A backup. The published contract adds `status` (done, error, in_progress) and `type`, and gives
 * `finishedAt` only once finished (docs/platform-apis.md#backups).
 */
export const BackupAnswer = z.looseObject({
  id: z.string(),
  status: z.string().nullish(),
  startedAt: z.string().nullish(),
  finishedAt: z.string().nullish(),
  sizeInBytes: z.number().nullish(),
  durationInSeconds: z.number().nullish(),
});
export type BackupAnswer = z.infer<typeof BackupAnswer>;
