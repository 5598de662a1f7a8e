import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ROUTES } from "../src/platform/routes.js";
import type { ResourceStatus } from "../src/resources.js";
import { type EngineWorld, startEngineWorld } from "./helpers/engine-world.js";
import { mskEndpoint } from "./helpers/manifests.js";

/**
 * With reads on, a reverse private endpoint whose create answer was lost is looked up in the list of
 * its service's endpoints: found (exactly one match), its id is recorded and nothing is sent again;
 * certainly absent, it is created again; anything unclear, it stays Unknown.
 */

const CREATE = ROUTES.createReversePrivateEndpoint.template;
const LIST = ROUTES.listReversePrivateEndpoints.template;
const ID = "ReversePrivateEndpoint/orders-msk";

describe("an unknown create settled by the list of endpoints", () => {
  let world: EngineWorld;
  const reads = { reads: true };
  const posts = () => world.writes().filter((r) => r.route === CREATE);
  const lists = () => world.sim.requests.filter((r) => r.method === "GET" && r.route === LIST);
  const statusOf = (result: { statuses: ResourceStatus[] }) =>
    result.statuses.find((s) => `${s.kind}/${s.name}` === ID);

  beforeEach(async () => {
    world = await startEngineWorld({ simulator: { contract: "full" } });
    await world.write("e.yaml", mskEndpoint("orders-msk"));
  });
  afterEach(() => world.close());

  /** The first create's answer is lost; `applied`: the platform did create it. */
  async function loseCreateAnswer(applied: boolean): Promise<void> {
    world.sim.inject({ api: "management", method: "POST", route: CREATE, kind: "drop", applied });
    const first = await world.apply({}, reads);
    expect(statusOf(first)?.status).toBe("Unknown");
  }

  it("adopts the endpoint the lost create made: its id recorded, Synced, no second POST", async () => {
    await loseCreateAnswer(true);

    const second = await world.apply({}, reads);
    const listsToSettle = lists().length;
    const third = await world.apply({}, reads);

    expect(statusOf(second)?.status).toBe("Synced");
    expect(statusOf(second)?.message).toContain("found as");
    expect(third.ok).toBe(true);
    expect(posts()).toHaveLength(1);
    expect(listsToSettle).toBe(1);
    expect(world.sim.state.endpoints).toHaveLength(1);
    const record = (await world.state()).resources[ID];
    expect(record?.serverId).toBe(world.sim.state.endpoints[0]?.id);
    expect(record?.intent).toBeUndefined();
    expect(record?.observed?.status).toBe("Ready");
  });

  it("creates again when no endpoint of the service matches", async () => {
    await loseCreateAnswer(false);

    const second = await world.apply({}, reads);

    expect(statusOf(second)?.status).toBe("Synced");
    expect(posts()).toHaveLength(2);
    expect(world.sim.state.endpoints).toHaveLength(1);
    expect((await world.state()).resources[ID]?.serverId).toBe(world.sim.state.endpoints[0]?.id);
  });

  it("does not take an endpoint of other fields, nor one another manifest holds", async () => {
    // Another manifest's endpoint of the very same fields is recorded first: it is not this one's.
    await world.remove("e.yaml");
    await world.write("twin.yaml", mskEndpoint("twin"));
    await world.apply({}, reads);
    await world.write("other.yaml", mskEndpoint("other", { cluster: "payments" }));
    await world.apply({}, reads);
    await world.write("e.yaml", mskEndpoint("orders-msk"));
    world.sim.inject({ api: "management", method: "POST", route: CREATE, kind: "drop" });
    const lost = await world.apply({}, reads);
    expect(lost.statuses.find((s) => s.name === "orders-msk")?.status).toBe("Unknown");

    const second = await world.apply({}, reads);

    expect(statusOf(second)?.status).toBe("Synced");
    expect(world.sim.state.endpoints).toHaveLength(3);
    const state = await world.state();
    const ids = ["orders-msk", "twin", "other"].map(
      (name) => state.resources[`ReversePrivateEndpoint/${name}`]?.serverId,
    );
    expect(new Set(ids).size).toBe(3);
  });

  it("stays Unknown when several endpoints match", async () => {
    await loseCreateAnswer(true);
    const [made] = world.sim.state.endpoints;
    if (!made) throw new Error("the lost create made no endpoint");
    world.sim.state.endpoints.push({ ...made, id: "0b7c2f4e-9d51-4a8e-b6f3-2c1d0e9a8b7f" });

    const second = await world.apply({}, reads);

    expect(statusOf(second)?.status).toBe("Unknown");
    expect(statusOf(second)?.message).toContain("2 endpoints of the service match");
    expect(statusOf(second)?.message).toContain("--allow-create");
    expect(posts()).toHaveLength(1);
  });

  it("stays Unknown when the list cannot be read", async () => {
    await loseCreateAnswer(true);
    world.sim.inject({ api: "management", method: "GET", route: LIST, kind: "status", status: 404 });

    const second = await world.apply({}, reads);

    expect(statusOf(second)?.status).toBe("Unknown");
    expect(statusOf(second)?.message).toContain("the list could not be read");
    expect(posts()).toHaveLength(1);
  });

  it("lists nothing with reads off: Unknown, as the operator's to settle", async () => {
    await loseCreateAnswer(true);

    const second = await world.apply();

    expect(statusOf(second)?.status).toBe("Unknown");
    expect(lists()).toEqual([]);
    expect(posts()).toHaveLength(1);
  });

  it("shows the settling in plan: the adoption, with no request to send", async () => {
    await loseCreateAnswer(true);

    const report = await world.plan(reads);

    const view = report.resources.find((r) => `${r.kind}/${r.name}` === ID);
    expect(view?.outcome).toBe("adopt");
    expect(view?.reason).toContain("found as");
    expect(posts()).toHaveLength(1);
  });
});
