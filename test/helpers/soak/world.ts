import { defaultIds as ids } from "../../../src/simulator/index.js";
import { mskEndpoint } from "../manifests.js";

/**
 * The manifests the fault soak keeps in git, as data: what a team would edit (names, tiles, list
 * entries, endpoints added, renamed and removed), rendered to the files of one git-sync revision. Every
 * manifest object keeps what identifies it on the platform (an endpoint's description, a tile's name)
 * for its whole life, so the invariants can count what the platform holds per object.
 */

export const PREVIOUS_NAME = "driftless/previous-name";
export const KAFKA_PASSWORD_ENV = "SOAK_KAFKA_PASSWORD";
export const POSTGRES_PASSWORD_FILE = "soak-postgres-password";

/** One ReversePrivateEndpoint manifest object: its names over time, never its description. */
export type EndpointObject = {
  number: number;
  /** Every metadata.name it has had, oldest first; the last is the current one. */
  names: string[];
  description: string;
  /** spec.id, once an operator adopted the endpoint the platform holds. */
  adoptedId?: string;
  /** Renamed with the previous-name annotation (else, with spec.id set, by its id alone). */
  annotated: boolean;
  removed: boolean;
};

/** One dashboard tile: a stable name (the platform shows it), a key that may be renamed. */
export type TileObject = {
  number: number;
  /** Every key it has had, oldest first; the last is the current one. */
  keys: string[];
  name: string;
  /** The id the manifest states (an adopted tile), while it does. */
  id?: string;
  /** The id an adopted tile had on the platform from the start. */
  adoptedId?: string;
  x: number;
  y: number;
  w: number;
  h: number;
  where: string;
  removed: boolean;
};

export type World = {
  seed: number;
  keyNames: string[];
  keyTitle: string;
  orgName: string;
  orgEndpoints: number[];
  dashboardNames: string[];
  dashboardTitle: string;
  tiles: TileObject[];
  endpoints: EndpointObject[];
  kafkaWaitMs: number;
  postgresBatch: number;
  postgresTables: string[];
  /** A file left broken (bad YAML) in this revision, fixed by the next edit. */
  broken?: string;
  counter: number;
};

export const current = (names: string[]): string => names[names.length - 1] as string;
export const liveTiles = (world: World) => world.tiles.filter((t) => !t.removed);
export const liveEndpoints = (world: World) => world.endpoints.filter((e) => !e.removed);

/** The tile the AlertWatch names: the fixture's alert watches it, so it is never removed. */
export const WATCHED_TILE = 0;

export function initialWorld(seed: number): World {
  const adopted = ids.tileIds.map((id, i) => tile(i, { id, adoptedId: id, x: i * 6, y: 0 }));
  return {
    seed,
    keyNames: ["ci-deployer"],
    keyTitle: "ci deployer",
    orgName: "Acme Analytics",
    orgEndpoints: [1],
    dashboardNames: ["platform-overview"],
    dashboardTitle: "Platform overview",
    tiles: [...adopted, tile(3, { x: 0, y: 3 })],
    endpoints: [0, 1, 2].map((n) => endpoint(seed, n)),
    kafkaWaitMs: 1000,
    postgresBatch: 1000,
    postgresTables: ["customers", "addresses"],
    counter: 3,
  };
}

export function endpoint(seed: number, number: number): EndpointObject {
  return {
    number,
    names: [`soak-endpoint-${number}`],
    description: `soak ${seed} endpoint ${number}`,
    annotated: true,
    removed: false,
  };
}

export function tile(number: number, fields: Partial<TileObject> = {}): TileObject {
  return {
    number,
    keys: [`tile-${number}`],
    name: `Soak tile ${number}`,
    x: 0,
    y: 0,
    w: 6,
    h: 3,
    where: `kind:t${number}`,
    removed: false,
    ...fields,
  };
}

/** The files of one revision: path → text. */
export function render(world: World): Record<string, string> {
  const files: Record<string, string> = {
    "keys/api-key.yaml": apiKey(world),
    "organization.yaml": organization(world),
    "dashboards/overview.yaml": dashboard(world),
    "watches.yaml": watches(world),
    "pipes/kafka.yaml": kafkaPipe(world),
    "pipes/postgres.yaml": postgresPipe(world),
  };
  for (const e of liveEndpoints(world)) files[`endpoints/endpoint-${e.number}.yaml`] = endpointYaml(e);
  if (world.broken && files[world.broken] !== undefined) {
    files[world.broken] = `${files[world.broken]}  broken: [by a soak edit\n`;
  }
  return files;
}

function endpointYaml(e: EndpointObject): string {
  const previous = e.names.length > 1 && e.annotated ? e.names[e.names.length - 2] : undefined;
  return mskEndpoint(current(e.names), {
    description: e.description,
    cluster: `soak-${e.number}`,
    ...(previous ? { annotations: { [PREVIOUS_NAME]: previous } } : {}),
    ...(e.adoptedId ? { extra: `  id: ${e.adoptedId}\n` } : {}),
  });
}

function apiKey(world: World): string {
  return `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ${current(world.keyNames)}
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ${world.keyTitle}
  roles: [developer]
  ipAccessList:
    - source: 203.0.113.0/24
      description: CI runners
`;
}

function organization(world: World): string {
  const entries = world.orgEndpoints.map(
    (n) => `    - { id: vpce-soak-${n}, description: soak private endpoint ${n} }\n`,
  );
  return `apiVersion: driftless/v1
kind: Organization
metadata:
  name: acme
spec:
  organizationId: ${ids.organizationId}
  name: ${world.orgName}
  privateEndpoints:${entries.length === 0 ? " []" : ""}
${entries.join("")}`;
}

function dashboard(world: World): string {
  const tiles = liveTiles(world).map(
    (t) => `    - key: ${current(t.keys)}
${t.id ? `      id: ${t.id}\n` : ""}      name: ${t.name}
      x: ${t.x}
      y: ${t.y}
      w: ${t.w}
      h: ${t.h}
      series:
        - { type: time, dataSource: events, sourceId: ${ids.sourceIds[0]}, aggFn: count, where: "${t.where}", groupBy: [] }
`,
  );
  return `apiVersion: driftless/v1
kind: Dashboard
metadata:
  name: ${current(world.dashboardNames)}
spec:
  dashboardId: ${ids.dashboardId}
  name: ${world.dashboardTitle}
  tags: [soak]
  tiles:
${tiles.join("")}`;
}

function watches(world: World): string {
  const watched = world.tiles[WATCHED_TILE] as TileObject;
  return `apiVersion: driftless/v1
kind: AlertWatch
metadata:
  name: ingest-lag
spec:
  alertId: ${ids.alertId}
  dashboard: ${current(world.dashboardNames)}
  tile: ${current(watched.keys)}
---
apiVersion: driftless/v1
kind: BackupWatch
metadata:
  name: analytics-backups
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  maxAge: 26h
`;
}

function kafkaPipe(world: World): string {
  const first = world.endpoints[0] as EndpointObject;
  return `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: orders-from-kafka
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.kafkaPipeId}
  name: orders from kafka
  source:
    kafka:
      reversePrivateEndpoints: [${current(first.names)}]
      credentials:
        username: driftless-orders
        password: { fromEnv: ${KAFKA_PASSWORD_ENV} }
  destination:
    columns:
      - { name: order_id, type: UUID }
      - { name: amount, type: "Decimal(18, 2)" }
  fieldMappings:
    - { sourceField: id, destinationField: order_id }
    - { sourceField: total, destinationField: amount }
  settings:
    streaming_max_insert_wait_ms: ${world.kafkaWaitMs}
`;
}

function postgresPipe(world: World): string {
  const mappings = world.postgresTables.map(
    (table) =>
      `        - { sourceSchemaName: public, sourceTable: ${table}, targetTable: ${table}, excludedColumns: [] }\n`,
  );
  return `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: customers-from-postgres
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.postgresPipeId}
  name: customers from postgres
  source:
    postgres:
      host: customers-db.internal.example.com
      port: 5432
      database: customers
      credentials:
        username: replicator
        password: { fromFile: ${POSTGRES_PASSWORD_FILE} }
      settings:
        syncIntervalSeconds: 60
        pullBatchSize: ${world.postgresBatch}
      tableMappings:
${mappings.join("")}`;
}

/** The `Kind/name` of every resource the manifests of `world` declare (a broken file's too). */
export function declared(world: World): string[] {
  return [
    `ApiKey/${current(world.keyNames)}`,
    "Organization/acme",
    `Dashboard/${current(world.dashboardNames)}`,
    "AlertWatch/ingest-lag",
    "BackupWatch/analytics-backups",
    "DataPipe/orders-from-kafka",
    "DataPipe/customers-from-postgres",
    ...liveEndpoints(world).map((e) => `ReversePrivateEndpoint/${current(e.names)}`),
  ];
}
