import { defaultIds as ids } from "../../../src/simulator/index.js";
import { mskEndpoint } from "../manifests.js";

/**
 * The manifests the fault soak keeps in git, as data: what a team would edit (names, tiles, list
 * entries, endpoints, keys, pipes and dashboards added, renamed and removed), rendered to the files of
 * one git-sync revision. Every manifest object keeps what identifies it on the platform (an endpoint's
 * description, a tile's name, a created object's name) for its whole life, so the invariants can count
 * what the platform holds per object.
 */

export const PREVIOUS_NAME = "driftless/previous-name";
export const DELETION_POLICY = "driftless/deletion-policy";
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
  /** Annotated `driftless/deletion-policy: orphan`: its object outlives its manifest. */
  orphan: boolean;
  removed: boolean;
};

/** The kinds the soak creates from manifests that name no id, beside endpoints (the published contract's creates). */
export const CREATED_KINDS = ["ApiKey", "DataPipe", "Dashboard"] as const;
export type CreatedKind = (typeof CREATED_KINDS)[number];

/** One key, pipe or dashboard manifest that names no id: driftless creates its object. */
export type CreatedObject = {
  number: number;
  kind: CreatedKind;
  /** Its metadata.name, for its whole life (a rename of a created object is a delete and a create). */
  name: string;
  /** The name the platform shows, unique to this object. */
  title: string;
  /** Annotated `driftless/deletion-policy: orphan`: its object outlives its manifest. */
  orphan: boolean;
  /** A field an edit changes: a key's role, a pipe's insert wait, a dashboard's tag. */
  detail: number;
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
  /** Keys, pipes and dashboards without ids: the published contract creates them (empty on the minimal one). */
  created: CreatedObject[];
  /** Whether the platform creates keys, pipes and dashboards (the full contract). */
  creates: boolean;
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
export const liveCreated = (world: World) => world.created.filter((c) => !c.removed);

/** The tile the AlertWatch names: the fixture's alert watches it, so it is never removed. */
export const WATCHED_TILE = 0;

/** The manifest of the key driftless authenticates with: annotated delete, yet never deleted. */
export const OWN_KEY_NAME = "driftless-key";

/** The world at the start; `creates`: the platform creates keys, pipes and dashboards (one of each then). */
export function initialWorld(seed: number, creates: boolean): World {
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
    created: creates ? CREATED_KINDS.map((kind, i) => created(seed, kind, 4 + i)) : [],
    creates,
    kafkaWaitMs: 1000,
    postgresBatch: 1000,
    postgresTables: ["customers", "addresses"],
    counter: 6,
  };
}

export function endpoint(seed: number, number: number, orphan = false): EndpointObject {
  return {
    number,
    names: [`soak-endpoint-${number}`],
    description: `soak ${seed} endpoint ${number}`,
    annotated: true,
    orphan,
    removed: false,
  };
}

const NOUNS: Record<CreatedKind, string> = { ApiKey: "key", DataPipe: "pipe", Dashboard: "board" };

export function created(seed: number, kind: CreatedKind, number: number, orphan = false): CreatedObject {
  const noun = NOUNS[kind];
  return {
    number,
    kind,
    name: `soak-${noun}-${number}`,
    title: `soak ${seed} ${noun} ${number}`,
    orphan,
    detail: 0,
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
    "keys/driftless-key.yaml": OWN_KEY,
    "organization.yaml": organization(world),
    "dashboards/overview.yaml": dashboard(world),
    "watches.yaml": watches(world),
    "pipes/kafka.yaml": kafkaPipe(world),
    "pipes/postgres.yaml": postgresPipe(world),
  };
  for (const e of liveEndpoints(world)) files[`endpoints/endpoint-${e.number}.yaml`] = endpointYaml(e);
  for (const c of liveCreated(world)) files[`created/${c.name}.yaml`] = createdYaml(c);
  if (world.broken && files[world.broken] !== undefined) {
    files[world.broken] = `${files[world.broken]}  broken: [by a soak edit\n`;
  }
  return files;
}

function endpointYaml(e: EndpointObject): string {
  const previous = e.names.length > 1 && e.annotated ? e.names[e.names.length - 2] : undefined;
  const annotations = {
    ...(previous ? { [PREVIOUS_NAME]: previous } : {}),
    ...(e.orphan ? { [DELETION_POLICY]: "orphan" } : {}),
  };
  return mskEndpoint(current(e.names), {
    description: e.description,
    cluster: `soak-${e.number}`,
    ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    ...(e.adoptedId ? { extra: `  id: ${e.adoptedId}\n` } : {}),
  });
}

/** The key driftless authenticates with, adopted by its id and annotated delete: it must never be deleted. */
const OWN_KEY = `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ${OWN_KEY_NAME}
  annotations:
    ${DELETION_POLICY}: delete
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.managementKeyId}
  name: driftless
  roles: [admin]
`;

function createdYaml(c: CreatedObject): string {
  const head = `apiVersion: driftless/v1
kind: ${c.kind}
metadata:
  name: ${c.name}
${c.orphan ? `  annotations:\n    ${DELETION_POLICY}: orphan\n` : ""}spec:
`;
  return head + CREATED_SPECS[c.kind](c);
}

/** The spec of each created kind: what a create needs, and `detail` in a field an update can change. */
const CREATED_SPECS: Record<CreatedKind, (c: CreatedObject) => string> = {
  ApiKey: (c) => `  organizationId: ${ids.organizationId}
  name: ${c.title}
  roles: [${c.detail % 2 === 0 ? "developer" : "query_endpoints"}]
  secretTarget: { file: ${c.name} }
`,
  DataPipe: (c) => `  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  name: ${c.title}
  source:
    kafka:
      type: confluent
      format: JSONEachRow
      brokers: broker-1.example.com:9092
      topics: soak-${c.number}
      authentication: PLAIN
      credentials: { username: soak, password: { fromEnv: ${KAFKA_PASSWORD_ENV} } }
  destination:
    database: analytics
    table: soak_${c.number}
    managedTable: true
    columns: [{ name: id, type: String }]
  fieldMappings: [{ sourceField: id, destinationField: id }]
  settings:
    streaming_max_insert_wait_ms: ${1000 + c.detail * 100}
`,
  Dashboard: (c) => `  name: ${c.title}
  tags: [soak, v${c.detail}]
  tiles:
    - key: volume
      name: Volume ${c.number}
      x: 0
      y: 0
      w: 6
      h: 3
      series:
        - { type: time, dataSource: events, sourceId: ${ids.sourceIds[0]}, aggFn: count, where: "soak:${c.number}", groupBy: [] }
`,
};

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
    `ApiKey/${OWN_KEY_NAME}`,
    ...liveEndpoints(world).map((e) => `ReversePrivateEndpoint/${current(e.names)}`),
    ...liveCreated(world).map((c) => `${c.kind}/${c.name}`),
  ];
}

/**
 * An object driftless creates, whatever its kind, as the invariants see it: where the platform keeps
 * it, what identifies it there (an endpoint's description, a created object's name), its manifest
 * names, and whether its policy keeps it when its manifest leaves git (annotated orphan; an endpoint an
 * operator adopted by id is kept too, once the state says so: see lifecycle.ts).
 */
export type Owned = {
  kind: "ReversePrivateEndpoint" | CreatedKind;
  collection: Collection;
  identity: string;
  names: string[];
  orphan: boolean;
  removed: boolean;
};

/** The platform's collections of created objects, as the simulator's state names them. */
export const COLLECTIONS = ["endpoints", "keys", "pipes", "dashboards"] as const;
export type Collection = (typeof COLLECTIONS)[number];
export const COLLECTION_OF: Record<Owned["kind"], Collection> = {
  ReversePrivateEndpoint: "endpoints",
  ApiKey: "keys",
  DataPipe: "pipes",
  Dashboard: "dashboards",
};

/** Every object the manifests of `world` create (or created), removed ones too. */
export function owned(world: World): Owned[] {
  return [
    ...world.endpoints.map(
      (e): Owned => ({
        kind: "ReversePrivateEndpoint",
        collection: "endpoints",
        identity: e.description,
        names: e.names,
        orphan: e.orphan,
        removed: e.removed,
      }),
    ),
    ...world.created.map(
      (c): Owned => ({
        kind: c.kind,
        collection: COLLECTION_OF[c.kind],
        identity: c.title,
        names: [c.name],
        orphan: c.orphan,
        removed: c.removed,
      }),
    ),
  ];
}
