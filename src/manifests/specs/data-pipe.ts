import { z } from "zod";
import {
  Bool,
  EVEN_WITH_FIELD_PROBLEMS,
  Int,
  ManifestName,
  manifestDocument,
  NonEmpty,
  stringField,
  Uuid,
  uniqueIn,
} from "../fields.js";
import { SecretRef } from "../secrets.js";

/**
 * PATCH /v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}: the request
 * body's fields, field for field from the API (docs/platform-apis.md#update-a-data-pipe). A manifest
 * without a dataPipeId is created with the published POST (docs/platform-apis.md#create-a-data-pipe),
 * which also takes the fields only a create sets (a source's type and format, its brokers and topics,
 * the destination table, ...: CREATE_ONLY): those are errors in a manifest that adopts a pipe by id.
 */

const Credentials = z.strictObject({ username: NonEmpty, password: SecretRef });
const AccessKey = z.strictObject({ accessKeyId: SecretRef, secretKey: SecretRef });

/** A value the published contract lists, checked by `validate --contract full`; any non-empty string here. */
const Named = NonEmpty;

export const KafkaSource = z.strictObject({
  // Set only when driftless creates the pipe.
  type: Named.optional(),
  format: Named.optional(),
  brokers: NonEmpty.optional(),
  topics: NonEmpty.optional(),
  consumerGroup: NonEmpty.optional(),
  authentication: Named.optional(),
  offset: z.strictObject({ strategy: Named, timestamp: NonEmpty.optional() }).optional(),
  schemaRegistry: z
    .strictObject({
      url: NonEmpty,
      authentication: Named.optional(),
      caCertificate: NonEmpty.optional(),
      credentials: z.strictObject({ username: NonEmpty, password: SecretRef }).optional(),
    })
    .optional(),
  exactlyOnce: Bool.optional(),
  iamRole: NonEmpty.optional(),
  caCertificate: NonEmpty.optional(),
  reversePrivateEndpointIds: z.array(Uuid).optional(),
  /** driftless's addition: ReversePrivateEndpoint manifest names, sent as their server-assigned ids. */
  reversePrivateEndpoints: z.array(ManifestName).optional(),
  credentials: Credentials.optional(),
});

export const ObjectStorageSource = z.strictObject({
  // Set only when driftless creates the pipe.
  type: Named.optional(),
  format: Named.optional(),
  url: NonEmpty.optional(),
  delimiter: NonEmpty.optional(),
  compression: Named.optional(),
  isContinuous: Bool.optional(),
  queueUrl: NonEmpty.optional(),
  authentication: Named.optional(),
  serviceAccountKey: SecretRef.optional(),
  iamRole: NonEmpty.optional(),
  connectionString: SecretRef.optional(),
  path: NonEmpty.optional(),
  azureContainerName: NonEmpty.optional(),
  accessKey: AccessKey.optional(),
});

export const KinesisSource = z.strictObject({
  // Set only when driftless creates the pipe.
  format: Named.optional(),
  streamName: NonEmpty.optional(),
  region: NonEmpty.optional(),
  useEnhancedFanOut: Bool.optional(),
  iteratorType: Named.optional(),
  timestamp: Int().optional(),
  authentication: Named.optional(),
  iamRole: NonEmpty.optional(),
  accessKey: AccessKey.optional(),
});

export const TableMapping = z.strictObject({
  sourceSchemaName: NonEmpty,
  sourceTable: NonEmpty,
  targetTable: NonEmpty,
  excludedColumns: z.array(NonEmpty).optional(),
  useCustomSortingKey: Bool.optional(),
  sortingKeys: z.array(NonEmpty).optional(),
});
export type TableMapping = z.infer<typeof TableMapping>;

/** The identity of a table mapping: what `tableMappingsToRemove` names. */
export const tableMappingKey = (m: Pick<TableMapping, "sourceSchemaName" | "sourceTable" | "targetTable">) =>
  `${m.sourceSchemaName}.${m.sourceTable} -> ${m.targetTable}`;

export const PostgresSource = z.strictObject({
  // Set only when driftless creates the pipe.
  type: Named.optional(),
  authentication: Named.optional(),
  tlsHost: NonEmpty.optional(),
  caCertificate: NonEmpty.optional(),
  disableTls: Bool.optional(),
  skipCertVerification: Bool.optional(),
  host: NonEmpty.optional(),
  port: Int(1, 65535).optional(),
  database: NonEmpty.optional(),
  credentials: Credentials.optional(),
  // The API types these as numbers; a fractional interval or batch size has no meaning.
  settings: z
    .strictObject({ syncIntervalSeconds: Int(1).optional(), pullBatchSize: Int(1).optional() })
    .optional(),
  /** The desired list; driftless sends tableMappingsToAdd / tableMappingsToRemove. */
  tableMappings: uniqueIn(
    z.array(TableMapping),
    (item) => {
      const [schema, table, target] = ["sourceSchemaName", "sourceTable", "targetTable"].map((f) =>
        stringField(f)(item),
      );
      if (schema === undefined || table === undefined || target === undefined) return undefined;
      return tableMappingKey({ sourceSchemaName: schema, sourceTable: table, targetTable: target });
    },
    (key) => `table mapping ${key} is listed twice`,
  ).optional(),
});

export const SOURCE_KINDS = ["kafka", "objectStorage", "kinesis", "postgres"] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

/**
 * At most one source kind: a PATCH that names none leaves the pipe's source as it is, so only a
 * manifest that manages a kind's fields (its credentials, postgres tableMappings, ...) states it.
 */
export const DataPipeSource = z
  .strictObject({
    kafka: KafkaSource.optional(),
    objectStorage: ObjectStorageSource.optional(),
    kinesis: KinesisSource.optional(),
    postgres: PostgresSource.optional(),
    validateSamples: Bool.optional(),
  })
  .superRefine((source, ctx) => {
    const given = SOURCE_KINDS.filter((kind) => source[kind] !== undefined);
    if (given.length <= 1) return;
    ctx.addIssue({
      code: "custom",
      message: `names at most one of ${SOURCE_KINDS.join(", ")} (the pipe's own), not ${given.join(" and ")}`,
    });
  }, EVEN_WITH_FIELD_PROBLEMS);
export type DataPipeSource = z.infer<typeof DataPipeSource>;

const Column = z.strictObject({ name: NonEmpty, type: NonEmpty });
const FieldMapping = z.strictObject({ sourceField: NonEmpty, destinationField: NonEmpty });

/** The pipe settings table; defaults and bounds are not shown, so only the types are checked. */
export const PipeSettings = z.strictObject({
  streaming_max_insert_wait_ms: Int().optional(),
  object_storage_concurrency: Int().optional(),
  object_storage_polling_interval_ms: Int().optional(),
  object_storage_max_insert_bytes: Int().optional(),
  object_storage_max_file_count: Int().optional(),
  engine_max_threads: Int().optional(),
  engine_max_insert_threads: Int().optional(),
  engine_min_insert_block_size_bytes: Int().optional(),
  engine_max_download_threads: Int().optional(),
  engine_parallel_distributed_insert_select: Int().optional(),
  object_storage_use_cluster_function: Bool.optional(),
  engine_parallel_view_processing: Bool.optional(),
});
export type PipeSettings = z.infer<typeof PipeSettings>;

/**
 * The fields only a create sets, by dotted path: in a manifest that adopts a pipe by its dataPipeId they
 * are errors (no request can set them), and once driftless created the pipe a change of one is refused.
 */
export const CREATE_ONLY = [
  "source.kafka.type",
  "source.kafka.format",
  "source.kafka.brokers",
  "source.kafka.topics",
  "source.kafka.consumerGroup",
  "source.kafka.authentication",
  "source.kafka.offset",
  "source.kafka.schemaRegistry",
  "source.kafka.exactlyOnce",
  "source.objectStorage.type",
  "source.objectStorage.format",
  "source.objectStorage.url",
  "source.objectStorage.delimiter",
  "source.objectStorage.compression",
  "source.objectStorage.isContinuous",
  "source.objectStorage.queueUrl",
  "source.objectStorage.authentication",
  "source.objectStorage.serviceAccountKey",
  "source.kinesis.format",
  "source.kinesis.streamName",
  "source.kinesis.region",
  "source.kinesis.useEnhancedFanOut",
  "source.kinesis.iteratorType",
  "source.kinesis.timestamp",
  "source.kinesis.authentication",
  "source.postgres.type",
  "source.postgres.authentication",
  "source.postgres.tlsHost",
  "source.postgres.caCertificate",
  "source.postgres.disableTls",
  "source.postgres.skipCertVerification",
  "destination.database",
  "destination.table",
  "destination.managedTable",
  "destination.tableDefinition",
  "destination.roles",
] as const;

/** The published contract's per-pipe scaling (Kafka, Kinesis and object-storage pipes), sent when it changes. */
/**
 * CREATE_ONLY by the object that holds each field (`source.kafka`: `type`, `format`, ...), in its order:
 * a manifest or a body is looked at once per holder, not once per field.
 */
export const CREATE_ONLY_BY_HOLDER: readonly { holder: readonly string[]; leaves: readonly string[] }[] = [
  ...CREATE_ONLY.reduce((holders, path) => {
    const at = path.lastIndexOf(".");
    const holder = path.slice(0, at);
    return holders.set(holder, [...(holders.get(holder) ?? []), path.slice(at + 1)]);
  }, new Map<string, string[]>()),
].map(([holder, leaves]) => ({ holder: holder.split("."), leaves }));

export const PipeScaling = z.strictObject({
  replicas: Int(1, 40).optional(),
  replicaCpuMillicores: Int(125, 2000).optional(),
  replicaMemoryGb: z
    .number({ error: "must be a number from 0.5 to 8" })
    .min(0.5, { error: "must be a number from 0.5 to 8" })
    .max(8, { error: "must be a number from 0.5 to 8" })
    .optional(),
});
export type PipeScaling = z.infer<typeof PipeScaling>;

/** The source kinds whose pipes take a scaling of their own. */
const SCALED: readonly SourceKind[] = ["kafka", "objectStorage", "kinesis"];

export const DataPipeSpec = z
  .strictObject({
    organizationId: Uuid,
    serviceId: Uuid,
    /** The pipe's id: adopts an existing pipe. Absent: driftless creates the pipe. */
    dataPipeId: Uuid.optional(),
    // Only the ids are required: a field left out is not managed (a PATCH leaves it as it is).
    name: NonEmpty.optional(),
    source: DataPipeSource.optional(),
    destination: z
      .strictObject({
        database: NonEmpty.optional(),
        table: NonEmpty.optional(),
        managedTable: Bool.optional(),
        tableDefinition: z.record(z.string(), z.unknown(), { error: "must be a mapping" }).optional(),
        roles: z.array(NonEmpty).optional(),
        columns: uniqueIn(
          z.array(Column),
          stringField("name"),
          (name) => `column ${name} is listed twice`,
          "name",
        ).optional(),
      })
      .optional(),
    fieldMappings: z.array(FieldMapping).optional(),
    settings: PipeSettings.optional(),
    /** Whether the pipe runs: the published state command (start, stop) is sent when it differs. */
    state: z.enum(["running", "stopped"], { error: "must be running or stopped" }).optional(),
    scaling: PipeScaling.optional(),
  })
  .superRefine((spec, ctx) => {
    const issue = (path: (string | number)[], message: string) =>
      ctx.addIssue({ code: "custom", path, message });
    const kind = SOURCE_KINDS.find((k) => spec.source?.[k] !== undefined);
    if (spec.scaling && kind && !SCALED.includes(kind))
      issue(
        ["scaling"],
        `is for Kafka, Kinesis and object-storage pipes; a ${kind} pipe has none of its own`,
      );
    if (spec.dataPipeId !== undefined) {
      for (const { holder, leaves } of CREATE_ONLY_BY_HOLDER) {
        const found = valueAt(spec, holder);
        if (typeof found !== "object" || found === null) continue;
        for (const leaf of leaves) {
          if (Reflect.get(found, leaf) === undefined) continue;
          issue(
            [...holder, leaf],
            "is set only when driftless creates the pipe (no dataPipeId): no request changes it",
          );
        }
      }
      return;
    }
    // A pipe driftless creates names itself and its source.
    if (spec.name === undefined) issue(["name"], "is required to create a pipe (no dataPipeId)");
    if (kind === undefined)
      issue(["source"], `is required to create a pipe (no dataPipeId): one of ${SOURCE_KINDS.join(", ")}`);
  }, EVEN_WITH_FIELD_PROBLEMS);
export type DataPipeSpec = z.infer<typeof DataPipeSpec>;

/** The value at a dotted path of `value`, undefined where any step is missing. */
export function valueAt(value: unknown, path: string | readonly string[]): unknown {
  let node = value;
  for (const step of typeof path === "string" ? path.split(".") : path) {
    if (typeof node !== "object" || node === null) return undefined;
    node = Reflect.get(node, step);
  }
  return node;
}

export const DataPipe = manifestDocument("DataPipe", DataPipeSpec);
export type DataPipe = z.infer<typeof DataPipe>;
