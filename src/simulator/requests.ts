import { z } from "zod";
import { badRequest } from "./http.js";
import {
  KeyRole,
  MINIMAL_ENDPOINT_TYPES,
  MskAuthentication,
  Series,
  TableMapping,
  TileFields,
} from "./model.js";

/**
 * The request bodies both APIs accept in the simulator's `minimal` mode, field for field from the
 * minimal contract's request tables (docs/platform-apis.md), and nothing else: an unknown field, a
 * wrong type or a missing conditional field is a 400 naming the field, so the simulator catches
 * driftless's own mistakes before the real platform would. (The `full` mode checks requests against
 * contracts/full/ instead.)
 */

const Text = z.string();
const Credentials = z.strictObject({ username: Text, password: Text });
const AccessKey = z.strictObject({ accessKeyId: Text, secretKey: Text });
const Named = <Shape extends z.ZodRawShape>(fields: Shape) => z.strictObject(fields).partial();

// Whether a nested `description` is required is not shown; a missing one is kept as "".
const Described = <Shape extends z.ZodRawShape>(fields: Shape) =>
  z.strictObject({ ...fields, description: Text.default("") });

export const OrganizationPatch = z.strictObject({
  name: Text.optional(),
  privateEndpoints: z
    .strictObject({
      add: z.array(Described({ id: Text })).optional(),
      remove: z.array(Described({ id: Text })).optional(),
    })
    .optional(),
});
export type OrganizationPatch = z.infer<typeof OrganizationPatch>;

/** ISO-8601 date-time or date; null or "" means the key never expires. */
const ExpireAt = z.union([z.iso.datetime({ offset: true }), z.iso.date(), z.literal(""), z.null()]);

export const KeyPatch = z.strictObject({
  name: Text.optional(),
  roles: z.array(KeyRole).min(1).optional(),
  expireAt: ExpireAt.optional(),
  ipAccessList: z.array(Described({ source: Text })).optional(),
});
export type KeyPatch = z.infer<typeof KeyPatch>;

const int = () => z.int().optional();
const bool = () => z.boolean().optional();

export const PipeSettings = z.strictObject({
  streaming_max_insert_wait_ms: int(),
  object_storage_concurrency: int(),
  object_storage_polling_interval_ms: int(),
  object_storage_max_insert_bytes: int(),
  object_storage_max_file_count: int(),
  engine_max_threads: int(),
  engine_max_insert_threads: int(),
  engine_min_insert_block_size_bytes: int(),
  engine_max_download_threads: int(),
  engine_parallel_distributed_insert_select: int(),
  object_storage_use_cluster_function: bool(),
  engine_parallel_view_processing: bool(),
});

export const PipePatch = z.strictObject({
  name: Text.optional(),
  source: z
    .strictObject({
      kafka: Named({
        iamRole: Text,
        caCertificate: Text,
        reversePrivateEndpointIds: z.array(Text),
        credentials: Credentials,
      }).optional(),
      objectStorage: Named({
        iamRole: Text,
        connectionString: Text,
        path: Text,
        azureContainerName: Text,
        accessKey: AccessKey,
      }).optional(),
      kinesis: Named({ iamRole: Text, accessKey: AccessKey }).optional(),
      postgres: Named({
        host: Text,
        port: z.number(),
        database: Text,
        credentials: Credentials,
        settings: Named({ syncIntervalSeconds: z.number(), pullBatchSize: z.number() }),
        tableMappingsToAdd: z.array(TableMapping),
        tableMappingsToRemove: z.array(
          z.strictObject({ sourceSchemaName: Text, sourceTable: Text, targetTable: Text }),
        ),
      }).optional(),
      validateSamples: z.boolean().optional(),
    })
    .optional(),
  destination: z.strictObject({ columns: z.array(z.strictObject({ name: Text, type: Text })) }).optional(),
  fieldMappings: z.array(z.strictObject({ sourceField: Text, destinationField: Text })).optional(),
  settings: PipeSettings.optional(),
});
export type PipePatch = z.infer<typeof PipePatch>;

const NullableText = Text.nullable().optional();

/** The fields each endpoint type requires; the API leaves VPC_ENDPOINT_SERVICE open, its name is the sane need. */
const REQUIRED_BY_TYPE = {
  VPC_ENDPOINT_SERVICE: ["vpcEndpointServiceName"],
  VPC_RESOURCE: ["vpcResourceConfigurationId", "vpcResourceShareArn"],
  MSK_MULTI_VPC: ["mskClusterArn", "mskAuthentication"],
} as const;

export const EndpointCreate = z
  .strictObject({
    description: Text.max(255).optional(),
    type: z.enum(MINIMAL_ENDPOINT_TYPES),
    vpcEndpointServiceName: NullableText,
    vpcResourceConfigurationId: NullableText,
    vpcResourceShareArn: NullableText,
    mskClusterArn: NullableText,
    mskAuthentication: MskAuthentication.nullable().optional(),
  })
  .superRefine((body, context) => {
    for (const field of REQUIRED_BY_TYPE[body.type]) {
      if (body[field] === undefined || body[field] === null || body[field] === "") {
        context.addIssue({ code: "custom", path: [field], message: `required when type is ${body.type}` });
      }
    }
  });
export type EndpointCreate = z.infer<typeof EndpointCreate>;

export const DashboardPut = z.strictObject({
  name: Text,
  // A tile as results show it, except that a new tile comes without an id.
  tiles: z.array(z.strictObject({ ...TileFields, id: Text.optional(), series: z.array(Series) })),
  tags: z.array(Text).optional(),
});
export type DashboardPut = z.infer<typeof DashboardPut>;

/** The body as `schema` describes it; throws a 400 Rejection naming the first bad field. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  if (body === undefined) throw badRequest("body: a JSON object is required");
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (!issue) throw badRequest("body: invalid");
  const path = issue.path.map(String).join(".");
  if (issue.code === "unrecognized_keys") {
    const field = [path, issue.keys[0]].filter(Boolean).join(".");
    throw badRequest(`${field}: unknown field`);
  }
  throw badRequest(`${path || "body"}: ${issue.message}`);
}
