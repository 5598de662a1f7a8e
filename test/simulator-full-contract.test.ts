import { afterEach, describe, expect, it } from "vitest";
import { contractCheck } from "../src/platform/contracts.js";
import type { RouteName } from "../src/platform/routes.js";
import {
  defaultIds as ids,
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "../src/simulator/index.js";

/** The simulator in `full` mode: the published contract's validation, reads and answer shapes. */

let sim: Simulator | undefined;
afterEach(() => sim?.close());

async function start(options: SimulatorOptions = {}) {
  sim = await startSimulator({
    contract: "full",
    rateLimit: { management: false, observability: false },
    endpointReadyAfterMs: 0,
    ...options,
  });
  return sim;
}

async function call(api: "management" | "observability", method: string, path: string, body?: unknown) {
  if (!sim) throw new Error("start the simulator first");
  const base = api === "management" ? sim.managementUrl : sim.observabilityUrl;
  const authorization =
    api === "management"
      ? `Basic ${Buffer.from(`${sim.credentials.managementKeyId}:${sim.credentials.managementKeySecret}`).toString("base64")}`
      : `Bearer ${sim.credentials.observabilityToken}`;
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, text, json: text ? JSON.parse(text) : undefined };
}

const org = `/v1/organizations/${ids.organizationId}`;
const service = `${org}/services/${ids.serviceId}`;
const endpoints = `${service}/datapipesReversePrivateEndpoints`;
const dashboard = `/api/v2/dashboards/${ids.dashboardId}`;
const source = ids.sourceIds[0];
const tile = (name: string, id?: string) => ({
  ...(id ? { id } : {}),
  name,
  x: 0,
  y: 0,
  w: 6,
  h: 3,
  series: [{ type: "time", sourceId: source, aggFn: "count", where: "kind:lag", groupBy: ["service"] }],
});

/** The answer conforms to the published document of its route. */
function conforms(route: RouteName, answer: { status: number; json: unknown }) {
  expect(contractCheck("full").answer(route, answer.status, answer.json)).toEqual([]);
}

describe("the simulator's full mode: reads", () => {
  it("reads an organization, a key and a pipe as the same objects their updates answer", async () => {
    await start();
    const pipe = `${service}/datapipes/${ids.kafkaPipeId}`;
    const key = `${org}/keys/${ids.ciDeployerKeyId}`;

    const written = [
      await call("management", "PATCH", org, { name: "Acme" }),
      await call("management", "PATCH", key, { state: "disabled", expireAt: null }),
      await call("management", "PATCH", pipe, { settings: { streaming_max_insert_wait_ms: 800 } }),
    ];
    const read = [
      await call("management", "GET", org),
      await call("management", "GET", key),
      await call("management", "GET", pipe),
    ];

    expect(read.map((r) => r.json.result)).toEqual(written.map((w) => w.json.result));
    expect(read[1]?.json.result).toMatchObject({ state: "disabled", expireAt: null, assignedRoles: [] });
    expect(read[1]?.json.result).not.toHaveProperty("usedAt");
    conforms("getOrganization", read[0] as { status: number; json: unknown });
    conforms("getApiKey", read[1] as { status: number; json: unknown });
    conforms("getDataPipe", read[2] as { status: number; json: unknown });
  });

  it("lists a service's reverse private endpoints and reads one, GCP service attachments included", async () => {
    await start();

    const created = await call("management", "POST", endpoints, {
      description: "analytics in GCP",
      type: "GCP_PSC_SERVICE_ATTACHMENT",
      gcpServiceAttachment: "projects/acme/regions/europe-west4/serviceAttachments/analytics",
    });
    const id = created.json.result.id as string;
    const list = await call("management", "GET", endpoints);
    const one = await call("management", "GET", `${endpoints}/${id}`);

    expect(created.status).toBe(200);
    expect(list.json.result).toEqual([created.json.result]);
    expect(one.json.result).toEqual(created.json.result);
    expect(one.json.result).toMatchObject({
      type: "GCP_PSC_SERVICE_ATTACHMENT",
      gcpServiceAttachment: "projects/acme/regions/europe-west4/serviceAttachments/analytics",
      status: "Ready",
    });
    conforms("createReversePrivateEndpoint", created);
    conforms("listReversePrivateEndpoints", list);
  });

  it("lists the team's sources, and reads a dashboard as its PUT answered it", async () => {
    await start();

    const sources = await call("observability", "GET", "/api/v2/sources");
    const put = await call("observability", "PUT", dashboard, { name: "Overview", tiles: [tile("Lag")] });
    const read = await call("observability", "GET", dashboard);

    expect(sources.json.data.map((s: { id: string }) => s.id)).toEqual(ids.sourceIds);
    expect(read.json).toEqual(put.json);
    conforms("listSources", sources);
    conforms("getDashboard", read);
  });

  it("serves no read in minimal mode", async () => {
    await start({ contract: "minimal" });

    const answers = [
      await call("management", "GET", org),
      await call("observability", "GET", "/api/v2/sources"),
    ];

    expect(answers.map((a) => a.status)).toEqual([405, 404]);
  });
});

describe("the simulator's full mode: answer shapes", () => {
  it("answers tiles in config form, never series, keeping the ids of known tiles", async () => {
    await start();

    const answer = await call("observability", "PUT", dashboard, {
      name: "Overview",
      tiles: [tile("Ingest lag", ids.tileIds[0]), tile("New")],
    });

    const tiles = answer.json.data.tiles;
    expect(tiles[0]).toEqual({
      id: ids.tileIds[0],
      name: "Ingest lag",
      x: 0,
      y: 0,
      w: 6,
      h: 3,
      config: {
        displayType: "line",
        sourceId: source,
        select: [{ aggFn: "count", where: "kind:lag", whereLanguage: "lucene" }],
        groupBy: "service",
        fillNulls: true,
      },
    });
    expect(tiles[1].id).toMatch(/^[0-9a-f]{24}$/);
    expect(JSON.stringify(answer.json)).not.toContain('"series"');
    conforms("putDashboard", answer);
  });

  it("answers an alert with teamId, dashboardId and channels", async () => {
    await start();
    sim?.setAlertState(ids.alertId, "INSUFFICIENT_DATA");

    const answer = await call("observability", "GET", `/api/v2/alerts/${ids.alertId}`);

    expect(answer.json.data).toMatchObject({
      state: "INSUFFICIENT_DATA",
      dashboardId: ids.dashboardId,
      tileId: ids.tileIds[0],
      channels: [{ type: "webhook" }],
    });
    expect(answer.json.data).not.toHaveProperty("dashboard");
    expect(answer.json.data).not.toHaveProperty("team");
    conforms("getAlert", answer);
  });

  it("answers backups with status and type, and finishedAt only once finished", async () => {
    await start({ backupEveryMs: 0 });
    sim?.addBackup(ids.serviceId, new Date(), "in_progress");
    sim?.addBackup(ids.serviceId, new Date(Date.now() - 1000), "error");

    const answer = await call("management", "GET", `${service}/backups`);

    const [running, failed, done] = answer.json.result;
    expect(running).toMatchObject({ status: "in_progress", type: "incremental" });
    expect(running).not.toHaveProperty("finishedAt");
    expect(failed).toMatchObject({ status: "error", finishedAt: expect.any(String) });
    expect(done).toMatchObject({ status: "done", finishedAt: expect.any(String) });
    conforms("listBackups", answer);
  });
});

describe("the simulator's full mode: validation", () => {
  it("refuses a series without a sourceId, in the published words", async () => {
    await start();
    const [bad] = [{ ...tile("Lag"), series: [{ type: "time", aggFn: "count", where: "", groupBy: [] }] }];

    const answer = await call("observability", "PUT", dashboard, { name: "x", tiles: [bad] });

    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({
      message: "Body validation failed: tiles.0.series.0.sourceId: is required",
    });
  });

  it("refuses a sourceId that names no source of the team", async () => {
    await start();
    const other = "65f1a2b3c4d5e6f7081929ff";
    const bad = { ...tile("Lag"), series: [{ ...tile("Lag").series[0], sourceId: other }] };

    const answer = await call("observability", "PUT", dashboard, { name: "x", tiles: [bad] });

    expect(answer.status).toBe(400);
    expect(answer.json.message).toBe(`Could not find the following source IDs: ${other}`);
  });

  it("refuses a tile outside the grid and answers an unknown dashboard with an empty 404", async () => {
    await start();

    const outside = await call("observability", "PUT", dashboard, {
      name: "x",
      tiles: [{ ...tile("a"), x: 24 }],
    });
    const unknown = await call("observability", "PUT", "/api/v2/dashboards/65f1a2b3c4d5e6f708190000", {
      name: "x",
      tiles: [],
    });

    expect(outside.json.message).toBe("Body validation failed: tiles.0.x: must be at most 23");
    expect(unknown.status).toBe(404);
    expect(unknown.text).toBe("");
  });

  it("refuses an empty expireAt and a setting out of bounds, with the management error body", async () => {
    await start();

    const key = await call("management", "PATCH", `${org}/keys/${ids.ciDeployerKeyId}`, { expireAt: "" });
    const pipe = await call("management", "PATCH", `${service}/datapipes/${ids.kafkaPipeId}`, {
      settings: { streaming_max_insert_wait_ms: 100 },
    });

    expect(key.status).toBe(400);
    expect(key.json.error).toMatch(/^BAD_REQUEST: expireAt: must be an ISO-8601 date-time/);
    expect(pipe.json.error).toBe("BAD_REQUEST: settings.streaming_max_insert_wait_ms: must be at least 500");
    expect(Object.keys(pipe.json).sort()).toEqual(["error", "requestId", "status"]);
  });
});

describe("table mapping order", () => {
  const mapping = { sourceSchemaName: "public", sourceTable: "customers", targetTable: "customers" };
  const patch = {
    source: {
      postgres: {
        tableMappingsToRemove: [mapping],
        tableMappingsToAdd: [{ ...mapping, excludedColumns: ["email"] }],
      },
    },
  };

  it.each([
    ["remove-first", [{ ...mapping, excludedColumns: ["email"] }]],
    ["add-first", []],
  ] as const)("%s: a mapping both removed and added in one PATCH ends as %j", async (order, expected) => {
    await start({ tableMappingOrder: order });

    const answer = await call("management", "PATCH", `${service}/datapipes/${ids.postgresPipeId}`, patch);

    expect(answer.json.result.source.postgres.tableMappings).toEqual(expected);
  });
});
