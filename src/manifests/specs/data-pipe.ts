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
 * body's fields, field for field from the API (docs/platform-apis.md#update-a-data-pipe). Result-only fields (brokers, topics, offset, ...) are
 * not settable through this endpoint and are therefore errors here.
 */

const Credentials = z.strictObject({ username: NonEmpty, password: SecretRef });
const AccessKey = z.strictObject({ accessKeyId: SecretRef, secretKey: SecretRef });

export const KafkaSource = z.strictObject({
  iamRole: NonEmpty.optional(),
  caCertificate: NonEmpty.optional(),
  reversePrivateEndpointIds: z.array(Uuid).optional(),
  /** driftless's addition: ReversePrivateEndpoint manifest names, sent as their server-assigned ids. */
  reversePrivateEndpoints: z.array(ManifestName).optional(),
  credentials: Credentials.optional(),
});

export const ObjectStorageSource = z.strictObject({
  iamRole: NonEmpty.optional(),
  connectionString: SecretRef.optional(),
  path: NonEmpty.optional(),
  azureContainerName: NonEmpty.optional(),
  accessKey: AccessKey.optional(),
});

export const KinesisSource = z.strictObject({
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

export const DataPipeSpec = z.strictObject({
  organizationId: Uuid,
  serviceId: Uuid,
  dataPipeId: Uuid,
  // Only the ids are required: a field left out is not managed (a PATCH leaves it as it is).
  name: NonEmpty.optional(),
  source: DataPipeSource.optional(),
  destination: z
    .strictObject({
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
});
export type DataPipeSpec = z.infer<typeof DataPipeSpec>;

export const DataPipe = manifestDocument("DataPipe", DataPipeSpec);
export type DataPipe = z.infer<typeof DataPipe>;
