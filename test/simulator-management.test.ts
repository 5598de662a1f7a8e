import { once } from "node:events";
import { connect } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { until } from "./helpers/wait.js";

let sim: Simulator;
beforeEach(async () => {
  sim = await startSimulator({ rateLimit: { management: false }, endpointReadyAfterMs: 50 });
});
afterEach(() => sim.close());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;

async function call(method: string, path: string, body?: unknown, authorization?: string) {
  const response = await fetch(`${sim.managementUrl}${path}`, {
    method,
    headers: {
      authorization:
        authorization ?? basic(sim.credentials.managementKeyId, sim.credentials.managementKeySecret),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined };
}

const org = `/v1/organizations/${ids.organizationId}`;
const service = `${org}/services/${ids.serviceId}`;
const pipe = (id: string) => `${service}/datapipes/${id}`;
const endpoints = `${service}/datapipesReversePrivateEndpoints`;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("management API envelope and auth", () => {
  it("answers with {status, requestId, result} and a fresh v4 request id each time", async () => {
    const first = await call("GET", `${service}/backups`);
    const second = await call("GET", `${service}/backups`);

    expect(first.status).toBe(200);
    expect(first.json.status).toBe(200);
    expect(first.json.requestId).toMatch(UUID_V4);
    expect(second.json.requestId).toMatch(UUID_V4);
    expect(second.json.requestId).not.toBe(first.json.requestId);
  });

  it.each([
    ["no header", ""],
    ["a wrong secret", basic(ids.managementKeyId, "wrong")],
    ["an unknown key", basic("00000000-0000-4000-8000-000000000000", "sim-management-secret")],
    ["a Bearer token", "Bearer sim-observability-token"],
    // Same length in characters, not in bytes: the comparison must not throw and drop the connection.
    ["a secret of the right length in other characters", basic(ids.managementKeyId, "é".repeat(21))],
  ])("answers 401 with %s", async (_name, authorization) => {
    const answer = await call("GET", `${service}/backups`, undefined, authorization);

    expect(answer.status).toBe(401);
    expect(answer.json.error).toMatch(/^UNAUTHORIZED: /);
    expect(answer.json.requestId).toMatch(UUID_V4);
  });

  it("answers 401 for a disabled key and for an expired one", async () => {
    const key = sim.state.keys.find((k) => k.id === ids.managementKeyId);
    if (!key) throw new Error("fixture key missing");

    key.state = "disabled";
    const disabled = await call("GET", `${service}/backups`);
    key.state = "enabled";
    key.expireAt = "2020-01-01T00:00:00Z";
    const expired = await call("GET", `${service}/backups`);

    expect(disabled.status).toBe(401);
    expect(expired.status).toBe(401);
  });

  it("answers 404 for an unknown route and 405 for a known path with another method", async () => {
    const unknown = await call("GET", "/v1/nothing");
    const malformed = await call("GET", `${org}/services/%E0%A4%A/backups`);
    const wrongMethod = await call("DELETE", org);

    expect(unknown.status).toBe(404);
    expect(malformed.status).toBe(404);
    expect(wrongMethod.status).toBe(405);
  });

  it("answers 404 to a request target that is not a URL path, instead of dropping the connection", async () => {
    const { hostname, port } = new URL(sim.managementUrl);
    const socket = connect(Number(port), hostname);
    socket.end("GET //[ HTTP/1.1\r\nHost: simulator\r\nConnection: close\r\n\r\n");
    let answer = "";
    socket.on("data", (chunk) => {
      answer += chunk;
    });

    await once(socket, "close");

    expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 404 Not Found");
  });

  it("answers 413 to a body over 1 MiB and changes nothing", async () => {
    const answer = await call("PATCH", org, { name: "x".repeat(1_100_000) });

    expect(answer.status).toBe(413);
    expect(answer.json.error).toMatch(/^PAYLOAD_TOO_LARGE: /);
    expect(sim.state.organizations[0]?.name).toBe("Acme Analytics");
  });

  it("answers 415 to a body without Content-Type application/json and 400 to broken JSON", async () => {
    const authorization = basic(ids.managementKeyId, "sim-management-secret");
    const noType = await fetch(`${sim.managementUrl}${org}`, {
      method: "PATCH",
      headers: { authorization, "content-type": "text/plain" },
      body: JSON.stringify({ name: "x" }),
    });
    const broken = await fetch(`${sim.managementUrl}${org}`, {
      method: "PATCH",
      headers: { authorization, "content-type": "application/json" },
      body: "{name:",
    });

    expect(noType.status).toBe(415);
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: string }).error).toMatch(/^BAD_REQUEST: /);
  });
});

describe("PATCH organization", () => {
  it("changes the name and applies privateEndpoints add/remove as a set by id", async () => {
    const answer = await call("PATCH", org, {
      name: "Acme Analytics EU",
      privateEndpoints: {
        add: [
          { id: "pe-git-1", description: "from git" },
          { id: "pe-console-1", description: "renamed" },
        ],
        remove: [{ id: "pe-unknown", description: "" }],
      },
    });

    expect(answer.status).toBe(200);
    expect(answer.json.result).toMatchObject({ id: ids.organizationId, name: "Acme Analytics EU" });
    expect(answer.json.result.privateEndpoints).toEqual([
      { id: "pe-git-1", description: "from git" },
      { id: "pe-console-1", description: "renamed" },
    ]);
  });

  it("removes an entry by id and leaves the rest", async () => {
    await call("PATCH", org, { privateEndpoints: { add: [{ id: "pe-git-1", description: "a" }] } });

    const answer = await call("PATCH", org, {
      privateEndpoints: { remove: [{ id: "pe-git-1", description: "a" }] },
    });

    expect(answer.json.result.privateEndpoints).toEqual([
      { id: "pe-console-1", description: "added in the console" },
    ]);
  });

  it("keeps an entry added without a description with an empty one", async () => {
    const answer = await call("PATCH", org, { privateEndpoints: { add: [{ id: "pe-bare" }] } });

    expect(answer.status).toBe(200);
    expect(answer.json.result.privateEndpoints).toContainEqual({ id: "pe-bare", description: "" });
  });

  it("answers 400 naming an unknown field, and 404 for an unknown organization", async () => {
    const unknownField = await call("PATCH", org, { name: "x", privateEndpoints: { added: [] } });
    const unknownOrg = await call("PATCH", "/v1/organizations/00000000-0000-4000-8000-000000000000", {});

    expect(unknownField.status).toBe(400);
    expect(unknownField.json.error).toBe("BAD_REQUEST: privateEndpoints.added: unknown field");
    expect(unknownOrg.status).toBe(404);
    expect(unknownOrg.json.error).toMatch(/^NOT_FOUND: /);
  });

  it("answers 403 when the key belongs to another organization", async () => {
    sim.state.organizations.push({
      id: "11111111-1111-4111-8111-111111111111",
      name: "Other",
      createdAt: "2024-01-01T00:00:00Z",
      privateEndpoints: [],
      byocConfig: [],
    });

    const answer = await call("PATCH", "/v1/organizations/11111111-1111-4111-8111-111111111111", {
      name: "x",
    });

    expect(answer.status).toBe(403);
  });
});

describe("PATCH key", () => {
  const key = `${org}/keys/${ids.ciDeployerKeyId}`;

  it("changes only the sent fields and never shows a secret or the owning organization", async () => {
    const answer = await call("PATCH", key, { roles: ["developer", "query_endpoints"], expireAt: "" });

    expect(answer.status).toBe(200);
    expect(answer.json.result).toMatchObject({
      id: ids.ciDeployerKeyId,
      name: "ci-deployer",
      roles: ["developer", "query_endpoints"],
      expireAt: null,
      ipAccessList: [{ source: "10.0.0.0/8", description: "office" }],
    });
    expect(answer.json.result).not.toHaveProperty("secret");
    expect(answer.json.result).not.toHaveProperty("organizationId");
  });

  it("never returns the secret of the key that authenticates", async () => {
    const answer = await call("PATCH", `${org}/keys/${ids.managementKeyId}`, { name: "driftless" });

    expect(JSON.stringify(answer.json)).not.toContain("sim-management-secret");
  });

  it.each([
    [{ roles: [] }, "roles"],
    [{ roles: ["owner"] }, "roles.0"],
    [{ name: 42 }, "name"],
    [{ expireAt: "next week" }, "expireAt"],
    [{ ipAccessList: [{ source: 42 }] }, "ipAccessList.0.source"],
    [{ state: "disabled" }, "state"],
  ])("answers 400 to %j naming %s", async (body, field) => {
    const answer = await call("PATCH", key, body);

    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatch(new RegExp(`^BAD_REQUEST: ${field.replace(".", "\\.")}:`));
  });

  it("answers 404 for an unknown key", async () => {
    const answer = await call("PATCH", `${org}/keys/00000000-0000-4000-8000-000000000000`, { name: "x" });

    expect(answer.status).toBe(404);
  });
});

describe("PATCH data pipe", () => {
  it("changes only sent fields, keeps the full resource, moves updatedAt and returns no credentials", async () => {
    const answer = await call("PATCH", pipe(ids.kafkaPipeId), {
      name: "orders",
      source: {
        kafka: { iamRole: "arn:aws:iam::1:role/r", credentials: { username: "u", password: "hunter2" } },
        validateSamples: true,
      },
      settings: { engine_max_threads: 4 },
    });

    expect(answer.status).toBe(200);
    expect(answer.json.result).toMatchObject({
      id: ids.kafkaPipeId,
      serviceId: ids.serviceId,
      name: "orders",
      source: {
        kafka: { iamRole: "arn:aws:iam::1:role/r", topics: "orders", consumerGroup: "driftless-orders" },
      },
      settings: { streaming_max_insert_wait_ms: 1000, engine_max_threads: 4 },
      destination: { table: "orders" },
    });
    expect(answer.json.result.updatedAt).not.toBe(answer.json.result.createdAt);
    expect(JSON.stringify(answer.json)).not.toMatch(/hunter2|credentials|username/);
  });

  it("answers 400 to a kafka field the PATCH does not allow", async () => {
    const answer = await call("PATCH", pipe(ids.kafkaPipeId), { source: { kafka: { brokers: "b:9092" } } });

    expect(answer.status).toBe(400);
    expect(answer.json.error).toBe("BAD_REQUEST: source.kafka.brokers: unknown field");
  });

  it("answers 400 to a source kind the pipe does not have", async () => {
    const answer = await call("PATCH", pipe(ids.kinesisPipeId), { source: { kafka: { iamRole: "r" } } });

    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatch(/^BAD_REQUEST: source\.kafka: /);
  });

  it("answers 400 to a non-integer setting", async () => {
    const answer = await call("PATCH", pipe(ids.kafkaPipeId), { settings: { engine_max_threads: 1.5 } });

    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatch(/^BAD_REQUEST: settings\.engine_max_threads: /);
  });

  it("accepts reversePrivateEndpointIds only when they name endpoints of the service", async () => {
    const created = await call("POST", endpoints, {
      description: "orders brokers",
      type: "MSK_MULTI_VPC",
      mskClusterArn: "arn:aws:kafka:eu-west-1:1:cluster/orders/x",
      mskAuthentication: "SASL_SCRAM",
    });

    const unknown = await call("PATCH", pipe(ids.kafkaPipeId), {
      source: { kafka: { reversePrivateEndpointIds: ["00000000-0000-4000-8000-000000000000"] } },
    });
    const known = await call("PATCH", pipe(ids.kafkaPipeId), {
      source: { kafka: { reversePrivateEndpointIds: [created.json.result.id] } },
    });

    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toMatch(/^BAD_REQUEST: source\.kafka\.reversePrivateEndpointIds: /);
    expect(known.status).toBe(200);
    expect(known.json.result.source.kafka.reversePrivateEndpointIds).toEqual([created.json.result.id]);
  });

  it("applies postgres tableMappingsToAdd and tableMappingsToRemove as a set", async () => {
    const orders = { sourceSchemaName: "public", sourceTable: "orders", targetTable: "orders" };
    const customers = { sourceSchemaName: "public", sourceTable: "customers", targetTable: "customers" };

    await call("PATCH", pipe(ids.postgresPipeId), { source: { postgres: { tableMappingsToAdd: [orders] } } });
    const answer = await call("PATCH", pipe(ids.postgresPipeId), {
      source: {
        postgres: {
          tableMappingsToAdd: [{ ...orders, sortingKeys: ["id"] }],
          tableMappingsToRemove: [customers],
          settings: { pullBatchSize: 500 },
        },
      },
    });

    expect(answer.status).toBe(200);
    expect(answer.json.result.source.postgres.tableMappings).toEqual([{ ...orders, sortingKeys: ["id"] }]);
    expect(answer.json.result.source.postgres.settings).toMatchObject({
      pullBatchSize: 500,
      syncIntervalSeconds: 60,
    });
  });

  it("replaces destination columns and field mappings", async () => {
    const answer = await call("PATCH", pipe(ids.objectStoragePipeId), {
      destination: { columns: [{ name: "id", type: "String" }] },
      fieldMappings: [],
      source: { objectStorage: { path: "new/", accessKey: { accessKeyId: "AKIA", secretKey: "s3cr3t" } } },
    });

    expect(answer.json.result.destination.columns).toEqual([{ name: "id", type: "String" }]);
    expect(answer.json.result.fieldMappings).toEqual([]);
    expect(answer.json.result.source.objectStorage.path).toBe("new/");
    expect(JSON.stringify(answer.json)).not.toMatch(/AKIA|s3cr3t/);
  });

  it("answers 404 for an unknown pipe and for an unknown service", async () => {
    const unknownPipe = await call("PATCH", pipe("00000000-0000-4000-8000-000000000000"), {});
    const unknownService = await call(
      "PATCH",
      `${org}/services/00000000-0000-4000-8000-000000000000/datapipes/${ids.kafkaPipeId}`,
      {},
    );

    expect(unknownPipe.status).toBe(404);
    expect(unknownService.status).toBe(404);
  });
});

describe("POST reverse private endpoint", () => {
  it("assigns id, endpointId and DNS names, then moves from provisioning to Ready", async () => {
    const answer = await call("POST", endpoints, {
      description: "kafka",
      type: "VPC_ENDPOINT_SERVICE",
      vpcEndpointServiceName: "com.amazonaws.vpce.eu-west-1.vpce-svc-123",
    });
    const ready = await until(() =>
      sim.state.endpoints.find((e) => e.id === answer.json.result.id && e.status === "Ready"),
    );

    expect(answer.status).toBe(200);
    expect(answer.json.result).toMatchObject({
      serviceId: ids.serviceId,
      type: "VPC_ENDPOINT_SERVICE",
      status: "Provisioning",
      vpcResourceShareArn: null,
    });
    expect(answer.json.result.id).toMatch(UUID_V4);
    expect(answer.json.result.endpointId).toMatch(/^vpce-/);
    expect(answer.json.result.dnsNames.length).toBeGreaterThan(0);
    expect(ready.endpointId).toBe(answer.json.result.endpointId);
  });

  it.each([
    [{ type: "VPC_RESOURCE", vpcResourceConfigurationId: "rcfg-1" }, "vpcResourceShareArn"],
    [{ type: "MSK_MULTI_VPC", mskClusterArn: "arn", mskAuthentication: "PLAIN" }, "mskAuthentication"],
    [{ type: "MSK_MULTI_VPC", mskAuthentication: "SASL_IAM" }, "mskClusterArn"],
    [{ type: "VPC_ENDPOINT_SERVICE" }, "vpcEndpointServiceName"],
    [{ type: "PRIVATE_LINK", vpcEndpointServiceName: "x" }, "type"],
    [
      { type: "VPC_ENDPOINT_SERVICE", vpcEndpointServiceName: "x", description: "d".repeat(256) },
      "description",
    ],
    [{ type: "VPC_ENDPOINT_SERVICE", vpcEndpointServiceName: "x", region: "eu" }, "region"],
  ])("answers 400 to %j naming %s", async (body, field) => {
    const answer = await call("POST", endpoints, body);

    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatch(new RegExp(`^BAD_REQUEST: ${field}:`));
    expect(sim.state.endpoints).toEqual([]);
  });

  it("accepts a description of exactly 255 characters", async () => {
    const answer = await call("POST", endpoints, {
      type: "VPC_RESOURCE",
      description: "d".repeat(255),
      vpcResourceConfigurationId: "rcfg-1",
      vpcResourceShareArn: "arn:aws:ram:eu-west-1:1:resource-share/x",
    });

    expect(answer.status).toBe(200);
  });
});

describe("GET backups", () => {
  it("lists the service's backups most recent first, including ones added later", async () => {
    const added = sim.addBackup(ids.serviceId);
    sim.state.backups.push({ ...added, id: "old", finishedAt: "2020-01-01T00:00:00Z" });

    const answer = await call("GET", `${service}/backups`);

    const finished = answer.json.result.map((b: { finishedAt: string }) => Date.parse(b.finishedAt));
    expect(answer.json.result).toHaveLength(5);
    expect(answer.json.result[0].id).toBe(added.id);
    expect(finished).toEqual([...finished].sort((a, b) => b - a));
    expect(answer.json.result.at(-1).id).toBe("old");
  });

  it("starts with three backups that finished within the last day", async () => {
    const answer = await call("GET", `${service}/backups`);

    expect(answer.json.result).toHaveLength(3);
    for (const backup of answer.json.result) {
      expect(Date.now() - Date.parse(backup.finishedAt)).toBeLessThan(24 * 3_600_000);
    }
  });

  it("answers 404 for an unknown service", async () => {
    const answer = await call("GET", `${org}/services/00000000-0000-4000-8000-000000000000/backups`);

    expect(answer.status).toBe(404);
  });
});

describe("recorded requests", () => {
  it("records method, path, route template, parsed body and status in arrival order", async () => {
    await call("PATCH", org, { name: "A" });
    await call("PATCH", `${org}/keys/${ids.ciDeployerKeyId}`, { roles: [] });

    expect(
      sim.requests.map(({ api, method, path, route, body, status }) => ({
        api,
        method,
        path,
        route,
        body,
        status,
      })),
    ).toEqual([
      {
        api: "management",
        method: "PATCH",
        path: org,
        route: "/v1/organizations/{organizationId}",
        body: { name: "A" },
        status: 200,
      },
      {
        api: "management",
        method: "PATCH",
        path: `${org}/keys/${ids.ciDeployerKeyId}`,
        route: "/v1/organizations/{organizationId}/keys/{keyId}",
        body: { roles: [] },
        status: 400,
      },
    ]);
    sim.clearRequests();
    expect(sim.requests).toEqual([]);
  });
});
