import { z } from "zod";

/**
 * The simulated platform's resources, shaped as the APIs show them in results, plus the few
 * fields the platform keeps to itself (which organization a key belongs to, its secret). A fixture is
 * the whole platform at start; the same shapes are the live state tests read and change.
 */

const Text = z.string();
const Strings = z.array(z.string());

export const Organization = z.strictObject({
  id: Text,
  name: Text,
  createdAt: Text,
  privateEndpoints: z.array(z.strictObject({ id: Text, description: Text })).default([]),
  byocConfig: z.array(z.strictObject({ id: Text, accountName: Text })).default([]),
});
export type Organization = z.infer<typeof Organization>;

export const Service = z.strictObject({ id: Text, organizationId: Text, name: Text });
export type Service = z.infer<typeof Service>;

export const KeyRole = z.enum(["admin", "developer", "query_endpoints"]);

export const ApiKey = z.strictObject({
  id: Text,
  /** Not in results: the organization the key belongs to and may act on. */
  organizationId: Text,
  name: Text,
  roles: z.array(KeyRole).min(1),
  keySuffix: Text,
  createdAt: Text,
  expireAt: Text.nullable().default(null),
  usedAt: Text.nullable().default(null),
  ipAccessList: z.array(z.strictObject({ source: Text, description: Text })).default([]),
  state: z.enum(["enabled", "disabled"]).default("enabled"),
  /** Not in results: the secret that authenticates this key on the management API, when it may. */
  secret: Text.optional(),
  /**
   * Not in results: a created key's credentials, as the platform keeps them: the hashes of the id that
   * authenticates (not `id`) and of the secret (keys.ts). Safe to save; a key with them may call the API.
   */
  keyIdHash: Text.optional(),
  keySecretHash: Text.optional(),
});
export type ApiKey = z.infer<typeof ApiKey>;

export const TableMapping = z.strictObject({
  sourceSchemaName: Text,
  sourceTable: Text,
  targetTable: Text,
  excludedColumns: Strings.optional(),
  useCustomSortingKey: z.boolean().optional(),
  sortingKeys: Strings.optional(),
});
export type TableMapping = z.infer<typeof TableMapping>;

/** What every source kind may say of how it authenticates and what it reads (never a credential). */
const SourceCommon = { type: Text.optional(), format: Text.optional(), authentication: Text.optional() };

/** A pipe's source as results show it: the fields of the create and update, without credentials. */
export const PipeSource = z.strictObject({
  kafka: z
    .strictObject({
      ...SourceCommon,
      brokers: Text.optional(),
      topics: Text.optional(),
      consumerGroup: Text.optional(),
      iamRole: Text.optional(),
      offset: z.strictObject({ strategy: Text.optional(), timestamp: Text.optional() }).optional(),
      schemaRegistry: z
        .strictObject({
          url: Text.optional(),
          authentication: Text.optional(),
          caCertificate: Text.optional(),
        })
        .optional(),
      caCertificate: Text.optional(),
      reversePrivateEndpointIds: Strings.optional(),
      exactlyOnce: z.boolean().optional(),
    })
    .optional(),
  objectStorage: z
    .strictObject({
      ...SourceCommon,
      url: Text.optional(),
      delimiter: Text.optional(),
      compression: Text.optional(),
      isContinuous: z.boolean().optional(),
      queueUrl: Text.optional(),
      iamRole: Text.optional(),
      path: Text.optional(),
      azureContainerName: Text.optional(),
    })
    .optional(),
  kinesis: z
    .strictObject({
      ...SourceCommon,
      streamName: Text.optional(),
      region: Text.optional(),
      useEnhancedFanOut: z.boolean().optional(),
      iteratorType: Text.optional(),
      timestamp: z.number().optional(),
      iamRole: Text.optional(),
    })
    .optional(),
  postgres: z
    .strictObject({
      ...SourceCommon,
      host: Text.optional(),
      port: z.number().optional(),
      database: Text.optional(),
      settings: z.record(z.string(), z.union([z.number(), z.string(), z.boolean()])).optional(),
      iamRole: Text.optional(),
      tlsHost: Text.optional(),
      caCertificate: Text.optional(),
      disableTls: z.boolean().optional(),
      skipCertVerification: z.boolean().optional(),
      tableMappings: z.array(TableMapping).default([]),
    })
    .optional(),
});
export type PipeSource = z.infer<typeof PipeSource>;

/** A pipe's scaling (Kafka, Kinesis and object-storage pipes; database pipes share their service's). */
export const PipeScaling = z.strictObject({
  replicas: z.int().optional(),
  concurrency: z.int().optional(),
  replicaCpuMillicores: z.int().optional(),
  replicaMemoryGb: z.number().optional(),
});
export type PipeScaling = z.infer<typeof PipeScaling>;

export const DataPipe = z.strictObject({
  id: Text,
  serviceId: Text,
  name: Text,
  state: Text.default("Running"),
  scaling: PipeScaling.optional(),
  source: PipeSource,
  destination: z.strictObject({
    database: Text.default("default"),
    /** A database pipe (postgres) names no table: each of its mappings has one. */
    table: Text.optional(),
    managedTable: z.boolean().optional(),
    tableDefinition: z
      .strictObject({
        engine: z
          .strictObject({
            type: Text.optional(),
            versionColumnId: Text.optional(),
            columnIds: Strings.optional(),
          })
          .optional(),
        sortingKey: Strings.optional(),
        partitionBy: Text.optional(),
        primaryKey: Text.optional(),
      })
      .optional(),
    columns: z.array(z.strictObject({ name: Text, type: Text })).default([]),
    roles: Strings.optional(),
  }),
  fieldMappings: z.array(z.strictObject({ sourceField: Text, destinationField: Text })).default([]),
  settings: z.record(z.string(), z.union([z.number(), z.boolean()])).default({}),
  createdAt: Text,
  updatedAt: Text,
});
export type DataPipe = z.infer<typeof DataPipe>;

/** The endpoint types of the minimal contract; the published one adds GCP_PSC_SERVICE_ATTACHMENT. */
export const MINIMAL_ENDPOINT_TYPES = ["VPC_ENDPOINT_SERVICE", "VPC_RESOURCE", "MSK_MULTI_VPC"] as const;
export const EndpointType = z.enum([...MINIMAL_ENDPOINT_TYPES, "GCP_PSC_SERVICE_ATTACHMENT"]);
export const MskAuthentication = z.enum(["SASL_IAM", "SASL_SCRAM"]);

export const ReverseEndpoint = z.strictObject({
  id: Text,
  serviceId: Text,
  description: Text,
  type: EndpointType,
  vpcEndpointServiceName: Text.nullable(),
  vpcResourceConfigurationId: Text.nullable(),
  vpcResourceShareArn: Text.nullable(),
  mskClusterArn: Text.nullable(),
  mskAuthentication: MskAuthentication.nullable(),
  /** Set by the published contract's GCP_PSC_SERVICE_ATTACHMENT endpoints only. */
  gcpServiceAttachment: Text.nullable().optional(),
  endpointId: Text,
  dnsNames: Strings,
  privateDnsNames: Strings,
  status: Text,
});
export type ReverseEndpoint = z.infer<typeof ReverseEndpoint>;

export const BackupStatus = z.enum(["done", "error", "in_progress"]);
export type BackupStatus = z.infer<typeof BackupStatus>;

export const Backup = z.strictObject({
  id: Text,
  serviceId: Text,
  /** Answered by the published contract only (default done); the minimal one shows finished backups. */
  status: BackupStatus.optional(),
  type: z.enum(["full", "incremental"]).optional(),
  startedAt: Text,
  /** The published contract answers it only once finished (not while in_progress). */
  finishedAt: Text,
  sizeInBytes: z.number(),
  durationInSeconds: z.number(),
  backupName: Text,
  bucket: z.strictObject({ bucketPath: Text, iamRoleArn: Text, iamRoleSessionName: Text }),
});
export type Backup = z.infer<typeof Backup>;

/** Series types without an aggregate, in both contracts. */
const UNAGGREGATED = new Set(["search", "markdown"]);

/**
 * A series as the minimal contract shows it (type, dataSource, aggFn, where, groupBy), with the
 * published contract's optional series fields: the platform behind both needs a sourceId.
 */
export const Series = z
  .strictObject({
    type: Text,
    dataSource: Text.optional(),
    aggFn: Text.optional(),
    where: Text.optional(),
    groupBy: z.array(z.unknown()).optional(),
    sourceId: Text.optional(),
    whereLanguage: Text.optional(),
    field: Text.optional(),
    alias: Text.optional(),
    level: z.number().optional(),
    metricName: Text.optional(),
    metricDataType: Text.optional(),
    displayType: Text.optional(),
    sortOrder: Text.optional(),
    numberFormat: z.record(z.string(), z.unknown()).optional(),
    fields: Strings.optional(),
    content: Text.optional(),
  })
  .superRefine((series, context) => {
    if (series.aggFn === undefined && !UNAGGREGATED.has(series.type)) {
      context.addIssue({ code: "custom", path: ["aggFn"], message: `required when type is ${series.type}` });
    }
  });
export type Series = z.infer<typeof Series>;

/** A tile's place on the grid, as the minimal contract shows it: integers. */
export const TileFields = {
  id: Text,
  name: Text,
  x: z.int(),
  y: z.int(),
  w: z.int(),
  h: z.int(),
  asRatio: z.boolean().optional(),
};

/**
 * A stored tile: in `series` form (the minimal contract, and the fixture), or in `config` form (the
 * published contract stores every tile so, and answers only that form).
 */
export const Tile = z.strictObject({
  ...TileFields,
  x: z.number(),
  y: z.number(),
  w: z.number(),
  h: z.number(),
  series: z.array(Series).optional(),
  config: z.record(z.string(), z.unknown()).optional(),
  containerId: Text.optional(),
  tabId: Text.optional(),
});
export type Tile = z.infer<typeof Tile>;

export const Dashboard = z.strictObject({
  id: Text,
  name: Text,
  tiles: z.array(Tile),
  tags: Strings.default([]),
});
export type Dashboard = z.infer<typeof Dashboard>;

export const AlertChannel = z.strictObject({ type: Text, webhookId: Text.optional() });
export type AlertChannel = z.infer<typeof AlertChannel>;

/**
 * An alert, stored with the minimal contract's names (`team`, `dashboard`; the published contract
 * answers `teamId`, `dashboardId`) and the published contract's other fields, which a fixture may leave
 * out: a tile alert watches `dashboard`'s `tileId`, a saved-search alert its `savedSearchId`.
 */
export const Alert = z.strictObject({
  id: Text,
  name: Text.nullable(),
  message: Text.nullable(),
  note: Text.nullable().default(null),
  threshold: z.number(),
  thresholdMax: z.number().nullable().default(null),
  interval: Text,
  thresholdType: Text,
  source: Text,
  state: Text,
  channel: AlertChannel,
  /** Absent: `[channel]`. */
  channels: z.array(AlertChannel).optional(),
  scheduleOffsetMinutes: z.int().default(0),
  scheduleStartAt: Text.nullable().default(null),
  numConsecutiveWindows: z.int().nullable().default(null),
  groupBy: Text.nullable().default(null),
  team: Text,
  tileId: Text.nullable(),
  dashboard: Text.nullable(),
  savedSearchId: Text.nullable().default(null),
  createdAt: Text,
  updatedAt: Text,
});
export type Alert = z.infer<typeof Alert>;

export const WebhookService = z.enum(["slack", "incidentio", "generic"]);

/**
 * A webhook, an alert's channel. Its headers and query parameters, which may hold credentials, are
 * never answered, so the simulator does not keep them.
 */
export const Webhook = z.strictObject({
  id: Text,
  name: Text,
  service: WebhookService,
  url: Text,
  description: Text.optional(),
  body: Text.optional(),
  createdAt: Text,
  updatedAt: Text,
});
export type Webhook = z.infer<typeof Webhook>;

/** A saved search of the team: what a saved-search alert watches (no API of driftless's writes them). */
export const SavedSearch = z.strictObject({ id: Text, name: Text });
export type SavedSearch = z.infer<typeof SavedSearch>;

/** A source of the observability team: what a series' sourceId names (the published contract lists them). */
export const Source = z.strictObject({
  id: Text,
  name: Text,
  kind: z.enum(["log", "trace", "metric", "session", "promql"]),
  connection: Text,
  from: z.strictObject({ databaseName: Text, tableName: Text }),
  timestampValueExpression: Text.optional(),
});
export type Source = z.infer<typeof Source>;

/**
 * The whole platform at start. Management credentials are the keys that have a `secret` (the key's id
 * authenticates) or `keyIdHash` and `keySecretHash`; the observability API accepts each of
 * `observabilityTokens` as a Bearer token.
 */
export const Fixture = z.strictObject({
  /** The observability team every token acts for: the `teamId` of the alerts it creates. */
  teamId: Text.default("000000000000000000000001"),
  organizations: z.array(Organization).default([]),
  services: z.array(Service).default([]),
  keys: z.array(ApiKey).default([]),
  pipes: z.array(DataPipe).default([]),
  endpoints: z.array(ReverseEndpoint).default([]),
  backups: z.array(Backup).default([]),
  dashboards: z.array(Dashboard).default([]),
  alerts: z.array(Alert).default([]),
  webhooks: z.array(Webhook).default([]),
  sources: z.array(Source).default([]),
  savedSearches: z.array(SavedSearch).default([]),
  observabilityTokens: Strings.default([]),
});
export type Fixture = z.infer<typeof Fixture>;
/** A fixture as written by hand: fields with defaults may be left out. */
export type FixtureInput = z.input<typeof Fixture>;

/** The live platform: the fixture's shape, changed by requests and by tests (out-of-band edits). */
export type PlatformState = Fixture;
