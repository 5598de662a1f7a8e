import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { StateError } from "../src/errors.js";
import { leaderOnlyStore } from "../src/leader/leader-only-store.js";
import { createLeaseLeadership } from "../src/leader/lease.js";
import { LOCK_FILE } from "../src/state/file-store.js";
import type { StateStore } from "../src/state/store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";
import { startFakeKubernetes } from "./helpers/fake-kubernetes.js";
import { mskEndpoint } from "./helpers/manifests.js";
import { until } from "./helpers/wait.js";

/**
 * The store is asked right before every write request whether this process may still write (its lock,
 * its leadership): a process that lost it mid-pass sends nothing more, not even the next resource's.
 */

const key = (name: string, keyId: string, title: string) =>
  `${header("ApiKey", name)}  organizationId: ${ids.organizationId}\n  keyId: ${keyId}\n  name: ${title}\n`;

let world: EngineWorld;
afterEach(() => world.close());

/** The file store, refusing ensureWritable() once the platform has received `allowed` writes. */
function losingAfter(allowed: number): (store: StateStore) => StateStore {
  return (store) => ({
    load: () => store.load(),
    save: (state) => store.save(state),
    close: () => store.close(),
    ensureWritable: () =>
      world.writes().length >= allowed
        ? Promise.reject(new StateError("this process no longer holds the state lock (test)"))
        : store.ensureWritable(),
  });
}

it("sends nothing more once the store says this process may no longer write", async () => {
  world = await startEngineWorld();
  await world.write("a.yaml", key("a", ids.ciDeployerKeyId, "renamed a"));
  await world.write("b.yaml", key("b", ids.managementKeyId, "renamed b"));

  // One resource at a time: the second is asked only after the first was sent.
  const result = await world.apply({}, { store: losingAfter(1), concurrency: 1 });

  expect(world.writes()).toHaveLength(1);
  const refused = result.statuses.filter((s) => s.status !== "Synced");
  expect(refused).toHaveLength(1);
  expect(refused[0]?.message).toContain("no longer holds the state lock");
  expect(result.ok).toBe(false);
});

it("asks before a create's intent is saved: no intent and no POST once it may no longer write", async () => {
  world = await startEngineWorld();
  await world.write("e.yaml", mskEndpoint("orders-msk"));
  const id = "ReversePrivateEndpoint/orders-msk";
  // Every state the pass saves, as saved: an intent saved and cleared again would not show at the end.
  const intents: unknown[] = [];
  const watched = (store: StateStore): StateStore => {
    const losing = losingAfter(0)(store);
    return {
      ...losing,
      save: (state) => {
        intents.push(state.resources[id]?.intent);
        return losing.save(state);
      },
    };
  };

  const result = await world.apply({}, { store: watched });

  expect(world.writes()).toEqual([]);
  expect(result.statuses[0]?.status).toBe("Failed");
  expect(intents.filter((intent) => intent !== undefined)).toEqual([]);
  // As the next process loads it, journal included.
  expect((await world.state()).resources[id]?.intent).toBeUndefined();
});

describe("asked again right before every retry", () => {
  const KEY_ROUTE = "/v1/organizations/{organizationId}/keys/{keyId}";
  const answered503 = () => world.sim.requests.some((r) => r.route === KEY_ROUTE && r.status === 503);
  const keyStatuses = () => world.writes().map((r) => r.status);

  it("sends no retry once another process has taken the state lock over", async () => {
    world = await startEngineWorld();
    await world.write("a.yaml", key("a", ids.ciDeployerKeyId, "renamed a"));
    world.sim.inject({ api: "management", method: "PATCH", route: KEY_ROUTE, kind: "status", status: 503 });
    // Between the 503 and the retry, a process on another host takes the lock over (this one stalled
    // past the lock's stale period), as the file lock's takeover would leave it.
    const takenOver = (store: StateStore): StateStore => ({
      ...store,
      async ensureWritable() {
        if (answered503()) await writeFile(join(world.stateDir, LOCK_FILE), otherHolder());
        return store.ensureWritable();
      },
    });

    const result = await world.apply({}, { store: takenOver });

    expect(keyStatuses()).toEqual([503]);
    expect(result.statuses[0]?.status).toBe("Failed");
    expect(result.statuses[0]?.message).toContain("not sent");
    expect(result.statuses[0]?.message).toMatch(/lock/);
  });

  it("sends no retry once the Lease's renew deadline has passed, before its step-down timer fires", async () => {
    const kubernetes = await startFakeKubernetes();
    try {
      world = await startEngineWorld();
      await world.write("a.yaml", key("a", ids.ciDeployerKeyId, "renamed a"));
      world.sim.inject({ api: "management", method: "PATCH", route: KEY_ROUTE, kind: "status", status: 503 });
      // The process stalls (a long GC, a frozen VM) right after the 503: on its monotonic clock, the
      // renew deadline is long past; no timer has had a chance to run.
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromString(kubernetes.kubeconfig("replica-a"));
      const leadership = createLeaseLeadership({
        kubeConfig,
        namespace: "driftless-test",
        identity: "replica-a",
        logger: createLogger("silent"),
        monotonic: () => performance.now() + (answered503() ? 60_000 : 0),
      });
      try {
        await until(() => leadership.isLeader());

        const result = await world.apply({}, { store: (store) => leaderOnlyStore(store, leadership) });

        expect(keyStatuses()).toEqual([503]);
        expect(result.statuses[0]?.status).toBe("Failed");
        expect(result.statuses[0]?.message).toContain("no longer the leader");
      } finally {
        await leadership.stop();
      }
    } finally {
      await kubernetes.close();
    }
  });
});

/** The lock as another host's driftless writes it when it takes the lock over. */
const otherHolder = () =>
  JSON.stringify({
    pid: 4242,
    hostname: "another-host",
    startedAt: new Date().toISOString(),
    processStartedAt: Date.now(),
    token: "0123456789abcdef",
  });
