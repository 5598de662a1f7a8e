import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createKubernetesStateStore, shardOf } from "../src/state/kubernetes-store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { type FakeKubernetes, startFakeKubernetes } from "./helpers/fake-kubernetes.js";
import { until } from "./helpers/wait.js";

/**
 * A load that runs while the first save of a new state lands: the meta Secret did not exist when the
 * load read it, and the shards it reads next already hold records. That is no lost meta Secret (which
 * is refused), only a load that read two moments: a reader (`driftless plan` beside the daemon, a poll
 * round) must get a state, not the advice to restore a backup.
 */

const NAMESPACE = "driftless-first-save";
const logger = createLogger("silent");

let fake: FakeKubernetes;
beforeEach(async () => {
  fake = await startFakeKubernetes();
});
afterEach(async () => {
  await fake.close();
});

const replica = (token: string, readOnly = false) => {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(fake.kubeconfig(token));
  return createKubernetesStateStore({ kubeConfig, namespace: NAMESPACE, logger, readOnly });
};

describe("a load overlapping the first save of a new state", () => {
  it("loads the state the save wrote, where it refused it as a meta Secret gone", async () => {
    const name = "orders-msk";
    const writer = replica("writer");
    const reader = replica("reader", true);
    const state = await writer.load();
    // The reader's read of the record's shard is answered 3 s late: after the writer's save.
    const shard = `/driftless-state-${shardOf(`ReversePrivateEndpoint/${name}`)}`;
    fake.setFault({ delayMs: 3000 }, (r) => r.token === "reader" && r.path.endsWith(shard));

    const loading = reader.load().then(
      (loaded) => loaded,
      (error: Error) => error,
    );
    await until(
      () => fake.requests.some((r) => r.token === "reader" && r.path.endsWith("/driftless-state")),
      30_000,
    );
    state.resources[`ReversePrivateEndpoint/${name}`] = {
      kind: "ReversePrivateEndpoint",
      name,
      serverId: "pe-1",
    };
    await writer.save(state);
    const loaded = await loading;

    expect(loaded).not.toBeInstanceOf(Error);
    expect(loaded instanceof Error ? loaded.message : loaded.resources).toEqual(state.resources);
  }, 60_000);
});
