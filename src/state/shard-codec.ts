import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import { z } from "zod";
import { messageOf, StateError } from "../errors.js";
import { checked, type KnownRecord, parseJson, parseState } from "./state-format.js";
import { ResourceRecord, type State } from "./store.js";

/**
 * How the Kubernetes store lays a state out in Secrets, and the text each one holds: the records are
 * spread over SHARD_COUNT shard Secrets `<name>-0` … `<name>-511` by a stable hash of the resource id
 * (shardOf), each holding gzip'd JSON of its records (base64, as Secret data is); the meta Secret
 * `<name>` holds the top-level fields. No I/O: the Kubernetes store reads and writes what this makes.
 */

/**
 * How many shards the records are spread over: fixed, so deploy/overlays/ha/role.yaml can name every
 * one, and so that a shard of 100,000 resources (about 200 records) stays far under 64 KiB written.
 */
export const SHARD_COUNT = 512;

/** The data key of the whole state in the meta Secret as an earlier driftless wrote it (migrated). */
export const STATE_KEY = "state.json.gz";
/** The data key of the top-level fields in the meta Secret. */
export const META_KEY = "meta.json";
/** The data key of a shard's records. */
export const SHARD_KEY = "records.json.gz";

/** A shard's records with their texts, by resource id. */
export type ShardRecords = Map<string, KnownRecord>;

/** The name of shard `index` of the state whose meta Secret is `name`. */
export function shardName(name: string, index: number): string {
  return `${name}-${index}`;
}

/**
 * The shard of resource `id`: 32-bit FNV-1a of its UTF-16 code units, modulo `count`. Stored states
 * depend on it: it never changes.
 */
export function shardOf(id: string, count = SHARD_COUNT): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % count;
}

/** `records` (every record of a state with its text) split by shard: entry `i` holds shard i's. */
export function recordsByShard(
  records: ReadonlyMap<string, KnownRecord>,
  count = SHARD_COUNT,
): ShardRecords[] {
  const shards: ShardRecords[] = Array.from({ length: count }, () => new Map());
  for (const [id, record] of records) shards[shardOf(id, count)]?.set(id, record);
  return shards;
}

/** The JSON of a shard: its records' texts as they are, keyed by id (no record is serialized again). */
export function shardJson(records: ShardRecords): string {
  return `{${[...records].map(([id, { text }]) => `${JSON.stringify(id)}:${text}`).join(",")}}`;
}

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * The data of the shard Secret `secret` (`namespace/name`, for messages) holding `records`: gzip'd
 * JSON, base64. Throws StateError when it is over `maxBytes` compressed (see checkShardSize).
 */
export async function encodeShard(records: ShardRecords, maxBytes: number, secret: string): Promise<string> {
  const compressed = await gzipAsync(shardJson(records));
  checkShardSize(compressed.length, maxBytes, records.size, secret);
  return compressed.toString("base64");
}

/**
 * Throws StateError, saying what to do, when a shard of `records` records is `bytes` compressed, over
 * the `maxBytes` one Secret may take: before anything is sent, never mid-save.
 */
export function checkShardSize(bytes: number, maxBytes: number, records: number, secret: string): void {
  if (bytes <= maxBytes) return;
  throw new StateError(
    `the ${records} records of the state Secret ${secret} are ${kib(bytes)} compressed, over the ${kib(maxBytes)} this store keeps in one Secret (Kubernetes caps a Secret at 1 MiB); use the file store on a volume (DRIFTLESS_STATE_STORE=file) or split the manifests between several driftless deployments`,
  );
}

const ShardSchema = z.record(z.string(), ResourceRecord);

/**
 * The records held in the data `encoded` of the shard Secret `secret` (`namespace/name`); none when
 * there is no data. Throws StateError when it is not gzip, not JSON, or not records.
 */
export async function decodeShard(encoded: string | undefined, secret: string): Promise<State["resources"]> {
  if (!encoded) return {};
  const what = `the state in Secret ${secret} (key ${SHARD_KEY})`;
  return checked(
    ShardSchema,
    parseJson(await gunzipped(encoded, SHARD_KEY, secret), what),
    what,
  ) as State["resources"];
}

/**
 * The whole state an earlier driftless kept in the meta Secret `secret` (`namespace/name`) under
 * STATE_KEY. Throws StateError as decodeShard does, and for another format version.
 */
export async function decodeWholeState(encoded: string, secret: string): Promise<State> {
  return parseState(
    await gunzipped(encoded, STATE_KEY, secret),
    `the state in Secret ${secret} (key ${STATE_KEY})`,
  );
}

/** The text of base64 gzip `encoded`, read from `key` of `secret`; StateError when it is not gzip. */
async function gunzipped(encoded: string, key: string, secret: string): Promise<string> {
  try {
    return (await gunzipAsync(Buffer.from(encoded, "base64"))).toString("utf8");
  } catch (error) {
    throw new StateError(
      `the state in Secret ${secret} (key ${key}) is corrupt (not gzip: ${messageOf(error)}). It was left as it is: restore it from a backup, or delete the state Secrets to start from an empty state`,
      { cause: error },
    );
  }
}

function kib(bytes: number): string {
  return `${Math.ceil(bytes / 1024)} KiB`;
}
