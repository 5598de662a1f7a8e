import { defaultFixture, defaultIds, type FixtureInput } from "../../src/simulator/index.js";

/**
 * A platform as a team has it on its first day with driftless, as a simulator fixture: the default
 * fixture plus `keys` keys, `pipes` pipes (every source kind in turn, with the fields a create leaves,
 * credentials excepted), `dashboards` dashboards whose tiles are stored in `config` form, and `alerts`
 * tile alerts spread over their tiles (more than a page, when asked), each notifying the fixture's
 * webhook. Ids are made from each object's number, so a test knows them: `estateIds`.
 */

export type EstateSize = { keys?: number; pipes?: number; dashboards?: number; alerts?: number };

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");

/** The ids of the estate's n-th object (from 0) of each kind. */
export const estateIds = {
  key: (n: number) => `00000000-0000-4000-8000-1${hex(n, 11)}`,
  pipe: (n: number) => `00000000-0000-4000-8000-2${hex(n, 11)}`,
  dashboard: (n: number) => `5e57a7e0d${hex(n, 15)}`,
  tile: (n: number) => `5e57a7e1d${hex(n, 15)}`,
  alert: (n: number) => `5e57a7e2d${hex(n, 15)}`,
};

const created = "2025-02-01T08:00:00Z";
const KINDS = ["kafka", "objectStorage", "kinesis", "postgres"] as const;

function pipe(n: number) {
  const kind = KINDS[n % KINDS.length] ?? "kafka";
  const table = `table_${n}`;
  const sources = {
    kafka: {
      type: "confluent",
      format: "JSONEachRow",
      brokers: "broker:9092",
      topics: `topic-${n}`,
      authentication: "PLAIN",
    },
    objectStorage: { type: "s3", format: "Parquet", url: `https://bucket.s3.amazonaws.com/${n}/*.parquet` },
    kinesis: {
      format: "JSONEachRow",
      streamName: `stream-${n}`,
      region: "eu-west-1",
      authentication: "IAM_ROLE",
    },
    postgres: {
      host: `db-${n}.example.com`,
      port: 5432,
      database: "app",
      tableMappings: [{ sourceSchemaName: "public", sourceTable: table, targetTable: table }],
    },
  };
  const streaming = kind !== "postgres";
  return {
    id: estateIds.pipe(n),
    serviceId: defaultIds.serviceId,
    name: `pipe-${n}`,
    state: n % 5 === 4 ? "Stopped" : "Running",
    ...(streaming ? { scaling: { replicas: 1 + (n % 3) } } : {}),
    source: { [kind]: sources[kind] },
    destination: streaming
      ? { database: "analytics", table, managedTable: true, columns: [{ name: "id", type: "String" }] }
      : { database: "analytics" },
    fieldMappings: streaming ? [{ sourceField: "id", destinationField: "id" }] : [],
    createdAt: created,
    updatedAt: created,
  };
}

function dashboard(n: number) {
  const config = {
    displayType: "line",
    sourceId: defaultIds.sourceIds[0],
    select: [{ aggFn: "count", where: "" }],
  };
  return {
    id: estateIds.dashboard(n),
    name: `Service ${n}`,
    tags: ["estate"],
    tiles: [0, 1].map((t) => ({
      id: estateIds.tile(n * 2 + t),
      name: `Tile ${t}`,
      x: t * 12,
      y: 0,
      w: 12,
      h: 4,
      config,
    })),
  };
}

function alert(n: number, dashboards: number) {
  const tile = n % (dashboards * 2);
  return {
    id: estateIds.alert(n),
    name: `Alert ${n}`,
    message: null,
    threshold: n,
    interval: "5m",
    thresholdType: "above",
    source: "tile",
    state: "OK",
    channel: { type: "webhook", webhookId: defaultIds.webhookId },
    team: defaultIds.teamId,
    tileId: estateIds.tile(tile),
    dashboard: estateIds.dashboard(Math.floor(tile / 2)),
    createdAt: created,
    updatedAt: created,
  };
}

/** The estate of `size` (default: nothing beyond the default fixture); alerts need one dashboard at least. */
export function estateFixture(size: EstateSize): FixtureInput {
  const { keys = 0, pipes = 0, alerts = 0 } = size;
  const dashboards = Math.max(size.dashboards ?? 0, alerts > 0 ? 1 : 0);
  const base = defaultFixture();
  const count = (n: number) => Array.from({ length: n }, (_, i) => i);
  return {
    ...base,
    keys: [
      ...(base.keys ?? []),
      ...count(keys).map((n) => ({
        id: estateIds.key(n),
        organizationId: defaultIds.organizationId,
        name: `key-${n}`,
        roles: [n % 2 ? "developer" : "query_endpoints"] as ("developer" | "query_endpoints")[],
        keySuffix: hex(n, 4).toUpperCase(),
        createdAt: created,
        state: n % 7 === 6 ? ("disabled" as const) : ("enabled" as const),
      })),
    ],
    pipes: [...(base.pipes ?? []), ...count(pipes).map(pipe)],
    dashboards: [...(base.dashboards ?? []), ...count(dashboards).map(dashboard)],
    alerts: [...(base.alerts ?? []), ...count(alerts).map((n) => alert(n, dashboards))],
  };
}
