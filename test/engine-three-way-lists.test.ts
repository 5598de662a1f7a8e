import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type EngineWorld,
  ids,
  organizationWith,
  postgresPipeWith,
  startEngineWorld,
} from "./helpers/engine-world.js";
import { createHttpTestServer } from "./helpers/http-test-server.js";

/** Organization privateEndpoints and postgres tableMappings: only what driftless added is ever removed. */

describe("three-way lists", () => {
  let world: EngineWorld;
  const liveEndpoints = () => world.sim.state.organizations[0]?.privateEndpoints.map((e) => e.id);
  const liveTables = () =>
    world.sim.state.pipes
      .find((p) => p.id === ids.postgresPipeId)
      ?.source.postgres?.tableMappings.map((m) => m.sourceTable);

  beforeEach(async () => {
    world = await startEngineWorld();
  });
  afterEach(() => world.close());

  it("removes only the private endpoints it added, never one added out-of-band or found on first contact", async () => {
    // pe-console-1 is in the platform before driftless; the manifest lists it too.
    await world.write("org.yaml", organizationWith([ids.consoleEndpointId, "vpce-a", "vpce-b"]));
    await world.apply();
    world.sim.state.organizations[0]?.privateEndpoints.push({ id: "pe-out-of-band", description: "console" });
    world.sim.clearRequests();

    await world.write("org.yaml", organizationWith([]));
    const result = await world.apply();

    expect(result.ok).toBe(true);
    expect(world.writes().map((r) => r.body)).toEqual([
      {
        privateEndpoints: {
          remove: [
            { id: "vpce-a", description: "vpce-a desc" },
            { id: "vpce-b", description: "vpce-b desc" },
          ],
        },
      },
    ]);
    expect(liveEndpoints()).toEqual([ids.consoleEndpointId, "pe-out-of-band"]);
  });

  it("adds a new entry and later removes only that one, across separate applies", async () => {
    await world.write("org.yaml", organizationWith(["vpce-a"]));
    await world.apply();
    world.sim.clearRequests();

    await world.write("org.yaml", organizationWith(["vpce-a", "vpce-c"]));
    await world.apply();
    await world.write("org.yaml", organizationWith(["vpce-c"]));
    await world.apply();

    expect(world.writes().map((r) => r.body)).toEqual([
      { privateEndpoints: { add: [{ id: "vpce-c", description: "vpce-c desc" }] } },
      { privateEndpoints: { remove: [{ id: "vpce-a", description: "vpce-a desc" }] } },
    ]);
    expect(liveEndpoints()).toEqual([ids.consoleEndpointId, "vpce-c"]);
  });

  it("removes only the table mappings it added; one added out-of-band and the one found first stay", async () => {
    await world.write("pipe.yaml", postgresPipeWith(["customers", "addresses", "orders"]));
    await world.apply();
    world.sim.state.pipes
      .find((p) => p.id === ids.postgresPipeId)
      ?.source.postgres?.tableMappings.push({
        sourceSchemaName: "public",
        sourceTable: "invoices",
        targetTable: "invoices",
      });
    world.sim.clearRequests();

    await world.write("pipe.yaml", postgresPipeWith(["orders"]));
    await world.apply();

    expect(world.writes().map((r) => r.body)).toEqual([
      {
        source: {
          postgres: {
            tableMappingsToRemove: [
              { sourceSchemaName: "public", sourceTable: "addresses", targetTable: "addresses" },
            ],
          },
        },
      },
    ]);
    expect(liveTables()).toEqual(["customers", "orders", "invoices"]);
    const state = await world.state();
    expect(state.resources["DataPipe/customers"]?.owned?.tableMappings).toEqual(["public.orders -> orders"]);
  });

  it("converges when the platform's answers leave the lists out: adds once, then sends nothing", async () => {
    const platform = await createHttpTestServer((request) => ({
      status: 200,
      body: { status: 200, requestId: "req-1", result: { id: request.url.split("/").at(-1), name: "x" } },
    }));
    await world.write("org.yaml", organizationWith(["vpce-a"]));
    await world.write("pipe.yaml", postgresPipeWith(["orders"]));
    const apply = () => world.apply({}, { config: { managementUrl: platform.url } });

    try {
      const first = await apply();
      const second = await apply();

      expect(first.statuses.map((s) => s.status)).toEqual(["Synced", "Synced"]);
      expect(second.ok).toBe(true);
      const bodies = platform.requests.map((r) => r.json);
      expect(bodies).toContainEqual({
        privateEndpoints: { add: [{ id: "vpce-a", description: "vpce-a desc" }] },
      });
      expect(bodies).toContainEqual({
        source: {
          postgres: {
            tableMappingsToAdd: [
              { sourceSchemaName: "public", sourceTable: "orders", targetTable: "orders" },
            ],
          },
        },
      });
      expect(bodies).toHaveLength(4);
    } finally {
      await platform.close();
    }
  });

  it("adds back an owned entry the console removed, at the next re-assertion, and still owns it", async () => {
    await world.write("org.yaml", organizationWith(["vpce-a"]));
    await world.apply();
    const live = world.sim.state.organizations[0];
    if (live) live.privateEndpoints = live.privateEndpoints.filter((e) => e.id !== "vpce-a");
    world.sim.clearRequests();

    const result = await world.apply({ reassert: true });

    expect(result.ok).toBe(true);
    expect(world.writes().map((r) => r.body)).toEqual([
      { name: "Acme Analytics" },
      { privateEndpoints: { add: [{ id: "vpce-a", description: "vpce-a desc" }] } },
    ]);
    expect(liveEndpoints()).toEqual([ids.consoleEndpointId, "vpce-a"]);
    const state = await world.state();
    expect(state.resources["Organization/acme"]?.owned?.privateEndpoints).toEqual(["vpce-a"]);
  });
});
