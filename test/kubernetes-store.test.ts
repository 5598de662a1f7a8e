import { readFile } from "node:fs/promises";
import { gunzipSync, gzipSync } from "node:zlib";
import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isStateError } from "../src/errors.js";
import {
  createKubernetesStateStore,
  META_KEY,
  SHARD_KEY,
  STATE_KEY,
  shardName,
  shardOf,
} from "../src/state/kubernetes-store.js";
import { serializeState } from "../src/state/state-format.js";
import type { ResourceRecord, State } from "../src/state/store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { type FakeKubernetes, startFakeKubernetes } from "./helpers/fake-kubernetes.js";
import { realisticState } from "./helpers/realistic-state.js";
import { stateInSecrets } from "./helpers/state-secrets.js";
import { describeStateStore } from "./helpers/state-store-contract.js";

const NAMESPACE = "driftless-test";
const logger = createLogger("silent");

// Each backing place is a fake API server of its own; a store over it is what a restarted pod opens.
describeStateStore("Kubernetes Secret store", async () => {
  const server = await startFakeKubernetes();
  return {
    open: () => {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(server.kubeconfigPath);
      return createKubernetesStateStore({ kubeConfig, namespace: NAMESPACE, logger });
    },
    cleanup: () => server.close(),
  };
});

let fake: FakeKubernetes;

/** A store as a replica builds it: its own client, from the kubeconfig file the fake server wrote. */
function replica(options: { maxBytes?: number; timeoutMs?: number } = {}) {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(fake.kubeconfigPath);
  return createKubernetesStateStore({ kubeConfig, namespace: NAMESPACE, logger, ...options });
}

const stateWith = (salt: string, names: string[]): State => ({
  version: 1,
  salt,
  resources: Object.fromEntries(
    names.map((name) => [`ApiKey/${name}`, { kind: "ApiKey", name, appliedAt: "2026-11-23T04:00:00.000Z" }]),
  ),
});

const storedState = () => stateInSecrets(fake, NAMESPACE);

/** `count` ApiKey names that fall in one shard, the first of them `ApiKey/${first}`'s. */
const sameShard = (count: number, first = "key-0"): string[] => {
  const shard = shardOf(`ApiKey/${first}`);
  const names = [first];
  for (let i = 1; names.length < count; i++)
    if (shardOf(`ApiKey/key-${i}`) === shard && `key-${i}` !== first) names.push(`key-${i}`);
  return names;
};

const writes = () => fake.requests.filter((r) => r.method !== "GET");

describe("the Kubernetes state store", () => {
  beforeEach(async () => {
    fake = await startFakeKubernetes();
  });
  afterEach(async () => {
    await fake.close();
  });

  it("starts from an empty state with a fresh salt when no Secret exists, and creates none until a save", async () => {
    const state = await replica().load();

    expect(state).toEqual({ version: 1, salt: expect.stringMatching(/^[\w-]{16,}$/), resources: {} });
    // The shards are read too: records in them without a meta Secret are refused, not forgotten.
    expect(fake.requests.map((r) => r.method)).toEqual(Array(513).fill("GET"));
    expect(fake.requests[0]?.path).toBe(`/api/v1/namespaces/${NAMESPACE}/secrets/driftless-state`);
  });

  it.each([
    ["emptied", "has no key meta\\.json \\(it was emptied or replaced\\)"],
    ["deleted", "is gone"],
  ])(
    "refuses a state whose meta Secret was %s while its shards hold records, and writes nothing",
    async (how, said) => {
      const writer = replica();
      await writer.save(stateWith("abc", ["one", "two"]));
      const meta = fake.get("secrets", NAMESPACE, "driftless-state");
      if (how === "emptied") fake.put("secrets", NAMESPACE, { ...meta, data: {} });
      else fake.remove("secrets", NAMESPACE, "driftless-state");
      const writesBefore = writes().length;

      const failure = await replica()
        .load()
        .catch((e: unknown) => e);

      expect(isStateError(failure)).toBe(true);
      expect((failure as Error).message).toMatch(
        new RegExp(
          `^the state Secret driftless-test/driftless-state holds no state: it ${said}, while 2 shard Secrets hold 2 records`,
        ),
      );
      expect(writes().length).toBe(writesBefore);
    },
  );

  it("loads the shards' records again once a new meta.json is written (docs/operations.md#writing-a-new-meta-secret)", async () => {
    const writer = replica();
    await writer.save(stateWith("abc", ["one", "two"]));
    fake.remove("secrets", NAMESPACE, "driftless-state");
    const meta = JSON.stringify({ version: 1, salt: "a-new-salt" });
    fake.put("secrets", NAMESPACE, {
      metadata: { name: "driftless-state" },
      data: { [META_KEY]: Buffer.from(meta).toString("base64") },
    });

    const loaded = await replica().load();

    expect(loaded).toEqual(stateWith("a-new-salt", ["one", "two"]));
  });

  it("saves the records in shard Secrets by a hash of the resource id, the salt in the meta Secret", async () => {
    const saved = stateWith("abc", ["ci-deployer", "reader"]);
    const first = replica();
    await first.load();

    await first.save(saved);
    const loaded = await replica().load();

    expect(loaded).toEqual(saved);
    expect(storedState()).toEqual(saved);
    const meta = fake.get("secrets", NAMESPACE, "driftless-state");
    expect(meta?.type).toBe("Opaque");
    expect(Object.keys(meta?.data ?? {})).toEqual([META_KEY]);
    const shards = new Set([shardOf("ApiKey/ci-deployer"), shardOf("ApiKey/reader")]);
    expect(writes().map((r) => r.body?.metadata?.name)).toEqual([
      "driftless-state",
      ...[...shards].sort((a, b) => a - b).map((index) => shardName("driftless-state", index)),
    ]);
    for (const index of shards) {
      const shard = fake.get("secrets", NAMESPACE, shardName("driftless-state", index));
      expect(Object.keys(shard?.data ?? {})).toEqual([SHARD_KEY]);
      expect(shard?.metadata).toMatchObject({ labels: { "app.kubernetes.io/component": "state" } });
    }
  });

  it("writes only the shard of the changed record, and nothing for a save that changed nothing", async () => {
    const store = replica();
    const state = { ...(await store.load()), resources: realisticState(1000).resources };
    await store.save(state);
    const before = writes().length;

    await store.save(state);
    state.resources["DataPipe/pipe-7"] = {
      ...(state.resources["DataPipe/pipe-7"] as ResourceRecord),
      serverId: "changed",
    };
    await store.save(state);

    expect(
      writes()
        .slice(before)
        .map((r) => `${r.method} ${r.body?.metadata?.name}`),
    ).toEqual([`PUT ${shardName("driftless-state", shardOf("DataPipe/pipe-7"))}`]);
    expect(storedState()).toEqual(state);
  });

  it("saves again over its own write (the resourceVersion follows each save)", async () => {
    const store = replica();
    await store.load();

    await store.save(stateWith("abc", ["one"]));
    await store.save(stateWith("abc", ["one", "two"]));
    await store.save(stateWith("abc", ["two"]));

    expect(storedState()).toEqual(stateWith("abc", ["two"]));
  });

  it("refuses a save to a shard another writer changed since it was read, keeping that writer's records", async () => {
    const [mine, theirs] = sameShard(2);
    const a = replica();
    const b = replica();
    await a.save(stateWith("abc", ["first"]));
    await b.load();
    await a.load();
    await a.save(stateWith("abc", ["first", theirs as string]));

    const failure = await b.save(stateWith("abc", ["first", mine as string])).catch((e: unknown) => e);

    expect(isStateError(failure)).toBe(true);
    expect((failure as Error).message).toMatch(
      new RegExp(
        `^another writer changed the state: Secret driftless-test/${shardName("driftless-state", shardOf(`ApiKey/${mine}`))} was not saved because`,
      ),
    );
    expect(storedState()).toEqual(stateWith("abc", ["first", theirs as string]));
  });

  it("saves each shard on its own: a conflict on one shard does not stop another shard's write", async () => {
    const [mine, theirs] = sameShard(2);
    const elsewhere = ["x-0", "x-1", "x-2"].find((n) => shardOf(`ApiKey/${n}`) !== shardOf(`ApiKey/${mine}`));
    const a = replica();
    const b = replica();
    await a.save(stateWith("abc", ["first"]));
    await b.load();
    await a.load();
    await a.save(stateWith("abc", ["first", theirs as string]));

    const failure = await b
      .save(stateWith("abc", ["first", mine as string, elsewhere as string]))
      .catch((e) => e);

    expect(isStateError(failure)).toBe(true);
    expect(Object.keys(storedState()?.resources ?? {}).sort()).toEqual(
      [`ApiKey/${elsewhere}`, "ApiKey/first", `ApiKey/${theirs}`].sort(),
    );
  });

  it("refuses a pass's save even when the same replica reloaded the newer state for something else", async () => {
    const store = replica();
    const other = replica();
    await store.load();
    await store.save(stateWith("abc", ["first"]));
    const passState = await store.load();
    await other.load();
    await other.save(stateWith("abc", ["from-the-other-writer"]));
    const writesBefore = writes().length;
    await store.load(); // e.g. a poll reading tile ids
    passState.resources["ApiKey/late"] = { kind: "ApiKey", name: "late" };

    const failure = await store.save(passState).catch((e: unknown) => e);

    expect((failure as Error).message).toMatch(/^another writer changed the state/);
    expect(writes().length).toBe(writesBefore);
    expect(storedState()).toEqual(stateWith("abc", ["from-the-other-writer"]));
  });

  it("refuses a save when another writer created the Secret after this one found none", async () => {
    const a = replica();
    const b = replica();
    await a.load();
    await b.load();
    await a.save(stateWith("aaa", ["from-a"]));

    const failure = await b.save(stateWith("bbb", ["from-b"])).catch((e: unknown) => e);

    expect(isStateError(failure)).toBe(true);
    expect((failure as Error).message).toMatch(
      /another writer changed the state: .* created by someone else/,
    );
    expect(storedState()).toEqual(stateWith("aaa", ["from-a"]));
  });

  it("recognises its own replace that landed although its answer was lost (crash during a shard write), and saves on", async () => {
    const [one, two, three] = sameShard(3) as [string, string, string];
    // Long enough for a new state's load (513 reads) on a busy machine; the hang then times out.
    const store = replica({ timeoutMs: 1_500 });
    await store.load();
    await store.save(stateWith("abc", [one]));
    fake.setFault({ afterEffect: "hang" }, (r) => r.method === "PUT");
    const lost = await store.save(stateWith("abc", [one, two])).catch((e: unknown) => e);
    fake.setFault(undefined);

    await store.save(stateWith("abc", [one, two, three]));

    expect(isStateError(lost)).toBe(true);
    expect((lost as Error).message).toMatch(
      /cannot save the state Secret driftless-test\/driftless-state-\d+/,
    );
    expect(storedState()).toEqual(stateWith("abc", [one, two, three]));
    expect(await replica().load()).toEqual(stateWith("abc", [one, two, three]));
  });

  it("recognises its own create that landed although the connection broke before the answer", async () => {
    const store = replica();
    const state = await store.load();
    fake.setFault({ afterEffect: "reset" }, (r) => r.method === "POST");
    const lost = await store.save({ ...state, resources: stateWith("", ["one"]).resources }).catch((e) => e);
    fake.setFault(undefined);

    await store.save({ ...state, resources: stateWith("", ["one", "two"]).resources });

    expect(isStateError(lost)).toBe(true);
    expect(Object.keys(storedState()?.resources ?? {}).sort()).toEqual(["ApiKey/one", "ApiKey/two"]);
  });

  it("still refuses when another writer wrote after its own lost write landed", async () => {
    const [one, two, three, other_] = sameShard(4) as [string, string, string, string];
    // Long enough for a new state's load (513 reads) on a busy machine; the hang then times out.
    const store = replica({ timeoutMs: 1_500 });
    const other = replica();
    await store.load();
    await store.save(stateWith("abc", [one]));
    fake.setFault({ afterEffect: "hang" }, (r) => r.method === "PUT");
    await store.save(stateWith("abc", [one, two])).catch(() => {});
    fake.setFault(undefined);
    await other.load();
    await other.save(stateWith("abc", [other_]));

    const failure = await store.save(stateWith("abc", [one, two, three])).catch((e: unknown) => e);

    expect((failure as Error).message).toMatch(/^another writer changed the state/);
    expect(storedState()).toEqual(stateWith("abc", [other_]));
  });

  it("saves after reloading what the other writer saved", async () => {
    const a = replica();
    const b = replica();
    await a.load();
    await b.load();
    await a.save(stateWith("aaa", ["from-a"]));
    await b.save(stateWith("aaa", ["from-b"])).catch(() => {});

    const reloaded = await b.load();
    await b.save({
      ...reloaded,
      resources: { ...reloaded.resources, ...stateWith("aaa", ["from-b"]).resources },
    });

    expect(Object.keys(storedState()?.resources ?? {}).sort()).toEqual(["ApiKey/from-a", "ApiKey/from-b"]);
  });

  it("reads again only the shards that changed since its last load: the others' records are the ones it holds", async () => {
    const names = ["steady", "moving"];
    expect(shardOf("ApiKey/steady")).not.toBe(shardOf("ApiKey/moving"));
    const a = replica();
    const b = replica();
    await a.save(stateWith("abc", names));
    const first = await b.load();
    const changed = stateWith("abc", names);
    changed.resources["ApiKey/moving"] = {
      kind: "ApiKey",
      name: "moving",
      appliedAt: "2026-11-24T00:00:00.000Z",
    };
    await a.save(changed);

    const second = await b.load();

    expect(second.resources["ApiKey/steady"]).toBe(first.resources["ApiKey/steady"]);
    expect(second.resources["ApiKey/moving"]).toEqual(changed.resources["ApiKey/moving"]);
    expect(second).toEqual(changed);
  });

  it("treats a Secret created empty ahead of time as a new state and saves into it", async () => {
    fake.put("secrets", NAMESPACE, { metadata: { name: "driftless-state" }, type: "Opaque" });
    const store = replica();

    const state = await store.load();
    await store.save(stateWith(state.salt, ["one"]));

    expect(state.resources).toEqual({});
    expect(storedState()).toEqual(stateWith(state.salt, ["one"]));
  });

  it("saves into the Secrets a deployment created ahead (deploy/components/ha), creating none and keeping their labels and annotations", async () => {
    // What `kubectl apply` leaves: every state Secret, empty, labelled, with its last applied form.
    const applied = { "kubectl.kubernetes.io/last-applied-configuration": '{"kind":"Secret"}' };
    const labels = { "app.kubernetes.io/name": "driftless", "app.kubernetes.io/version": "9.9.9" };
    for (const name of [
      "driftless-state",
      ...Array.from({ length: 512 }, (_, i) => shardName("driftless-state", i)),
    ])
      fake.put("secrets", NAMESPACE, { metadata: { name, labels, annotations: applied }, type: "Opaque" });
    const store = replica();

    const state = await store.load();
    await store.save(stateWith(state.salt, ["one", "two"]));
    const meta = fake.get("secrets", NAMESPACE, "driftless-state");
    const shard = fake.get("secrets", NAMESPACE, shardName("driftless-state", shardOf("ApiKey/one")));

    expect(writes().map((request) => request.method)).not.toContain("POST");
    expect(storedState()).toEqual(stateWith(state.salt, ["one", "two"]));
    for (const secret of [meta, shard]) {
      expect(secret?.metadata?.labels).toMatchObject(labels);
      expect(secret?.metadata?.annotations).toMatchObject(applied);
    }
  });

  it("loads a file store's state.json gzip'd into the meta Secret by hand (docs/high-availability.md#the-state-secrets)", async () => {
    const migrated = stateWith("salt-of-the-file-store", ["ci-deployer"]);
    // kubectl create secret generic driftless-state --from-file=state.json.gz
    fake.put("secrets", NAMESPACE, {
      metadata: { name: "driftless-state" },
      data: { [STATE_KEY]: gzipSync(serializeState(migrated)).toString("base64") },
    });

    const loaded = await replica().load();

    expect(loaded).toEqual(migrated);
  });

  it("reports a Secret that is not gzip as corrupt, and leaves it as it is", async () => {
    fake.put("secrets", NAMESPACE, {
      metadata: { name: "driftless-state" },
      data: { [STATE_KEY]: Buffer.from('{"version":1}').toString("base64") },
    });

    const failure = await replica()
      .load()
      .catch((e: unknown) => e);

    expect(isStateError(failure)).toBe(true);
    expect((failure as Error).message).toMatch(
      /^the state in Secret driftless-test\/driftless-state \(key state.json.gz\) is corrupt \(not gzip/,
    );
    expect(fake.requests.filter((r) => r.method !== "GET")).toHaveLength(0);
  });

  it("refuses a state written in a newer format version", async () => {
    fake.put("secrets", NAMESPACE, {
      metadata: { name: "driftless-state" },
      data: { [STATE_KEY]: gzipSync('{"version":2,"salt":"x","resources":{}}').toString("base64") },
    });

    const failure = await replica()
      .load()
      .catch((e: unknown) => e);

    expect(isStateError(failure)).toBe(true);
    expect((failure as Error).message).toMatch(/has state format version 2, .* run a newer driftless/);
  });

  it("keeps the salt of a new state from one load to the next", async () => {
    const store = replica();

    const first = await store.load();
    const second = await store.load();

    expect(second.salt).toBe(first.salt);
  });

  it("never writes when opened read-only", async () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(fake.kubeconfigPath);
    const store = createKubernetesStateStore({ kubeConfig, namespace: NAMESPACE, logger, readOnly: true });
    const state = await store.load();

    const failure = await store.save(state).catch((e: unknown) => e);

    expect((failure as Error).message).toMatch(/opened read-only: not saving/);
    expect(fake.requests.filter((r) => r.method !== "GET")).toHaveLength(0);
  });

  it("says at once that it may write, and refuses when opened read-only", async () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(fake.kubeconfigPath);
    const reader = createKubernetesStateStore({ kubeConfig, namespace: NAMESPACE, logger, readOnly: true });

    await expect(replica().ensureWritable()).resolves.toBeUndefined();
    await expect(reader.ensureWritable()).rejects.toThrow(/opened read-only/);
    expect(fake.requests).toHaveLength(0);
  });

  it("lands concurrent saves of one process in order, without conflicting with itself", async () => {
    const store = replica();
    await store.load();

    await Promise.all([
      store.save(stateWith("abc", ["one"])),
      store.save(stateWith("abc", ["two"])),
      store.save(stateWith("abc", ["three"])),
    ]);

    expect(storedState()).toEqual(stateWith("abc", ["three"]));
  });

  it("reports an API server error on load and on save as a StateError", async () => {
    const store = replica();
    await store.load();
    fake.setFault({ status: 500 });

    const loadFailure = await store.load().catch((e: unknown) => e);
    const saveFailure = await store.save(stateWith("abc", ["one"])).catch((e: unknown) => e);

    expect(isStateError(loadFailure)).toBe(true);
    expect((loadFailure as Error).message).toMatch(/cannot read the state Secret .*: injected fault/);
    expect(isStateError(saveFailure)).toBe(true);
    expect((saveFailure as Error).message).toMatch(/cannot save the state Secret .*: injected fault/);
  });

  it("gives up on a request the API server never answers", async () => {
    const store = replica({ timeoutMs: 200 });
    fake.setFault("hang");

    const failure = await store.load().catch((e: unknown) => e);

    expect(isStateError(failure)).toBe(true);
    expect((failure as Error).message).toMatch(/cannot read the state Secret/);
  });

  it("refuses, before sending anything, a shard over its size limit, saying what to do", async () => {
    const store = replica({ maxBytes: 512 });
    await store.load();
    const writesBefore = writes().length;

    const failure = await store.save(realisticState(1000)).catch((e: unknown) => e);

    expect(isStateError(failure)).toBe(true);
    expect((failure as Error).message).toMatch(
      /the \d+ records of the state Secret driftless-test\/driftless-state-\d+ are \d+ KiB compressed, over the 1 KiB .* use the file store/,
    );
    expect(writes().length).toBe(writesBefore);
  });

  it("migrates a state Secret written by the release before the shards, without loss, rewriting the old Secret last", async () => {
    const fixture = JSON.parse(await readFile("test/fixtures/state-v1/secret.json", "utf8"));
    fake.put("secrets", NAMESPACE, {
      metadata: { name: "driftless-state" },
      type: "Opaque",
      data: fixture.data,
    });
    const written = JSON.parse(gunzipSync(Buffer.from(fixture.data[STATE_KEY], "base64")).toString("utf8"));
    const store = replica();

    const loaded = await store.load();
    const asWritten = structuredClone(loaded);
    loaded.resources["DataPipe/pipe-3"] = {
      ...(loaded.resources["DataPipe/pipe-3"] as ResourceRecord),
      serverId: "after the upgrade",
    };
    await store.save(loaded);

    expect(asWritten).toEqual(written);
    expect(asWritten.resources["ApiKey/ci-deployer"]).toMatchObject({ futureField: { kept: true } });
    expect(writes().at(-1)?.body?.metadata?.name).toBe("driftless-state");
    expect(Object.keys(fake.get("secrets", NAMESPACE, "driftless-state")?.data ?? {})).toEqual([META_KEY]);
    expect(storedState()).toEqual(loaded);
    expect(await replica().load()).toEqual(loaded);
  });

  it("keeps the single-Secret form in charge when a migration stops midway, and finishes it on the next save", async () => {
    const fixture = JSON.parse(await readFile("test/fixtures/state-v1/secret.json", "utf8"));
    fake.put("secrets", NAMESPACE, {
      metadata: { name: "driftless-state" },
      type: "Opaque",
      data: fixture.data,
    });
    const written = JSON.parse(gunzipSync(Buffer.from(fixture.data[STATE_KEY], "base64")).toString("utf8"));
    const store = replica();
    const loaded = await store.load();
    fake.setFault({ status: 500 }, (r) => r.method === "PUT" && r.path.endsWith("/secrets/driftless-state"));

    const failure = await store.save(loaded).catch((e: unknown) => e);
    fake.setFault(undefined);
    const afterCrash = await replica().load();
    const next = replica();
    await next.save(await next.load());

    expect(isStateError(failure)).toBe(true);
    expect(afterCrash).toEqual(written);
    expect(storedState()).toEqual(written);
    expect(await replica().load()).toEqual(written);
  });

  it("reads and writes its Secrets over a few kept-alive connections, not a connection per request", async () => {
    const store = replica();
    const { salt } = await store.load();

    await store.save(stateWith(salt, sameShard(3)));
    await store.load();
    await replica().load();

    // Three loads of 514 Secrets and a save: over 1,500 requests, at most 16 at a time per store.
    expect(fake.requests.length).toBeGreaterThan(1_500);
    expect(fake.connections()).toBeLessThanOrEqual(2 * 16);
  });

  it("round-trips 100,000 resources, each shard far under the 1 MiB a Secret may hold", async () => {
    const store = replica();
    const state = await store.load();
    for (let i = 0; i < 100_000; i++) {
      state.resources[`ApiKey/key-${i}`] = {
        kind: "ApiKey",
        name: `key-${i}`,
        appliedAt: "2026-11-23T04:00:00.000Z",
      };
    }

    await store.save(state);
    const loaded = await replica().load();

    expect(loaded).toEqual(state);
    const largest = Math.max(...writes().map((r) => JSON.stringify(r.body).length));
    expect(largest).toBeLessThan(64 * 1024);
  }, 60_000);
});
