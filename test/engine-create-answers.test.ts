import { afterEach, expect, it } from "vitest";
import { type EngineWorld, startEngineWorld } from "./helpers/engine-world.js";
import { mskEndpoint } from "./helpers/manifests.js";

/** A create whose answer carries no usable id cannot be recorded: its outcome is unknown, never repeated. */

const ROUTE = "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";

const endpoint = mskEndpoint("orders-msk");

let world: EngineWorld;
afterEach(() => world.close());

for (const [what, id] of [
  ["an empty id", ""],
  ["no id at all", undefined],
] as const) {
  it(`leaves the endpoint Unknown and does not POST again when the create answer has ${what}`, async () => {
    world = await startEngineWorld();
    await world.write("e.yaml", endpoint);
    const result = { ...(id === undefined ? {} : { id }), description: "orders MSK", status: "Ready" };
    world.sim.inject({
      api: "management",
      method: "POST",
      route: ROUTE,
      kind: "status",
      status: 200,
      body: { status: 200, requestId: "7d0c3f52-1111-4aaa-8bbb-123456789abc", result },
    });

    const first = await world.apply();
    const second = await world.apply();

    const posts = world.writes().filter((r) => r.route === ROUTE);
    expect(posts).toHaveLength(1);
    expect(first.statuses.find((s) => s.kind === "ReversePrivateEndpoint")?.status).toBe("Unknown");
    expect(second.statuses.find((s) => s.kind === "ReversePrivateEndpoint")?.status).toBe("Unknown");
    expect((await world.state()).resources["ReversePrivateEndpoint/orders-msk"]?.serverId).toBeUndefined();
  });
}

it("says so when the create's intent cannot be cleared after a refused POST, instead of swallowing the error", async () => {
  world = await startEngineWorld();
  await world.write("e.yaml", endpoint);
  world.sim.inject({ api: "management", method: "POST", route: ROUTE, kind: "status", status: 400 });
  let saves = 0;

  const result = await world.apply(
    {},
    {
      store: (store) => ({
        load: () => store.load(),
        // Save 1 writes the intent; save 2, clearing it after the 400, fails.
        save: (state) => (++saves === 2 ? Promise.reject(new Error("disk full")) : store.save(state)),
        close: () => store.close(),
        ensureWritable: () => store.ensureWritable(),
      }),
    },
  );

  const status = result.statuses.find((s) => s.kind === "ReversePrivateEndpoint");
  expect(status?.status).toBe("Failed");
  expect(status?.message).toContain("the state could not be saved (disk full)");
  expect(world.logs.join("")).toContain("create intent could not be cleared");
});

it("spends an allowance to create again once: the same allowance at the next start sends no second POST", async () => {
  world = await startEngineWorld();
  await world.write("e.yaml", endpoint);
  const allow = { allowCreate: ["ReversePrivateEndpoint/orders-msk"] };
  const statusOf = (result: { statuses: { kind: string; status: string; message?: string }[] }) =>
    result.statuses.find((s) => s.kind === "ReversePrivateEndpoint");
  world.sim.inject({ api: "management", method: "POST", route: ROUTE, kind: "drop", count: 2 });
  await world.apply();

  const allowed = await world.apply(allow);
  const again = await world.apply(allow);

  expect(statusOf(allowed)?.status).toBe("Unknown");
  expect(statusOf(again)?.status).toBe("Unknown");
  expect(statusOf(again)?.message).toContain("already used");
  expect(world.writes().filter((r) => r.route === ROUTE)).toHaveLength(2);

  await world.apply();
  const rearmed = await world.apply(allow);

  expect(statusOf(rearmed)?.status).toBe("Synced");
  expect(world.writes().filter((r) => r.route === ROUTE)).toHaveLength(3);
});
