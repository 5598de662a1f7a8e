import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/** plan is what apply would send, and sends nothing itself. */

const key = (name: string) => `${header("ApiKey", "ci")}  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ${name}
`;

describe("plan", () => {
  let world: EngineWorld;
  beforeEach(async () => {
    world = await startEngineWorld();
  });
  afterEach(() => world.close());

  it("sends no request at all and writes no state", async () => {
    await world.write("key.yaml", key("renamed"));

    const report = await world.plan();

    expect(report.resources.map((r) => r.outcome)).toEqual(["send"]);
    expect(world.sim.requests).toEqual([]);
    expect(await world.stateFolderText()).toBe("");
  });

  it("shows exactly the body apply then sends, and nothing once applied", async () => {
    await world.write("key.yaml", key("renamed"));

    const before = await world.plan();
    await world.apply();
    const after = await world.plan();

    expect(world.writes().map((r) => r.body)).toEqual([before.resources[0]?.request?.body]);
    expect(after.resources.map((r) => r.outcome)).toEqual(["none"]);
  });

  it("marks a resource whose manifest is invalid as Invalid and leaves its record untouched", async () => {
    await world.write("key.yaml", key("renamed"));
    await world.apply();
    const recordBefore = (await world.state()).resources["ApiKey/ci"];
    await world.write("key.yaml", `${key("renamed")}  roles: [superuser]\n`);
    world.sim.clearRequests();

    const report = await world.plan();
    const result = await world.apply();

    expect(report.problems.map((p) => p.resource)).toEqual(["ApiKey/ci"]);
    expect(result.statuses).toMatchObject([{ kind: "ApiKey", name: "ci", status: "Invalid" }]);
    expect(result.statuses[0]?.message).toContain("key.yaml");
    expect(result.ok).toBe(false);
    expect(world.writes()).toEqual([]);
    expect((await world.state()).resources["ApiKey/ci"]).toEqual(recordBefore);
  });
});
