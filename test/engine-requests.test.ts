import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/** Each kind's exact request bodies on the wire, and a second apply that sends nothing. */

const ORG = ids.organizationId;
const SVC = ids.serviceId;

const manifests = {
  "org.yaml": `${header("Organization", "acme")}  organizationId: ${ORG}
  name: Acme Analytics
  privateEndpoints:
    - id: vpce-prod
      description: production VPC
`,
  "key.yaml": `${header("ApiKey", "ci-deployer")}  organizationId: ${ORG}
  keyId: ${ids.ciDeployerKeyId}
  name: ci-deployer
  roles: [developer, query_endpoints]
  ipAccessList:
    - source: 203.0.113.0/24
      description: CI runners
`,
  "endpoint.yaml": `${header("ReversePrivateEndpoint", "orders-msk")}  organizationId: ${ORG}
  serviceId: ${SVC}
  description: MSK of the orders team
  type: MSK_MULTI_VPC
  mskClusterArn: arn:aws:kafka:eu-west-1:111122223333:cluster/orders/abc
  mskAuthentication: SASL_SCRAM
`,
  "kafka.yaml": `${header("DataPipe", "orders-from-kafka")}  organizationId: ${ORG}
  serviceId: ${SVC}
  dataPipeId: ${ids.kafkaPipeId}
  name: orders from kafka
  source:
    kafka:
      reversePrivateEndpoints: [orders-msk]
      credentials:
        username: orders
        password: {fromEnv: KAFKA_PASSWORD}
  settings:
    streaming_max_insert_wait_ms: 500
`,
  "postgres.yaml": `${header("DataPipe", "customers-from-postgres")}  organizationId: ${ORG}
  serviceId: ${SVC}
  dataPipeId: ${ids.postgresPipeId}
  name: customers from postgres
  source:
    postgres:
      tableMappings:
        - {sourceSchemaName: public, sourceTable: customers, targetTable: customers}
        - {sourceSchemaName: public, sourceTable: addresses, targetTable: customer_addresses}
`,
  "dashboard.yaml": `${header("Dashboard", "platform-overview")}  dashboardId: ${ids.dashboardId}
  name: Platform overview
  tags: [platform]
  tiles:
    - {key: lag, id: "${ids.tileIds[0]}", name: Ingest lag, x: 0, y: 0, w: 6, h: 3, series: [{type: time, dataSource: events, aggFn: count, where: "kind:lag"}]}
    - {key: errors, name: Errors by service, x: 6, y: 0, w: 6, h: 3, series: [{type: number, dataSource: events, aggFn: count}]}
`,
};

describe("apply sends each kind's smallest correct request", () => {
  let world: EngineWorld;

  beforeEach(async () => {
    world = await startEngineWorld();
    world.env.KAFKA_PASSWORD = "kafka-secret-1";
    for (const [file, yaml] of Object.entries(manifests)) await world.write(file, yaml);
  });
  afterEach(() => world.close());

  it("sends exactly the planned bodies, endpoint before the pipe that names it", async () => {
    const result = await world.apply();

    expect(result.statuses.filter((s) => s.status !== "Synced")).toEqual([]);
    expect(result.ok).toBe(true);
    const wire = world
      .writes()
      .map((r) => ({ method: r.method, route: r.route, body: r.body, status: r.status }));
    const endpointId = world.sim.state.endpoints[0]?.id;
    expect(endpointId).toBeDefined();
    expect(wire.every((r) => r.status === 200)).toBe(true);
    const byRoute = (route: string) => wire.filter((r) => r.route?.endsWith(route)).map((r) => r.body);
    const endpointPost = wire.findIndex((r) => r.route?.endsWith("datapipesReversePrivateEndpoints"));
    const pipePatches = wire.flatMap((r, index) => (r.route?.endsWith("{dataPipeId}") ? [index] : []));
    expect(endpointPost).toBeGreaterThanOrEqual(0);
    expect(pipePatches.every((index) => index > endpointPost)).toBe(true);
    expect(byRoute("datapipesReversePrivateEndpoints")).toEqual([
      {
        description: "MSK of the orders team",
        type: "MSK_MULTI_VPC",
        mskClusterArn: "arn:aws:kafka:eu-west-1:111122223333:cluster/orders/abc",
        mskAuthentication: "SASL_SCRAM",
      },
    ]);
    expect(byRoute("/keys/{keyId}")).toEqual([
      {
        name: "ci-deployer",
        roles: ["developer", "query_endpoints"],
        ipAccessList: [{ source: "203.0.113.0/24", description: "CI runners" }],
      },
    ]);
    expect(byRoute("/v1/organizations/{organizationId}")).toEqual([
      { name: "Acme Analytics" },
      { privateEndpoints: { add: [{ id: "vpce-prod", description: "production VPC" }] } },
    ]);
    const pipes = wire.filter((r) => r.route?.endsWith("{dataPipeId}"));
    expect(pipes.map((p) => p.body)).toContainEqual({
      name: "orders from kafka",
      source: {
        kafka: {
          reversePrivateEndpointIds: [endpointId],
          credentials: { username: "orders", password: "kafka-secret-1" },
        },
      },
      settings: { streaming_max_insert_wait_ms: 500 },
    });
    // The live list already holds public.customers: only the missing mapping is added.
    expect(pipes.map((p) => p.body)).toContainEqual({ name: "customers from postgres" });
    expect(pipes.map((p) => p.body)).toContainEqual({
      source: {
        postgres: {
          tableMappingsToAdd: [
            { sourceSchemaName: "public", sourceTable: "addresses", targetTable: "customer_addresses" },
          ],
        },
      },
    });
    expect(byRoute("/api/v2/dashboards/{id}")).toEqual([
      {
        name: "Platform overview",
        tags: ["platform"],
        tiles: [
          {
            id: ids.tileIds[0],
            name: "Ingest lag",
            x: 0,
            y: 0,
            w: 6,
            h: 3,
            series: [{ type: "time", dataSource: "events", aggFn: "count", where: "kind:lag" }],
          },
          {
            name: "Errors by service",
            x: 6,
            y: 0,
            w: 6,
            h: 3,
            series: [{ type: "number", dataSource: "events", aggFn: "count" }],
          },
        ],
      },
    ]);
  });

  it("sends nothing on a second apply, nor on a third after a restart", async () => {
    await world.apply();
    world.sim.clearRequests();

    const second = await world.apply();
    const third = await world.apply();

    expect(world.writes()).toEqual([]);
    expect(second.ok).toBe(true);
    expect(third.statuses.every((s) => s.status === "Synced")).toBe(true);
  });

  it("sends only the changed field after an edit", async () => {
    await world.apply();
    world.sim.clearRequests();
    await world.write(
      "key.yaml",
      manifests["key.yaml"].replace("name: ci-deployer\n  roles", "name: ci-deployer-2\n  roles"),
    );

    await world.apply();

    expect(world.writes().map((r) => r.body)).toEqual([{ name: "ci-deployer-2" }]);
  });

  it("sends a secret again when its value changes, and only then, with its credentials object whole", async () => {
    await world.apply();
    world.sim.clearRequests();
    world.env.KAFKA_PASSWORD = "kafka-secret-2";

    await world.apply();
    await world.apply();

    expect(world.writes().map((r) => r.body)).toEqual([
      { source: { kafka: { credentials: { username: "orders", password: "kafka-secret-2" } } } },
    ]);
  });
});
