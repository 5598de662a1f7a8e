import { newBackup } from "./backups.js";
import type { FixtureInput } from "./model.js";

/**
 * The platform the simulator starts with unless given a fixture. It holds exactly what examples/
 * manages, so `npm start` reconciles examples/ against it out of the box, plus the things a real
 * platform has that driftless did not make (an endpoint added in the console, backups, an alert, the
 * webhook it notifies, a saved search).
 */

/** The identifiers examples/ and the tests share with this fixture. */
export const defaultIds = {
  organizationId: "9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f",
  serviceId: "2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7",
  managementKeyId: "4c8e2a61-7d5b-4e3f-9a1c-0b2d3e4f5a6b",
  managementKeySecret: "sim-management-secret",
  observabilityToken: "sim-observability-token",
  ciDeployerKeyId: "6d1f3b85-2a4c-4e7d-b9f0-1c2d3e4f5a6c",
  kafkaPipeId: "1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b",
  objectStoragePipeId: "2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d",
  kinesisPipeId: "3b4c5d6e-7f8a-4b9c-8d1e-2f3a4b5c6d7e",
  postgresPipeId: "4c5d6e7f-8a9b-4c0d-9e2f-3a4b5c6d7e8f",
  dashboardId: "65f1a2b3c4d5e6f708192a3b",
  tileIds: ["65f1a2b3c4d5e6f708192a41", "65f1a2b3c4d5e6f708192a42", "65f1a2b3c4d5e6f708192a43"],
  alertId: "65f1a2b3c4d5e6f708192a51",
  /** The webhook the alert notifies, and a saved search a saved-search alert may watch. */
  webhookId: "65f1a2b3c4d5e6f708192a61",
  savedSearchId: "65f1a2b3c4d5e6f708192a81",
  teamId: "65f1a2b3c4d5e6f708192a01",
  consoleEndpointId: "pe-console-1",
  /** The team's sources, which a series' sourceId names: logs, traces, metrics. */
  sourceIds: ["65f1a2b3c4d5e6f708192a71", "65f1a2b3c4d5e6f708192a72", "65f1a2b3c4d5e6f708192a73"],
} as const;

const ids = defaultIds;
const created = "2025-01-15T09:30:00Z";
const HOUR = 3_600_000;

const destination = (table: string, columns: Array<[string, string]>) => ({
  database: "analytics",
  table,
  managedTable: true,
  columns: columns.map(([name, type]) => ({ name, type })),
});

const pipe = (id: string, name: string) => ({
  id,
  serviceId: ids.serviceId,
  name,
  state: "Running",
  scaling: { replicas: 1, concurrency: 2, replicaCpuMillicores: 500, replicaMemoryGb: 1.5 },
  createdAt: created,
  updatedAt: created,
});

/** Backups finished 1, 9 and 17 hours before `now`, most recent first, so a daily watch is fresh. */
const backups = (now: number) =>
  [1, 9, 17].map((hoursAgo, i) =>
    newBackup(ids.serviceId, new Date(now - hoursAgo * HOUR), {
      id: `7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0${i}`,
      durationInSeconds: 420 + i * 30,
      sizeInBytes: 52_428_800 - i * 1_048_576,
    }),
  );

const series = (where: string) => [
  { type: "time", dataSource: "events", sourceId: ids.sourceIds[0], aggFn: "count", where, groupBy: [] },
];

/** A source of the team, reading one table through the team's one connection. */
const source = (id: string, name: string, kind: "log" | "trace" | "metric", tableName: string) => ({
  id,
  name,
  kind,
  connection: "65f1a2b3c4d5e6f708192a70",
  from: { databaseName: "otel", tableName },
  timestampValueExpression: "TimestampTime",
});

/** The default platform; `now` (default: the current time) anchors the backups' times. */
export function defaultFixture(now: number = Date.now()): FixtureInput {
  return {
    organizations: [
      {
        id: ids.organizationId,
        name: "Acme Analytics",
        createdAt: "2024-11-02T08:00:00Z",
        privateEndpoints: [{ id: ids.consoleEndpointId, description: "added in the console" }],
        byocConfig: [],
      },
    ],
    services: [{ id: ids.serviceId, organizationId: ids.organizationId, name: "analytics" }],
    keys: [
      {
        id: ids.managementKeyId,
        organizationId: ids.organizationId,
        name: "driftless",
        roles: ["admin"],
        keySuffix: "5a6b",
        createdAt: created,
        secret: ids.managementKeySecret,
      },
      {
        id: ids.ciDeployerKeyId,
        organizationId: ids.organizationId,
        name: "ci-deployer",
        roles: ["developer"],
        keySuffix: "5a6c",
        createdAt: created,
        ipAccessList: [{ source: "10.0.0.0/8", description: "office" }],
      },
    ],
    pipes: [
      {
        ...pipe(ids.kafkaPipeId, "orders-from-kafka"),
        source: {
          kafka: {
            brokers: "b-1.orders.kafka.example.internal:9096,b-2.orders.kafka.example.internal:9096",
            topics: "orders",
            consumerGroup: "driftless-orders",
            caCertificate: "",
            reversePrivateEndpointIds: [],
          },
        },
        destination: destination("orders", [
          ["order_id", "String"],
          ["amount", "Decimal(18, 2)"],
          ["created_at", "DateTime64(3)"],
        ]),
        fieldMappings: [{ sourceField: "id", destinationField: "order_id" }],
        settings: { streaming_max_insert_wait_ms: 1000 },
      },
      {
        ...pipe(ids.objectStoragePipeId, "events-from-s3"),
        source: {
          objectStorage: {
            url: "https://acme-events.s3.amazonaws.com/events/*.json.gz",
            delimiter: ",",
            compression: "gzip",
            isContinuous: true,
            iamRole: "arn:aws:iam::123456789012:role/events-reader",
            path: "events/",
          },
        },
        destination: destination("events", [
          ["event_id", "String"],
          ["kind", "LowCardinality(String)"],
          ["at", "DateTime"],
        ]),
        settings: { object_storage_concurrency: 4, object_storage_use_cluster_function: false },
      },
      {
        ...pipe(ids.kinesisPipeId, "clicks-from-kinesis"),
        source: {
          kinesis: {
            streamName: "clicks",
            region: "eu-west-1",
            useEnhancedFanOut: false,
            timestamp: 1736928000,
            iamRole: "arn:aws:iam::123456789012:role/clicks-reader",
          },
        },
        destination: destination("clicks", [
          ["session_id", "String"],
          ["url", "String"],
        ]),
      },
      {
        ...pipe(ids.postgresPipeId, "customers-from-postgres"),
        source: {
          postgres: {
            host: "customers-db.example.internal",
            port: 5432,
            database: "customers",
            settings: { syncIntervalSeconds: 60, pullBatchSize: 10000, publicationName: "driftless" },
            tableMappings: [
              {
                sourceSchemaName: "public",
                sourceTable: "customers",
                targetTable: "customers",
                excludedColumns: [],
                useCustomSortingKey: false,
                sortingKeys: [],
              },
            ],
          },
        },
        destination: destination("customers", [
          ["id", "UInt64"],
          ["email", "String"],
        ]),
      },
    ],
    endpoints: [],
    backups: backups(now),
    dashboards: [
      {
        id: ids.dashboardId,
        name: "Platform overview",
        tags: ["platform"],
        tiles: [
          { id: ids.tileIds[0], name: "Ingest lag", x: 0, y: 0, w: 6, h: 3, series: series("kind:lag") },
          { id: ids.tileIds[1], name: "Errors", x: 6, y: 0, w: 6, h: 3, series: series("level:error") },
          {
            id: ids.tileIds[2],
            name: "Events",
            x: 0,
            y: 3,
            w: 12,
            h: 3,
            asRatio: false,
            series: [
              {
                type: "number",
                dataSource: "events",
                sourceId: ids.sourceIds[0],
                aggFn: "count",
                where: "kind:event",
              },
            ],
          },
        ],
      },
    ],
    alerts: [
      {
        id: ids.alertId,
        name: "Ingest lag",
        message: "Ingest lag is above 100 for 5 minutes",
        threshold: 100,
        interval: "5m",
        thresholdType: "above",
        source: "tile",
        state: "OK",
        channel: { type: "webhook", webhookId: ids.webhookId },
        team: ids.teamId,
        tileId: ids.tileIds[0],
        dashboard: ids.dashboardId,
        createdAt: "2025-01-15T09:30:00.000Z",
        updatedAt: "2025-01-15T09:30:00.000Z",
      },
    ],
    webhooks: [
      {
        id: ids.webhookId,
        name: "on-call",
        service: "generic",
        url: "https://hooks.example.com/alerts",
        createdAt: "2025-01-15T09:30:00.000Z",
        updatedAt: "2025-01-15T09:30:00.000Z",
      },
    ],
    savedSearches: [{ id: ids.savedSearchId, name: "Errors" }],
    teamId: ids.teamId,
    sources: [
      source(ids.sourceIds[0], "Logs", "log", "otel_logs"),
      source(ids.sourceIds[1], "Traces", "trace", "otel_traces"),
      source(ids.sourceIds[2], "Metrics", "metric", "otel_metrics_gauge"),
    ],
    observabilityTokens: [ids.observabilityToken],
  };
}
