import { cp } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { contractCheck } from "../src/platform/contracts.js";
import { type Contract, hasRoute, ROUTE_NAMES, ROUTES, type RouteName } from "../src/platform/routes.js";
import type { RecordedRequest } from "../src/simulator/index.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/**
 * Conformance: every request driftless builds, for examples/ and for a manifest set with every kind,
 * series type, pipe source, endpoint type, key state, "never expires", a changed table mapping and first
 * contacts, is checked against the documents of the contract in force (contracts/<contract>/) by ajv,
 * taken from the simulator's request log. The simulator's full mode validates with the very same
 * documents (src/platform/contracts.ts), so the two cannot drift apart; the documents name exactly the
 * routes the route table gives each contract. Against the full contract, the creates of a key, a pipe,
 * a dashboard and an alert on its tile, and their deletes once their manifests leave git, are checked too.
 */

const examples = join(import.meta.dirname, "..", "examples");
const ORG = ids.organizationId;
const SVC = ids.serviceId;
const SOURCE = ids.sourceIds[0];
/** API objects of the platform that only the broad set manages. */
const BOARD = "65f1a2b3c4d5e6f708192b00";
const NEVER_KEY = "1b7d3a8f-4c2e-4f9b-8a6d-8e3c5f7b9d21";
const STATE_KEY = "0a6c2f7e-3b1d-4e8a-9f5c-7d2b4e6a8c10";

/** Manifests both contracts take, beyond examples/. */
const broad: Record<string, string> = {
  "broad-dashboard.yaml": `${header("Dashboard", "every-series")}  dashboardId: "${BOARD}"
  name: Every series type
  tags: [broad]
  tiles:
    - {key: lag, name: Lag, x: 0, y: 0, w: 6, h: 3, series: [{type: time, dataSource: events, sourceId: "${SOURCE}", aggFn: count, where: "kind:lag", groupBy: [service], displayType: stacked_bar}]}
    - {key: table, name: Table, x: 6, y: 0, w: 6, h: 3, series: [{type: table, dataSource: events, sourceId: "${SOURCE}", aggFn: quantile, level: 0.95, field: Duration, alias: p95, where: "", whereLanguage: sql, groupBy: [service], sortOrder: desc}]}
    - {key: number, name: Number, x: 12, y: 0, w: 6, h: 3, series: [{type: number, dataSource: events, sourceId: "${SOURCE}", aggFn: sum, field: Value, metricName: requests, metricDataType: sum, where: "", numberFormat: {output: number, mantissa: 2}}]}
    - {key: search, name: Search, x: 18, y: 0, w: 6, h: 3, series: [{type: search, dataSource: events, sourceId: "${SOURCE}", fields: [Timestamp, Body], where: "level:error"}]}
    - {key: notes, name: Notes, x: 0, y: 3, w: 24, h: 2, series: [{type: markdown, dataSource: events, content: "Runbook: see the wiki."}]}
`,
  "broad-key.yaml": `${header("ApiKey", "never-expires")}  organizationId: ${ORG}
  keyId: ${NEVER_KEY}
  expireAt: ""
`,
};

/** Manifests only the published contract takes. */
const published: Record<string, string> = {
  "published-endpoint.yaml": `${header("ReversePrivateEndpoint", "analytics-gcp")}  organizationId: ${ORG}
  serviceId: ${SVC}
  description: analytics in GCP
  type: GCP_PSC_SERVICE_ATTACHMENT
  gcpServiceAttachment: projects/acme/regions/europe-west4/serviceAttachments/analytics
`,
  "published-key.yaml": `${header("ApiKey", "ci-deployer-state")}  organizationId: ${ORG}
  keyId: ${STATE_KEY}
  state: enabled
`,
};

/** The route of a recorded request and its path parameters. */
function routeOf(request: RecordedRequest): { name: RouteName; params: Record<string, string> } {
  const name = ROUTE_NAMES.find(
    (n) => ROUTES[n].template === request.route && ROUTES[n].method === request.method,
  );
  if (!name) throw new Error(`no route for ${request.method} ${request.path}`);
  const parts = ROUTES[name].template.split("/");
  const segments = request.path.split("/");
  const params: Record<string, string> = {};
  parts.forEach((part, i) => {
    if (part.startsWith("{")) params[part.slice(1, -1)] = decodeURIComponent(segments[i] ?? "");
  });
  return { name, params };
}

/** What of each request the contract's documents refuse. */
function nonConforming(contract: Contract, requests: readonly RecordedRequest[]) {
  const check = contractCheck(contract);
  return requests.flatMap((request) => {
    const { name, params } = routeOf(request);
    const issues = check.request(name, params, request.body);
    return issues.length > 0 ? [{ route: name, body: request.body, issues }] : [];
  });
}

let world: EngineWorld | undefined;
afterEach(() => world?.close());

const key = (id: string, name: string) => ({
  id,
  organizationId: ORG,
  name,
  roles: ["developer" as const],
  keySuffix: id.slice(-4),
  createdAt: "2025-01-15T09:30:00Z",
  expireAt: "2027-01-01T00:00:00Z",
  usedAt: null,
  ipAccessList: [],
  state: "disabled" as const,
});

async function setUp(contract: Contract, extra: Record<string, string>) {
  const unlimited = { requests: 10_000, windowMs: 1_000 };
  world = await startEngineWorld({
    simulator: { contract, rateLimit: { management: false, observability: false } },
    platform: { budgets: { management: unlimited, observability: unlimited } },
  });
  // The minimal contract has no alert writes (an Alert needs the published contract): its example is left out there.
  const left = (source: string) =>
    source.includes("secrets") || (contract === "minimal" && source.endsWith("alerts.yaml"));
  await cp(examples, world.manifests, { recursive: true, filter: (source) => !left(source) });
  await cp(join(examples, "secrets"), world.secretsDir, { recursive: true });
  world.env.EXAMPLE_KAFKA_PASSWORD = "demo-kafka-password";
  world.sim.state.dashboards.push({ id: BOARD, name: "Scratch", tiles: [], tags: [] });
  world.sim.state.keys.push(key(NEVER_KEY, "never-expires"), key(STATE_KEY, "ci-deployer-2"));
  for (const [file, yaml] of Object.entries(extra)) await world.write(file, yaml);
  return world;
}

describe.each<[Contract, Record<string, string>]>([
  ["minimal", broad],
  ["full", { ...broad, ...published }],
])("against the %s contract", (contract, extra) => {
  it("every request of examples/ and the broad set conforms, none is refused, and a second pass sends nothing", async () => {
    const w = await setUp(contract, extra);

    const first = await w.apply();
    const sent = [...w.sim.requests];
    w.sim.clearRequests();
    const second = await w.apply();

    expect(first.statuses.filter((s) => s.status !== "Synced")).toEqual([]);
    expect(sent.filter((r) => r.status !== 200)).toEqual([]);
    expect(nonConforming(contract, sent)).toEqual([]);
    expect(sent.map((r) => routeOf(r).name)).toEqual(
      expect.arrayContaining([
        "updateOrganization",
        "updateApiKey",
        "updateDataPipe",
        "createReversePrivateEndpoint",
        "putDashboard",
      ]),
    );
    expect(w.writes()).toEqual([]);
    expect(second.ok).toBe(true);
  });

  it("changed table mappings and tiles conform too, and tile ids stay", async () => {
    const w = await setUp(contract, extra);
    await w.apply();
    const tiles = (await w.state()).resources["Dashboard/every-series"]?.tileIds;
    w.sim.clearRequests();
    const pipe = join("data-pipes", "customers-from-postgres.yaml");
    const text = (await import("node:fs/promises")).readFile(join(w.manifests, pipe), "utf8");
    await w.write(pipe, (await text).replace("sortingKeys: [customer_id, id]", "sortingKeys: [customer_id]"));
    const board = broad["broad-dashboard.yaml"] ?? "";
    await w.write("broad-dashboard.yaml", board.replace("name: Notes", "name: Runbook"));

    const result = await w.apply();

    expect(result.statuses.filter((s) => s.status !== "Synced")).toEqual([]);
    expect(nonConforming(contract, w.sim.requests)).toEqual([]);
    expect(
      w
        .writes()
        .map((r) => routeOf(r).name)
        .sort(),
    ).toEqual(["putDashboard", "updateDataPipe", "updateDataPipe"]);
    expect((await w.state()).resources["Dashboard/every-series"]?.tileIds).toEqual(tiles);
  });
});

describe("the contract documents and the route table", () => {
  it.each<Contract>(["minimal", "full"])(
    "%s: the documents describe exactly the routes of the contract",
    (contract) => {
      const check = contractCheck(contract);

      const described = ROUTE_NAMES.filter((name) => check.has(name));

      expect(described).toEqual(ROUTE_NAMES.filter((name) => hasRoute(contract, name)));
    },
  );
});

describe("creates and deletes against the full contract", () => {
  /** A key, a pipe, a dashboard and an alert on its tile, each without an id: driftless creates them. */
  const created: Record<string, string> = {
    "new-key.yaml": `${header("ApiKey", "new-deployer")}  organizationId: ${ORG}
  name: new-deployer
  roles: [developer]
  secretTarget: { file: new-deployer }
`,
    "new-pipe.yaml": `${header("DataPipe", "new-pipe")}  organizationId: ${ORG}
  serviceId: ${SVC}
  name: new pipe
  source:
    kafka: {type: confluent, format: JSONEachRow, brokers: "broker-1.example.com:9092", topics: payments, authentication: PLAIN, credentials: {username: pipe, password: {fromEnv: EXAMPLE_KAFKA_PASSWORD}}}
  destination: {database: analytics, table: payments, managedTable: true, columns: [{name: id, type: String}]}
  fieldMappings: [{sourceField: payment_id, destinationField: id}]
`,
    "new-board.yaml": `${header("Dashboard", "new-board")}  name: New board
  tiles:
    - {key: errors, name: Errors, x: 0, y: 0, w: 12, h: 4, series: [{type: time, dataSource: events, sourceId: "${SOURCE}", aggFn: count, where: "level:error", groupBy: []}]}
`,
    "new-alert.yaml": `${header("Alert", "new-errors")}  name: New errors
  message: Errors on the new board
  dashboard: new-board
  tile: errors
  interval: 5m
  thresholdType: above
  threshold: 5
  channel: {type: webhook, webhookId: ${ids.webhookId}}
`,
  };

  it("every create and every delete driftless sends conforms to the published documents", async () => {
    const w = await setUp("full", created);
    const keySecretsDir = join(w.secretsDir, "..", "key-secrets");
    const wiring = { config: { keySecretsDir } };

    const made = await w.apply({}, wiring);
    const creates = [...w.sim.requests];
    w.sim.clearRequests();
    for (const file of Object.keys(created)) await w.remove(file);
    const gone = await w.apply({}, wiring);

    expect(made.statuses.filter((s) => s.status !== "Synced")).toEqual([]);
    expect(nonConforming("full", creates)).toEqual([]);
    expect(
      creates
        .filter((r) => r.method === "POST")
        .map((r) => routeOf(r).name)
        .sort(),
    ).toEqual(expect.arrayContaining(["createAlert", "createApiKey", "createDashboard", "createDataPipe"]));
    expect(
      gone.statuses
        .filter((s) => s.status === "Deleted")
        .map((s) => s.kind)
        .sort(),
    ).toEqual(["Alert", "ApiKey", "Dashboard", "DataPipe"]);
    expect(nonConforming("full", w.sim.requests)).toEqual([]);
    expect(
      w
        .writes()
        .map((r) => routeOf(r).name)
        .sort(),
    ).toEqual(["deleteAlert", "deleteApiKey", "deleteDashboard", "deleteDataPipe"]);
  });
});
