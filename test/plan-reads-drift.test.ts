import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ROUTES } from "../src/platform/routes.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";
import { mskEndpoint } from "./helpers/manifests.js";

/**
 * `plan` with reads on reads the live objects and shows what differs from git as changes to send,
 * each marked as changed outside git; with reads off it reads nothing and cannot see them.
 */

const org = `${header("Organization", "acme")}  organizationId: ${ids.organizationId}
  name: Acme Analytics
  privateEndpoints:
    - {id: vpce-a, description: "vpce-a desc"}
`;

const key = `${header("ApiKey", "ci")}  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ci deployer
  roles: [developer]
`;

const pipe = `${header("DataPipe", "customers")}  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.postgresPipeId}
  name: customers from postgres
  source:
    postgres:
      settings: {syncIntervalSeconds: 30}
`;

const dashboard = `${header("Dashboard", "overview")}  dashboardId: ${ids.dashboardId}
  name: Platform overview
  tiles:
    - key: lag
      id: "${ids.tileIds[0]}"
      name: Ingest lag
      x: 0
      y: 0
      w: 6
      h: 3
      series: [{type: time, sourceId: "${ids.sourceIds[0]}", aggFn: count, where: "kind:lag", groupBy: [service]}]
`;

describe("plan with reads on", () => {
  let world: EngineWorld;
  const view = (report: Awaited<ReturnType<EngineWorld["plan"]>>, id: string) =>
    report.resources.find((r) => `${r.kind}/${r.name}` === id);

  beforeEach(async () => {
    world = await startEngineWorld({ simulator: { contract: "full" } });
    await world.write("org.yaml", org);
    await world.write("key.yaml", key);
    await world.write("pipe.yaml", pipe);
    const applied = await world.apply({}, { reads: true });
    expect(applied.statuses.filter((s) => s.status !== "Synced")).toEqual([]);
    world.sim.clearRequests();
  });
  afterEach(() => world.close());

  it("shows a rename made in the console as the change that sends git's name back", async () => {
    const live = world.sim.state.organizations[0];
    if (!live) throw new Error("no organization");
    live.name = "Renamed in the console";

    const report = await world.plan({ reads: true });

    const acme = view(report, "Organization/acme");
    expect(acme?.outcome).toBe("send");
    expect(acme?.request?.body).toEqual({ name: "Acme Analytics" });
    expect(acme?.changes).toEqual([
      { path: "name", from: "Renamed in the console", to: "Acme Analytics", op: "set", outsideGit: true },
    ]);
    expect(report.reads).toEqual({ read: 3, drifted: 1, unread: 0, unapplied: 0, checked: 0, missing: 0 });
    expect(view(report, "ApiKey/ci")?.outcome).toBe("none");
    expect(world.writes()).toEqual([]);
  });

  it("sees nothing with reads off: no read is sent", async () => {
    const live = world.sim.state.organizations[0];
    if (live) live.name = "Renamed in the console";

    const report = await world.plan();

    expect(view(report, "Organization/acme")?.outcome).toBe("none");
    expect(report.reads).toBeUndefined();
    expect(world.sim.requests).toEqual([]);
  });

  it("sends back a private endpoint removed in the console, a key's roles and a pipe setting", async () => {
    const organization = world.sim.state.organizations[0];
    if (organization)
      organization.privateEndpoints = organization.privateEndpoints.filter((e) => e.id !== "vpce-a");
    const apiKey = world.sim.state.keys.find((k) => k.id === ids.ciDeployerKeyId);
    if (apiKey) apiKey.roles = ["admin"];
    const postgres = world.sim.state.pipes.find((p) => p.id === ids.postgresPipeId);
    const settings = postgres?.source.postgres?.settings;
    if (settings) settings.syncIntervalSeconds = 90;

    const report = await world.plan({ reads: true });

    expect(view(report, "Organization/acme")?.request?.body).toEqual({
      privateEndpoints: { add: [{ id: "vpce-a", description: "vpce-a desc" }] },
    });
    expect(view(report, "Organization/acme")?.changes.every((c) => c.outsideGit)).toBe(true);
    expect(view(report, "ApiKey/ci")?.request?.body).toEqual({ roles: ["developer"] });
    expect(view(report, "ApiKey/ci")?.changes).toEqual([
      { path: "roles", from: ["admin"], to: ["developer"], op: "set", outsideGit: true },
    ]);
    expect(view(report, "DataPipe/customers")?.request?.body).toEqual({
      source: { postgres: { settings: { syncIntervalSeconds: 30 } } },
    });
    expect(report.reads).toEqual({ read: 3, drifted: 3, unread: 0, unapplied: 0, checked: 0, missing: 0 });
    expect(world.writes()).toEqual([]);
  });

  it("reports an endpoint changed in the console as an error: it cannot be updated", async () => {
    await world.write("e.yaml", mskEndpoint("orders-msk"));
    await world.apply({}, { reads: true });
    const endpoint = world.sim.state.endpoints[0];
    if (endpoint) endpoint.description = "edited in the console";

    const report = await world.plan({ reads: true });

    const shown = view(report, "ReversePrivateEndpoint/orders-msk");
    expect(shown?.outcome).toBe("refuse");
    expect(shown?.reason).toContain("cannot be updated");
    expect(shown?.changes).toEqual([
      { path: "description", from: "edited in the console", to: "orders MSK", op: "set", outsideGit: true },
    ]);
  });

  it("sends a dashboard whole again when a tile was changed in the console, the tile marked", async () => {
    await world.write("dashboard.yaml", dashboard);
    expect((await world.apply({}, { reads: true })).ok).toBe(true);
    world.sim.consoleEdit(
      { collection: "dashboards", id: ids.dashboardId, tileId: ids.tileIds[0] },
      { name: "Renamed tile" },
    );

    const report = await world.plan({ reads: true });

    const shown = view(report, "Dashboard/overview");
    expect(shown?.request?.method).toBe("PUT");
    const tiles = shown?.request?.body as { tiles: Array<{ id: string; name: string }> };
    expect(tiles.tiles.map((t) => [t.id, t.name])).toEqual([[ids.tileIds[0], "Ingest lag"]]);
    expect(JSON.stringify(shown?.request?.body)).not.toContain("outside git");
    expect(shown?.changes).toContainEqual({
      path: "tiles[lag].name",
      from: "Renamed tile",
      to: "Ingest lag",
      op: "set",
      outsideGit: true,
    });
  });

  it("notes a read that failed and plans the rest", async () => {
    world.sim.inject({
      api: "management",
      method: "GET",
      route: ROUTES.getApiKey.template,
      kind: "status",
      status: 404,
    });
    const live = world.sim.state.organizations[0];
    if (live) live.name = "Renamed in the console";

    const report = await world.plan({ reads: true });

    expect(view(report, "ApiKey/ci")?.notes?.[0]).toContain("the live object could not be read");
    expect(report.reads).toEqual({ read: 2, drifted: 1, unread: 1, unapplied: 0, checked: 0, missing: 0 });
    expect(view(report, "Organization/acme")?.outcome).toBe("send");
  });
});

describe("apply with reads on", () => {
  let world: EngineWorld;
  beforeEach(async () => {
    world = await startEngineWorld({ simulator: { contract: "full" } });
  });
  afterEach(() => world.close());

  it("sends back what plan showed as changed outside git, and then plans nothing", async () => {
    await world.write("org.yaml", org);
    await world.apply({}, { reads: true });
    const live = world.sim.state.organizations[0];
    if (live) live.name = "Renamed in the console";
    world.sim.clearRequests();

    const planned = await world.plan({ reads: true });
    const applied = await world.apply({}, { reads: true });
    const after = await world.plan({ reads: true });

    const body = planned.resources.find((r) => r.kind === "Organization")?.request?.body;
    expect(body).toEqual({ name: "Acme Analytics" });
    expect(applied.ok).toBe(true);
    expect(world.writes().map((r) => r.body)).toEqual([body]);
    expect(world.sim.state.organizations[0]?.name).toBe("Acme Analytics");
    expect(after.resources.find((r) => r.kind === "Organization")?.outcome).toBe("none");
    expect(after.reads).toMatchObject({ drifted: 0, unread: 0, unapplied: 0 });
  });
});
