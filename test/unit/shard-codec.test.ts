import { gunzipSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { isStateError } from "../../src/errors.js";
import {
  checkShardSize,
  decodeShard,
  decodeWholeState,
  encodeShard,
  recordsByShard,
  type ShardRecords,
  shardJson,
  shardName,
  shardOf,
} from "../../src/state/shard-codec.js";
import { knownRecords, newState } from "../../src/state/state-format.js";
import type { ResourceRecord } from "../../src/state/store.js";

/** The Kubernetes store's codec: records ↔ gzip'd JSON per shard, sharding by id, size checks. */

const record = (name: string, extra: Partial<ResourceRecord> = {}): ResourceRecord => ({
  kind: "ApiKey",
  name,
  ...extra,
});

/** The records of `names`, with their texts, as a store keeps them. */
function shardOfNames(...names: string[]): ShardRecords {
  const state = newState();
  for (const name of names) state.resources[`ApiKey/${name}`] = record(name);
  return knownRecords(state);
}

const NOT_GZIP = Buffer.from("not gzip at all").toString("base64");

describe("sharding by id", () => {
  it("rule: the shard of an id is 32-bit FNV-1a of its UTF-16 code units, modulo the count (stored states depend on it)", () => {
    expect(shardOf("")).toBe(0x811c9dc5 % 512);
    expect(shardOf("a", 2 ** 32 - 1)).toBe(0xe40c292c % (2 ** 32 - 1));
    expect([shardOf("ApiKey/ci-deployer"), shardOf("DataPipe/orders"), shardOf("")]).toEqual([378, 107, 453]);
    expect(shardOf("Dashboard/edge-2")).toBe(2);
  });

  it("rule: shard i of the state named N is the Secret N-i", () => {
    expect(shardName("driftless-state", 511)).toBe("driftless-state-511");
  });

  it("rule: records are split by the shard of their id, every shard present even when empty", () => {
    const records = shardOfNames("a", "b", "c");

    const shards = recordsByShard(records, 4);

    expect(shards).toHaveLength(4);
    for (const [index, shard] of shards.entries()) {
      for (const id of shard.keys()) expect(shardOf(id, 4)).toBe(index);
    }
    expect(shards.reduce((sum, shard) => sum + shard.size, 0)).toBe(3);
  });
});

describe("a shard's data", () => {
  it("rule: a shard is the JSON of its records' own texts, by id, never serialized again", () => {
    const records: ShardRecords = new Map([
      ["ApiKey/a", { record: record("a"), text: '{"kept":"as written"}' }],
      ['ApiKey/"b"', { record: record("b"), text: "{}" }],
    ]);

    expect(shardJson(records)).toBe('{"ApiKey/a":{"kept":"as written"},"ApiKey/\\"b\\"":{}}');
  });

  it("rule: a shard's data is its JSON gzip'd, then base64", async () => {
    const records = shardOfNames("a", "b");

    const encoded = await encodeShard(records, 1024 * 1024, "ns/state-1");

    expect(gunzipSync(Buffer.from(encoded, "base64")).toString("utf8")).toBe(shardJson(records));
  });

  it("rule: what is encoded decodes to the same records", async () => {
    const records = shardOfNames("a", "b");
    const tiles = { record: record("d", { tileIds: { lag: "65f1" } }), text: "" };
    records.set("Dashboard/d", { ...tiles, text: JSON.stringify(tiles.record) });

    const decoded = await decodeShard(await encodeShard(records, 1024 * 1024, "ns/state-1"), "ns/state-1");

    expect(decoded).toEqual(Object.fromEntries([...records].map(([id, { record }]) => [id, record])));
  });

  it("rule: a shard with no data holds no record", async () => {
    expect(await decodeShard(undefined, "ns/state-1")).toEqual({});
    expect(await decodeShard("", "ns/state-1")).toEqual({});
  });

  it("rule: data that is not gzip is corrupt, named by Secret and key, and left as it is", async () => {
    const error = await decodeShard(NOT_GZIP, "ns/state-7").catch((e: unknown) => e);

    expect(isStateError(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /^the state in Secret ns\/state-7 \(key records\.json\.gz\) is corrupt \(not gzip: .+\)\. It was left as it is: restore it from a backup/,
    );
  });

  it("rule: gzip'd data that is not records is refused, naming the field", async () => {
    const encoded = gzipSync(JSON.stringify({ "ApiKey/a": { kind: 7 } })).toString("base64");

    const error = await decodeShard(encoded, "ns/state-7").catch((e: unknown) => e);

    expect(isStateError(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /Secret ns\/state-7 \(key records\.json\.gz\) is not a driftless state/,
    );
    expect((error as Error).message).toContain("kind");
  });

  it("rule: the single-Secret form of an earlier driftless decodes as a whole state, its version checked", async () => {
    const state = { ...newState(), resources: { "ApiKey/a": record("a") } };
    const newer = gzipSync(JSON.stringify({ ...state, version: 2 })).toString("base64");

    const decoded = await decodeWholeState(gzipSync(JSON.stringify(state)).toString("base64"), "ns/state");
    const refused = await decodeWholeState(newer, "ns/state").catch((e: unknown) => e);

    expect(decoded).toEqual(state);
    expect((refused as Error).message).toMatch(
      /Secret ns\/state \(key state\.json\.gz\) has state format version 2/,
    );
  });
});

describe("the size check", () => {
  it("rule: a shard at the limit passes; one byte over is refused, saying what to do", () => {
    expect(() => checkShardSize(1024, 1024, 3, "ns/state-9")).not.toThrow();

    const refusal = () => checkShardSize(1025, 1024, 3, "ns/state-9");

    expect(refusal).toThrow(
      "the 3 records of the state Secret ns/state-9 are 2 KiB compressed, over the 1 KiB this store keeps in one Secret (Kubernetes caps a Secret at 1 MiB); use the file store on a volume (DRIFTLESS_STATE_STORE=file) or split the manifests between several driftless deployments",
    );
  });

  it("rule: the limit is on the compressed size, checked while encoding", async () => {
    const records = shardOfNames(...Array.from({ length: 200 }, (_, i) => `key-${i}`));
    const compressed = gzipSync(shardJson(records)).length;

    await expect(encodeShard(records, compressed, "ns/state-1")).resolves.toEqual(expect.any(String));
    await expect(encodeShard(records, compressed - 1, "ns/state-1")).rejects.toThrow(/over the/);
  });
});
