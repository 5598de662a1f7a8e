import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ROUTES } from "../src/platform/routes.js";
import {
  type EngineWorld,
  ids,
  organizationWith,
  postgresPipeWith,
  startEngineWorld,
} from "./helpers/engine-world.js";

/**
 * With reads on, the three-way lists (organization privateEndpoints, postgres tableMappings) are known
 * from a read of the live object: the first contact sends its add/remove sets at once, with no request
 * that only learns the list, and an entry added in the console is never claimed, so never removed.
 */

const mapping = (table: string) => ({ sourceSchemaName: "public", sourceTable: table, targetTable: table });

describe("three-way lists with reads on", () => {
  let world: EngineWorld;
  const reads = { reads: true };
  const organization = () => world.sim.state.organizations[0];
  const liveEndpoints = () => organization()?.privateEndpoints.map((e) => e.id);
  const postgres = () => world.sim.state.pipes.find((p) => p.id === ids.postgresPipeId)?.source.postgres;
  const sent = () => world.sim.requests.map((r) => `${r.method} ${r.route}`);

  beforeEach(async () => {
    world = await startEngineWorld({ simulator: { contract: "full" } });
  });
  afterEach(() => world.close());

  it("sends an organization's sets in its first request, after reading the live list", async () => {
    await world.write("org.yaml", organizationWith([ids.consoleEndpointId, "vpce-a"]));

    const result = await world.apply({}, reads);

    expect(result.ok).toBe(true);
    expect(sent()).toEqual([
      `GET ${ROUTES.getOrganization.template}`,
      `PATCH ${ROUTES.updateOrganization.template}`,
    ]);
    // The console's entry is sent again for its description, the manifest's; it was live before
    // driftless, so it is never owned. The name is live already: the first contact's read shows it.
    const add = [ids.consoleEndpointId, "vpce-a"].map((id) => ({ id, description: `${id} desc` }));
    expect(world.writes().map((r) => r.body)).toEqual([{ privateEndpoints: { add } }]);
    const state = await world.state();
    expect(state.resources["Organization/acme"]?.owned?.privateEndpoints).toEqual(["vpce-a"]);
  });

  it("never claims an entry added in the console that the manifest lists later, so never removes it", async () => {
    await world.write("org.yaml", organizationWith(["vpce-a"]));
    await world.apply({}, reads);
    organization()?.privateEndpoints.push({ id: "pe-console-2", description: "pe-console-2 desc" });

    // The manifest now lists the console's entry: the last answer did not have it, so it is read again.
    await world.write("org.yaml", organizationWith(["vpce-a", "pe-console-2"]));
    await world.apply({}, reads);
    await world.write("org.yaml", organizationWith([]));
    world.sim.clearRequests();
    await world.apply({}, reads);

    expect(world.writes().map((r) => r.body)).toEqual([
      { privateEndpoints: { remove: [{ id: "vpce-a", description: "vpce-a desc" }] } },
    ]);
    expect(liveEndpoints()).toEqual([ids.consoleEndpointId, "pe-console-2"]);
  });

  it("reads the list no more once every entry the manifest lists was seen live", async () => {
    await world.write("org.yaml", organizationWith(["vpce-a"]));
    await world.apply({}, reads);
    world.sim.clearRequests();

    const again = await world.apply({}, reads);

    // The one read left is apply's look for changes made outside git.
    expect(again.ok).toBe(true);
    expect(sent()).toEqual([`GET ${ROUTES.getOrganization.template}`]);
  });

  it("sends a postgres pipe's mappings in its first request, after reading the live pipe", async () => {
    await world.write("pipe.yaml", postgresPipeWith(["customers", "orders"]));

    const result = await world.apply({}, reads);

    // A first contact reads the service's pipes once, however many of them manifests name.
    expect(result.ok).toBe(true);
    expect(sent()).toEqual([
      `GET ${ROUTES.listDataPipes.template}`,
      `PATCH ${ROUTES.updateDataPipe.template}`,
    ]);
    expect(world.writes().map((r) => r.body)).toEqual([
      {
        name: "customers from postgres",
        source: { postgres: { tableMappingsToAdd: [mapping("orders")] } },
      },
    ]);
    expect(postgres()?.tableMappings.map((m) => m.sourceTable)).toEqual(["customers", "orders"]);
    const state = await world.state();
    expect(state.resources["DataPipe/customers"]?.owned?.tableMappings).toEqual(["public.orders -> orders"]);
    expect(JSON.stringify(state)).not.toContain("password");
  });

  it("learns the list with a first request, as with reads off, when the read fails", async () => {
    world.sim.inject({
      api: "management",
      method: "GET",
      route: ROUTES.getOrganization.template,
      kind: "status",
      status: 404,
    });
    await world.write("org.yaml", organizationWith(["vpce-a"]));

    const result = await world.apply({}, reads);

    expect(result.ok).toBe(true);
    expect(world.writes().map((r) => r.body)).toEqual([
      { name: "Acme Analytics" },
      { privateEndpoints: { add: [{ id: "vpce-a", description: "vpce-a desc" }] } },
    ]);
    expect(world.logs.join("")).toContain("live object not read");
  });

  it("reads nothing with reads off", async () => {
    await world.write("org.yaml", organizationWith(["vpce-a"]));
    await world.write("pipe.yaml", postgresPipeWith(["orders"]));

    await world.apply();

    expect(world.sim.requests.filter((r) => r.method === "GET")).toEqual([]);
  });
});
