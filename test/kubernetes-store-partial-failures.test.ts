import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/simulator/index.js";
import { createKubernetesStateStore, shardName, shardOf } from "../src/state/kubernetes-store.js";
import type { State } from "../src/state/store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { driftlessAsync } from "./helpers/cli.js";
import { type FakeKubernetes, type RecordedRequest, startFakeKubernetes } from "./helpers/fake-kubernetes.js";
import { mskEndpoint } from "./helpers/manifests.js";
import { platformEnv } from "./helpers/platform-env.js";
import { stateInSecrets } from "./helpers/state-secrets.js";
import { until } from "./helpers/wait.js";

/**
 * The Kubernetes store when a write fails halfway: a save is a set of Secret writes, and whatever
 * prefix of them lands, the state still holds every record (a rename writes the new home before it
 * deletes the old one); a load made for a reader while a save runs leaves the writer's versions alone;
 * a meta Secret emptied behind driftless's back is refused, not taken for a new state.
 */

const NAMESPACE = "driftless-partial";
const ENDPOINT_ROUTE =
  "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";

let fake: FakeKubernetes;
beforeEach(async () => {
  fake = await startFakeKubernetes();
});
afterEach(async () => {
  await fake.close();
});

/** A write (create or replace) of the Secret `name`. */
const writeOf = (name: string) => (r: RecordedRequest) =>
  r.method !== "GET" && r.body?.metadata?.name === name;

describe("driftless apply on the Kubernetes store, when a Secret write fails (built CLI)", () => {
  let sim: Simulator;
  let root: string;
  let env: Record<string, string>;

  beforeEach(async () => {
    sim = await startSimulator({
      endpointReadyAfterMs: 0,
      rateLimit: { management: false, observability: false },
    });
    root = await mkdtemp(join(tmpdir(), "driftless-partial-"));
    await mkdir(join(root, "manifests"));
    env = {
      DRIFTLESS_MANIFESTS: join(root, "manifests"),
      DRIFTLESS_SECRETS_DIR: join(root, "secrets"),
      DRIFTLESS_STATE_STORE: "kubernetes",
      DRIFTLESS_NAMESPACE: NAMESPACE,
      KUBECONFIG: fake.kubeconfigPath,
      ...platformEnv(sim),
    };
  });
  afterEach(async () => {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  });

  const endpoint = (name: string, previous?: string) =>
    writeFile(
      join(root, "manifests", "endpoint.yaml"),
      mskEndpoint(name, previous ? { annotations: { "driftless/previous-name": previous } } : {}),
    );
  const apply = () => driftlessAsync(["apply"], env);
  const posts = () => sim.requests.filter((r) => r.method === "POST" && r.route === ENDPOINT_ROUTE);

  it("sends no second create after a rename whose new shard failed to save while the old one could", async () => {
    const before = "ReversePrivateEndpoint/orders-msk";
    const after = "ReversePrivateEndpoint/orders-msk-eu";
    expect(shardOf(before)).not.toBe(shardOf(after));
    await endpoint("orders-msk");
    const created = await apply();
    const serverId = stateInSecrets(fake, NAMESPACE)?.resources[before]?.serverId;

    await endpoint("orders-msk-eu", "orders-msk");
    fake.setFault({ status: 500 }, writeOf(shardName("driftless-state", shardOf(after))));
    const failed = await apply();
    fake.setFault(undefined);
    const next = await apply();

    expect(created.code, created.stderr).toBe(0);
    expect(serverId).toEqual(expect.any(String));
    expect(failed.code).toBe(1);
    expect(posts()).toHaveLength(1);
    expect(next.code, next.stderr).toBe(0);
    expect(stateInSecrets(fake, NAMESPACE)?.resources[after]?.serverId).toBe(serverId);
    expect(stateInSecrets(fake, NAMESPACE)?.resources[before]).toBeUndefined();
  });

  it("refuses a meta Secret emptied while the shards hold records, and creates nothing again", async () => {
    await endpoint("orders-msk");
    await apply();
    // As a deployment tool replacing the Secret with an empty one of the same name would.
    fake.put("secrets", NAMESPACE, { metadata: { name: "driftless-state" }, type: "Opaque" });

    const refused = await apply();

    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`the state Secret ${NAMESPACE}/driftless-state holds no state`);
    expect(refused.stderr).toContain("1 record");
    expect(refused.stderr).toContain("restore");
    expect(posts()).toHaveLength(1);
  });
});

const logger = createLogger("silent");
const replica = () => {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(fake.kubeconfigPath);
  return createKubernetesStateStore({ kubeConfig, namespace: NAMESPACE, logger });
};
const record = (name: string, serverId?: string) => ({
  kind: "ReversePrivateEndpoint",
  name,
  ...(serverId ? { serverId } : {}),
});

describe("the Kubernetes store's save, one write at a time", () => {
  it("writes a renamed record's new shard before it removes the record from the old one", async () => {
    const store = replica();
    const state: State = { ...(await store.load()) };
    state.resources["ReversePrivateEndpoint/c"] = record("c", "id-1");
    await store.save(state);
    const from = shardName("driftless-state", shardOf("ReversePrivateEndpoint/c"));
    const to = shardName("driftless-state", shardOf("ReversePrivateEndpoint/d"));
    expect(from).not.toBe(to);
    const writesBefore = fake.requests.length;

    state.resources = { "ReversePrivateEndpoint/d": record("d", "id-1") };
    await store.save(state);

    const order = fake.requests
      .slice(writesBefore)
      .filter((r) => r.method !== "GET")
      .map((r) => r.body?.metadata?.name);
    expect(order).toEqual([to, from]);
  });

  it("keeps a record where it was when every write but the removal's fails", async () => {
    const store = replica();
    const state: State = { ...(await store.load()) };
    state.resources["ReversePrivateEndpoint/c"] = record("c", "id-1");
    await store.save(state);
    fake.setFault(
      { status: 500 },
      writeOf(shardName("driftless-state", shardOf("ReversePrivateEndpoint/d"))),
    );

    state.resources = { "ReversePrivateEndpoint/d": record("d", "id-1") };
    const failure = await store.save(state).catch((error: unknown) => error);
    fake.setFault(undefined);

    expect((failure as Error).message).toContain("cannot save the state Secret");
    expect(stateInSecrets(fake, NAMESPACE)?.resources).toEqual({
      "ReversePrivateEndpoint/c": record("c", "id-1"),
    });
  });
});

describe("a load for a reader while the writer saves (a poll round reading tile ids)", () => {
  it("leaves the writer's versions alone: the pass's next save is not taken for another writer's", async () => {
    // Shard 0 is read in the load's first round of requests, long before the load ends.
    const early = Array.from({ length: 2000 }, (_, i) => `k${i}`).filter(
      (name) => shardOf(`ApiKey/${name}`) < 8,
    );
    const store = replica();
    const pass = await store.load();
    pass.resources[`ApiKey/${early[0]}`] = { kind: "ApiKey", name: String(early[0]) };
    await store.save(pass);
    const readsBefore = fake.requests.length;
    fake.setFault({ delayMs: 10 }, (r) => r.method === "GET");

    const poll = store.load();
    // The poll's load has read the first shards when a later round of its requests starts.
    await until(() => fake.requests.slice(readsBefore).some((r) => /-(4\d|5\d)$/.test(r.path)));
    pass.resources[`ApiKey/${early[1]}`] = { kind: "ApiKey", name: String(early[1]) };
    await store.save(pass);
    await poll;
    fake.setFault(undefined);
    pass.resources[`ApiKey/${early[2]}`] = { kind: "ApiKey", name: String(early[2]) };
    const third = await store.save(pass).then(
      () => "saved",
      (error: Error) => error.message,
    );

    expect(third).toBe("saved");
    expect(Object.keys(stateInSecrets(fake, NAMESPACE)?.resources ?? {})).toHaveLength(3);
  });
});
