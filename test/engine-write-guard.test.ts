import { afterEach, expect, it } from "vitest";
import { StateError } from "../src/errors.js";
import type { StateStore } from "../src/state/store.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";
import { mskEndpoint } from "./helpers/manifests.js";

/**
 * The store is asked right before every write request whether this process may still write (its lock,
 * its leadership): a process that lost it mid-pass sends nothing more, not even the next resource's.
 */

const key = (name: string, keyId: string, title: string) =>
  `${header("ApiKey", name)}  organizationId: ${ids.organizationId}\n  keyId: ${keyId}\n  name: ${title}\n`;

let world: EngineWorld;
afterEach(() => world.close());

/** The file store, answering ensureWritable() `allowed` times and refusing after. */
function losingAfter(allowed: number): (store: StateStore) => StateStore {
  let asked = 0;
  return (store) => ({
    load: () => store.load(),
    save: (state) => store.save(state),
    close: () => store.close(),
    ensureWritable: () =>
      ++asked > allowed
        ? Promise.reject(new StateError("this process no longer holds the state lock (test)"))
        : store.ensureWritable(),
  });
}

it("sends nothing more once the store says this process may no longer write", async () => {
  world = await startEngineWorld();
  await world.write("a.yaml", key("a", ids.ciDeployerKeyId, "renamed a"));
  await world.write("b.yaml", key("b", ids.managementKeyId, "renamed b"));

  const result = await world.apply({}, { store: losingAfter(1), config: {} });

  expect(world.writes()).toHaveLength(1);
  const refused = result.statuses.filter((s) => s.status !== "Synced");
  expect(refused).toHaveLength(1);
  expect(refused[0]?.message).toContain("no longer holds the state lock");
  expect(result.ok).toBe(false);
});

it("asks before a create's intent is saved: no intent and no POST once it may no longer write", async () => {
  world = await startEngineWorld();
  await world.write("e.yaml", mskEndpoint("orders-msk"));

  const result = await world.apply({}, { store: losingAfter(0) });

  expect(world.writes()).toEqual([]);
  expect(result.statuses[0]?.status).toBe("Failed");
  const state = await world.state().catch(() => undefined);
  expect(state?.resources["ReversePrivateEndpoint/orders-msk"]?.intent).toBeUndefined();
});
