import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/** driftless refuses to lock itself out of the management API unless the manifest opts in. */

const ownKey = (fields: string) =>
  `${header("ApiKey", "driftless")}  organizationId: ${ids.organizationId}
  keyId: ${ids.managementKeyId}
  name: driftless
${fields}`;

describe("lock-out guard on driftless's own key", () => {
  let world: EngineWorld;
  beforeEach(async () => {
    world = await startEngineWorld();
  });
  afterEach(() => world.close());
  const own = (result: { statuses: { kind: string; status: string; message?: string }[] }) =>
    result.statuses.find((s) => s.kind === "ApiKey");

  for (const [what, fields, reason] of [
    ["drops admin", "  roles: [developer]\n", "drops its admin role"],
    ["empties ipAccessList", "  ipAccessList: []\n", "empties its ipAccessList"],
    ["expires it", "  expireAt: 2020-01-01T00:00:00Z\n", "expires it"],
  ] as const) {
    it(`refuses a change that ${what}, sending nothing`, async () => {
      await world.write("key.yaml", ownKey(fields));

      const result = await world.apply();

      expect(own(result)?.status).toBe("Failed");
      expect(own(result)?.message).toContain(reason);
      expect(own(result)?.message).toContain("allowLockout");
      expect(world.writes()).toEqual([]);
    });
  }

  it("sends the change when the manifest opts in with allowLockout", async () => {
    await world.write(
      "key.yaml",
      ownKey("  roles: [admin, developer]\n  ipAccessList: []\n  allowLockout: true\n"),
    );

    const result = await world.apply();

    expect(own(result)?.status).toBe("Synced");
    expect(world.writes().map((r) => r.body)).toEqual([
      { name: "driftless", roles: ["admin", "developer"], ipAccessList: [] },
    ]);
  });

  it("lets a harmless change of its own key through", async () => {
    await world.write("key.yaml", ownKey("  roles: [admin]\n  expireAt: 2099-01-01T00:00:00Z\n"));

    const result = await world.apply();

    expect(result.ok).toBe(true);
    expect(world.writes()).toHaveLength(1);
  });

  it("knows its own key when the manifest writes the key id in upper case", async () => {
    await world.write(
      "key.yaml",
      ownKey("  roles: [developer]\n").replace(ids.managementKeyId, ids.managementKeyId.toUpperCase()),
    );

    const result = await world.apply();

    expect(own(result)?.status).toBe("Failed");
    expect(own(result)?.message).toContain("drops its admin role");
    expect(world.writes()).toEqual([]);
  });
});
