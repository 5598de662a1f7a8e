import { afterEach, describe, expect, it } from "vitest";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/** What apply sends to, and reads from, a platform of the published contract. */

let world: EngineWorld | undefined;
afterEach(() => world?.close());

const full = () => startEngineWorld({ simulator: { contract: "full" } });

const key = (fields: string) => `${header("ApiKey", "ci-deployer")}  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
${fields}`;

const endpoint = `${header("ReversePrivateEndpoint", "orders-msk")}  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  description: MSK of the orders team
  type: MSK_MULTI_VPC
  mskClusterArn: arn:aws:kafka:eu-west-1:111122223333:cluster/orders/abc
  mskAuthentication: SASL_SCRAM
`;

const dashboard = `${header("Dashboard", "platform-overview")}  dashboardId: ${ids.dashboardId}
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
    - key: errors
      name: Errors by service
      x: 6
      y: 0
      w: 6
      h: 3
      series: [{type: table, sourceId: "${ids.sourceIds[0]}", aggFn: count, where: "", groupBy: [service], sortOrder: desc}]
    - key: notes
      name: Notes
      x: 0
      y: 3
      w: 12
      h: 2
      series: [{type: markdown, content: "Paged on ingest lag."}]
`;

describe("requests both contracts accept", () => {
  it('sends "never expires" as null, and a key state when the manifest states one', async () => {
    world = await full();
    await world.write("key.yaml", key('  expireAt: ""\n  state: enabled\n'));

    const result = await world.apply();

    expect(result.statuses.map((s) => s.status)).toEqual(["Synced"]);
    expect(world.writes().map((r) => r.body)).toEqual([{ expireAt: null, state: "enabled" }]);
  });
});

describe("dashboard answers in config form", () => {
  it("keeps every tile id, and sends nothing on the next passes", async () => {
    world = await full();
    await world.write("dashboard.yaml", dashboard);

    const first = await world.apply();
    const tileIds = (await world.state()).resources["Dashboard/platform-overview"]?.tileIds;
    world.sim.clearRequests();
    const second = await world.apply();
    const third = await world.apply();

    const live = world.sim.state.dashboards[0]?.tiles.map((t) => t.id);
    expect(first.statuses.map((s) => s.status)).toEqual(["Synced"]);
    expect(tileIds).toEqual({ lag: ids.tileIds[0], errors: live?.[1], notes: live?.[2] });
    expect(live?.[0]).toBe(ids.tileIds[0]);
    expect(world.writes()).toEqual([]);
    expect(second.ok && third.ok).toBe(true);
  });

  it("sends the tiles with the ids the config answer gave, after an edit", async () => {
    world = await full();
    await world.write("dashboard.yaml", dashboard);
    await world.apply();
    const before = world.sim.state.dashboards[0]?.tiles.map((t) => t.id);
    world.sim.clearRequests();
    await world.write("dashboard.yaml", dashboard.replace("name: Notes", "name: Runbook"));

    await world.apply();

    expect(world.sim.state.dashboards[0]?.tiles.map((t) => t.id)).toEqual(before);
    expect(world.sim.state.alerts.map((a) => a.id)).toEqual([ids.alertId]);
  });
});

describe("reverse private endpoint statuses", () => {
  const answer = (status: string) => ({
    status: 200,
    requestId: "5c9d4b3f-6e80-4fa1-8243-5d6e7f8091a2",
    result: {
      id: "7e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b",
      serviceId: ids.serviceId,
      description: "MSK of the orders team",
      type: "MSK_MULTI_VPC",
      endpointId: "vpce-0123456789abcdef0",
      status,
    },
  });
  const inject = (status: string) =>
    world?.sim.inject({
      api: "management",
      method: "POST",
      kind: "status",
      status: 200,
      body: answer(status),
    });

  it.each(["Failed", "Rejected", "Expired"])(
    "makes an endpoint answered %s a Failed resource that says what to do",
    async (status) => {
      world = await full();
      await world.write("endpoint.yaml", endpoint);
      inject(status);

      const result = await world.apply();
      const again = await world.apply();

      expect(result.statuses[0]).toMatchObject({ status: "Failed" });
      expect(result.statuses[0]?.message).toContain(
        `answered status ${status} for endpoint 7e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b`,
      );
      expect(result.statuses[0]?.message).toContain("Create a replacement under a new manifest name");
      expect(again.statuses[0]?.status).toBe("Failed");
    },
  );

  it.each(["Provisioning", "PendingAcceptance", "Unknown", "Deleting"])(
    "keeps an endpoint answered %s Synced, showing the status",
    async (status) => {
      world = await full();
      await world.write("endpoint.yaml", endpoint);
      inject(status);
      await world.apply();

      const result = await world.apply();

      expect(result.statuses[0]).toMatchObject({
        status: "Synced",
        message: `created as 7e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b, status ${status} when created`,
      });
    },
  );
});
