import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import { CoreV1Api, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import { z } from "zod";
import { StateError } from "../errors.js";
import { abortWith, reasonOf, statusOf } from "../kubernetes/client.js";
import { mapLimited } from "../map-limited.js";
import type { Logger } from "../telemetry/logger.js";
import {
  checked,
  type KnownRecord,
  knownRecords,
  newState,
  parseJson,
  parseState,
  parseTopLevel,
  topLevelText,
} from "./state-format.js";
import { ResourceRecord, type State, type StateStore } from "./store.js";

/**
 * The state in Kubernetes Secrets, so that any replica can pick it up after a handover (Secrets, not
 * ConfigMaps: the state holds salted hashes of secrets). The records are spread over SHARD_COUNT shard
 * Secrets `<name>-0` … `<name>-511` by a stable hash of the resource id (shardOf), each holding gzip'd
 * JSON of its records; the meta Secret `<name>` holds the top-level fields (format version, salt, …).
 * A save writes only the shards whose records changed (and the meta Secret only when a top-level field
 * did), each conditional on the resourceVersion this store read it at: a second writer gets a clear
 * StateError instead of silently overwriting the first. A save is several writes, so it is ordered
 * for any prefix of them to be a safe state: every record is written to its new home before any
 * record leaves its old one (a rename moves a record between shards; see persist). A load reads each
 * Secret once, so it never mixes two generations of one shard, and it changes what the store knows of
 * the Secrets only when no save or other load did meanwhile: a load made for a reader (a poll round)
 * never puts older versions under a save. A state written by an earlier driftless in the meta Secret
 * alone (key state.json.gz) is loaded as it is, and the first save moves it into the shards, rewriting
 * the meta Secret last, so that a crash midway leaves the old form in charge.
 */

/** The meta Secret's name unless told otherwise; the shards are named after it (shardName). */
export const DEFAULT_SECRET_NAME = "driftless-state";

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

/**
 * The annotation naming each write (`<store id>-<n>`): a write whose answer was lost (a timeout, a
 * reset) may have landed, and the next write, conditional on the version before it, then conflicts with
 * this store's own write. The annotation tells that case from another writer.
 */
export const WRITE_ID_ANNOTATION = "driftless/write-id";

/**
 * The API server refuses a Secret whose data exceeds 1 MiB. The default refusal point (per shard) leaves
 * a quarter of that as headroom so that one more pass's growth never meets the hard limit mid-save.
 */
export const DEFAULT_MAX_STATE_BYTES = 768 * 1024;

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

export type KubernetesStateStoreOptions = {
  kubeConfig: KubeConfig;
  namespace: string;
  /** Name of the meta Secret, and prefix of the shards'; default `driftless-state`. */
  name?: string;
  /** Largest compressed shard saved; default DEFAULT_MAX_STATE_BYTES (768 KiB). */
  maxBytes?: number;
  /** Deadline of each API request; default 10 s. */
  timeoutMs?: number;
  /** Never write (for `driftless plan` beside a running daemon): save() throws StateError. Default false. */
  readOnly?: boolean;
  logger: Logger;
};

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);
/** Requests in flight at once when a load reads every shard, or a save writes several. */
const PARALLEL_REQUESTS = 16;
const LABELS = { "app.kubernetes.io/name": "driftless", "app.kubernetes.io/component": "state" };

/** The resourceVersion of the meta Secret and of each shard ("" = none yet), as one state saw them. */
type Versions = { meta: string; shards: string[] };

/** A shard's records with their texts, by resource id. */
type ShardRecords = Map<string, KnownRecord>;

/** What this store knows the Secrets hold: the records of each shard and the top-level text. */
type Known = {
  /** undefined: not known (a state of the earlier single-Secret form); the shard is rewritten. */
  shards: Array<ShardRecords | undefined>;
  /** undefined: the meta Secret must be (re)written. */
  top: string | undefined;
  /** The meta Secret still holds the earlier single-Secret form. */
  legacy: boolean;
};

const ShardSchema = z.record(z.string(), ResourceRecord);

/**
 * A StateStore backed by the Secrets named after `name` in `namespace`. `load` throws StateError when a
 * Secret cannot be read or is corrupt; `save` throws StateError when another writer changed a Secret it
 * writes since this store last read or wrote it (a write of its own that landed unanswered is not
 * another writer), when a shard is larger than `maxBytes`, or when the API fails. `ensureWritable`
 * resolves at once unless read-only: the conditional writes are its guard.
 */
export function createKubernetesStateStore(options: KubernetesStateStoreOptions): StateStore {
  const { kubeConfig, namespace, logger, readOnly = false } = options;
  const name = options.name ?? DEFAULT_SECRET_NAME;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_STATE_BYTES;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const where = `Secret ${namespace}/${name}`;
  const log = logger.child({ stateStore: "kubernetes", secret: `${namespace}/${name}` });
  const shardIndexes = Array.from({ length: SHARD_COUNT }, (_, index) => index);
  /**
   * The versions each loaded state was read at (then last saved at). A save is conditional on its
   * state's own versions, so a load made in between for another purpose (a poll reading tile ids)
   * cannot make a stale pass overwrite another writer's state.
   */
  const versions = new WeakMap<State, Versions>();
  /** The versions this store last read or wrote, for states it did not hand out itself. */
  let latest: Versions = { meta: "", shards: shardIndexes.map(() => "") };
  let known: Known = { shards: shardIndexes.map(() => new Map()), top: undefined, legacy: false };
  /** Every record this store last loaded or was asked to save, with its text (see knownRecords). */
  let serialized = new Map<string, KnownRecord>();
  /** The state of a store that has none saved yet, made once so its salt does not change per load. */
  let fresh: State | undefined;
  let writes: Promise<void> = Promise.resolve();
  let closed = false;
  const storeId = randomUUID();
  let writeCount = 0;
  /** Per Secret, writes whose answer never came (timeout, reset): each may or may not have landed. */
  const unanswered = new Map<string, Set<string>>();
  /**
   * Counts each change to what this store knows of the Secrets (`latest`, `known`): a load started at
   * one count adopts what it read only if the count is the same when it ends.
   */
  let knowledge = 0;

  const open = () => {
    if (closed) throw new StateError(`the state store ${where} is closed`);
  };
  /**
   * Hands out `state` read at `read`. What it read becomes what this store knows only when nothing
   * changed that since the load began at count `began` (a save, another load): a load for a reader
   * never replaces a save's newer versions with the older ones it read.
   */
  const loaded = (
    state: State,
    read: Versions,
    now: Known,
    began: number,
    texts: Map<string, KnownRecord>,
  ) => {
    versions.set(state, structuredClone(read));
    if (knowledge !== began) return state;
    knowledge += 1;
    latest = read;
    known = now;
    serialized = texts;
    return state;
  };

  async function load(): Promise<State> {
    open();
    // A load waits for this store's own saves: what it knows of the Secrets is settled by then.
    await writes;
    const began = knowledge;
    const meta = await read(name);
    const metaVersion = meta?.metadata?.resourceVersion ?? "";
    const whole = meta?.data?.[STATE_KEY];
    const top = meta?.data?.[META_KEY];
    const shards = await mapLimited(shardIndexes, PARALLEL_REQUESTS, (index) => read(shardName(name, index)));
    const readAt: Versions = {
      meta: metaVersion,
      shards: shards.map((shard) => shard?.metadata?.resourceVersion ?? ""),
    };
    if (whole) return fromSingleSecret(whole, readAt, began);
    if (top) return fromShards(top, shards, readAt, began);
    // The meta Secret was read before the shards: a first save that landed in between is read again.
    if (await refuseOrphanedShards(meta, shards)) return load();
    // No Secret yet, or one created empty ahead of time (e.g. by a deployment tool): a new state.
    if (!meta) log.info("no state Secret yet: starting from an empty state");
    fresh ??= newState();
    const empty: Known = { shards: shardIndexes.map(() => new Map()), top: undefined, legacy: false };
    return loaded(structuredClone(fresh), readAt, empty, began, new Map());
  }

  /**
   * Throws StateError when the meta Secret holds no state (gone, or emptied: a deployment tool that
   * replaced it with an empty one, a hand edit) while shards hold records: starting afresh would forget
   * them, with the salt of their secret hashes, and create their endpoints again. Returns true when the
   * meta Secret, read again after the shards, now holds a state (the load must be made again), false
   * when no shard holds a record.
   */
  async function refuseOrphanedShards(
    meta: V1Secret | undefined,
    shards: Array<V1Secret | undefined>,
  ): Promise<boolean> {
    let records = 0;
    let holding = 0;
    for (const [index, shard] of shards.entries()) {
      const count = Object.keys(await shardRecords(shard, shardName(name, index))).length;
      records += count;
      if (count > 0) holding += 1;
    }
    if (records === 0) return false;
    const now = (await read(name))?.data;
    if (now?.[META_KEY] || now?.[STATE_KEY]) return true;
    const what = meta ? `has no key ${META_KEY} (it was emptied or replaced)` : "is gone";
    const shardsHold = holding === 1 ? "1 shard Secret holds" : `${holding} shard Secrets hold`;
    throw new StateError(
      `the state Secret ${namespace}/${name} holds no state: it ${what}, while ${shardsHold} ${records} record${records === 1 ? "" : "s"} (${name}-N). It was left as it is, and nothing is sent: restore its ${META_KEY} from a backup; without one, write a new ${META_KEY} with a new salt ("Writing a new meta Secret" in docs/operations.md), which keeps the records and sends their secrets once more. Deleting the shard Secrets instead would forget every endpoint and tile id driftless created`,
    );
  }

  /** The state of an earlier release's single Secret; every shard is rewritten at the next save. */
  async function fromSingleSecret(whole: string, readAt: Versions, began: number): Promise<State> {
    const state = parseState(
      await gunzipped(whole, STATE_KEY, name),
      `the state in ${where} (key ${STATE_KEY})`,
    );
    log.info(
      { resources: Object.keys(state.resources).length },
      "state in the single-Secret form of an earlier driftless: the next save moves it into the shards",
    );
    const legacy = { shards: shardIndexes.map(() => undefined), top: undefined, legacy: true };
    return loaded(state, readAt, legacy, began, knownRecords(state));
  }

  /** The state of the meta Secret's top-level fields and the shards' records, each shard read once. */
  async function fromShards(
    top: string,
    shards: Array<V1Secret | undefined>,
    readAt: Versions,
    began: number,
  ): Promise<State> {
    const topText = Buffer.from(top, "base64").toString("utf8");
    const state = {
      ...parseTopLevel(topText, `the state in ${where} (key ${META_KEY})`),
      resources: {},
    } as State;
    const ids: string[][] = [];
    for (const [index, shard] of shards.entries()) {
      const records =
        unchangedShard(index, readAt.shards[index] as string) ??
        (await shardRecords(shard, shardName(name, index)));
      Object.assign(state.resources, records);
      ids.push(Object.keys(records));
    }
    const texts = knownRecords(state, serialized);
    const held = ids.map((shard) => new Map(shard.map((id) => [id, texts.get(id) as KnownRecord])));
    return loaded(state, readAt, { shards: held, top: topLevelText(state), legacy: false }, began, texts);
  }

  /**
   * The records of shard `index` as this store last read or wrote it, when the Secret is still at that
   * version (a resourceVersion names one content): a load then neither decompresses, parses nor checks
   * it again. Undefined otherwise.
   */
  function unchangedShard(index: number, version: string): State["resources"] | undefined {
    const shard = known.shards[index];
    if (!version || version !== latest.shards[index] || !shard) return undefined;
    const records: State["resources"] = {};
    for (const [id, { record }] of shard) records[id] = record;
    return records;
  }

  /** The Secret `secret`, or undefined when there is none. Throws StateError. */
  async function read(secret: string): Promise<V1Secret | undefined> {
    try {
      return await core.readNamespacedSecret(
        { name: secret, namespace },
        abortWith(AbortSignal.timeout(timeoutMs)),
      );
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw new StateError(`cannot read the state Secret ${namespace}/${secret}: ${reasonOf(error)}`, {
        cause: error,
      });
    }
  }

  /** The records of one shard Secret (none when it does not exist or is empty). Throws StateError. */
  async function shardRecords(shard: V1Secret | undefined, secret: string): Promise<State["resources"]> {
    const encoded = shard?.data?.[SHARD_KEY];
    if (!encoded) return {};
    const what = `the state in Secret ${namespace}/${secret} (key ${SHARD_KEY})`;
    return checked(
      ShardSchema,
      parseJson(await gunzipped(encoded, SHARD_KEY, secret), what),
      what,
    ) as State["resources"];
  }

  async function gunzipped(encoded: string, key: string, secret: string): Promise<string> {
    try {
      return (await gunzipAsync(Buffer.from(encoded, "base64"))).toString("utf8");
    } catch (error) {
      throw new StateError(
        `the state in Secret ${namespace}/${secret} (key ${key}) is corrupt (not gzip: ${reasonOf(error)}). It was left as it is: restore it from a backup, or delete the state Secrets to start from an empty state`,
        { cause: error },
      );
    }
  }

  async function save(state: State): Promise<void> {
    open();
    if (readOnly) throw new StateError(`the state store ${where} was opened read-only: not saving`);
    // Saves of one process land in the order they were asked for, each on the previous one's versions.
    const write = writes.then(() => persist(state));
    writes = write.catch(() => {});
    await write;
  }

  /** Writes the shards whose records differ from what the Secrets hold, and the meta Secret if needed. */
  async function persist(state: State): Promise<void> {
    knowledge += 1;
    try {
      await persistInOrder(state);
    } finally {
      knowledge += 1;
    }
  }

  /**
   * The writes of a save, ordered so that it may stop after any of them (a failed write, a lost
   * answer, the pod dying) and leave every record in at least one shard: first every shard that gains
   * or changes records, keeping any it is about to lose; then, once all of those have landed, the
   * shards that lose records. A rename across shards thus writes its new home before it empties the
   * old one; the state in between holds the record twice (the old name shows Unmanaged), never zero
   * times (the next process would create the endpoint again).
   */
  async function persistInOrder(state: State): Promise<void> {
    const base = versions.get(state) ?? latest;
    refuseStale(base);
    serialized = knownRecords(state, serialized);
    const byShard: ShardRecords[] = shardIndexes.map(() => new Map());
    for (const [id, record] of serialized) byShard[shardOf(id)]?.set(id, record);
    const changed = shardIndexes.filter((index) =>
      differs(known.shards[index], byShard[index], base.shards[index]),
    );
    const plans = changed.map((index) => planShard(index, byShard[index] as ShardRecords));
    // Every body is made (and its size checked) before anything is sent.
    const planned = await Promise.all(
      plans.map(async ({ index, first, last }) => ({
        index,
        first: first && { records: first, body: await shardBody(index, first) },
        last: last && { records: last, body: await shardBody(index, last) },
      })),
    );
    const top = topLevelText(state);
    const writeMeta = known.top !== top;
    const { legacy } = known;
    // The meta Secret first, so a crash never leaves shards no meta Secret names, except when migrating:
    // then last, so the single-Secret form stays in charge until every shard is written.
    if (writeMeta && !legacy) await saveMeta(top, base);
    await saveShards(
      planned.flatMap(({ index, first }) => (first ? [{ index, ...first }] : [])),
      base,
    );
    await saveShards(
      planned.flatMap(({ index, last }) => (last ? [{ index, ...last }] : [])),
      base,
    );
    if (writeMeta && legacy) await saveMeta(top, base);
    log.debug(
      { shards: changed.length, meta: writeMeta, resources: Object.keys(state.resources).length },
      "state saved",
    );
  }

  /**
   * What shard `index` is written with to hold `wanted`: `first` among the writes that add, `last`
   * among those that remove (see persistInOrder). A shard that gains or changes records and loses
   * others is written twice: first with the lost ones still in it, last without them.
   */
  function planShard(
    index: number,
    wanted: ShardRecords,
  ): { index: number; first?: ShardRecords; last?: ShardRecords } {
    const held = known.shards[index];
    // Not known (the single-Secret form, whose meta Secret is rewritten last): nothing to keep.
    if (!held) return { index, first: wanted };
    const lost = [...held].filter(([id]) => !wanted.has(id));
    if (lost.length === 0) return { index, first: wanted };
    const gains = [...wanted].some(([id, { text }]) => held.get(id)?.text !== text);
    if (!gains) return { index, last: wanted };
    return { index, first: new Map([...wanted, ...lost]), last: wanted };
  }

  /** Writes `shards` (at most PARALLEL_REQUESTS at once); throws the first failure once all are answered. */
  async function saveShards(
    shards: Array<{ index: number; records: ShardRecords; body: string }>,
    base: Versions,
  ): Promise<void> {
    const failures = await mapLimited(shards, PARALLEL_REQUESTS, ({ index, body, records }) =>
      saveShard(index, body, records, base).catch((error: unknown) => error),
    );
    const failure = failures.find((error) => error !== undefined);
    if (failure) throw failure;
  }

  /** Writes one shard; what the store knows of it follows only once the write is answered. */
  async function saveShard(
    index: number,
    body: string,
    records: ShardRecords,
    base: Versions,
  ): Promise<void> {
    const version = await writeSecret(
      shardName(name, index),
      { [SHARD_KEY]: body },
      base.shards[index] ?? "",
    );
    known.shards[index] = records;
    base.shards[index] = version;
    latest.shards[index] = version;
  }

  /**
   * Throws the conflict StateError when this process has seen a Secret change since `base` was read
   * (another writer's, reloaded for something else): saving that state would overwrite it.
   */
  function refuseStale(base: Versions): void {
    if (base === latest) return;
    if (base.meta !== latest.meta) throw conflict(name, base.meta);
    const stale = shardIndexes.find((index) => base.shards[index] !== latest.shards[index]);
    if (stale !== undefined) throw conflict(shardName(name, stale), base.shards[stale] as string);
  }

  async function saveMeta(top: string, base: Versions): Promise<void> {
    const version = await writeSecret(name, { [META_KEY]: Buffer.from(top).toString("base64") }, base.meta);
    known.top = top;
    known.legacy = false;
    base.meta = version;
    latest.meta = version;
  }

  /** A shard's data, gzip'd JSON of its records; StateError when over maxBytes, before anything is sent. */
  async function shardBody(index: number, records: ShardRecords): Promise<string> {
    const json = `{${[...records].map(([id, { text }]) => `${JSON.stringify(id)}:${text}`).join(",")}}`;
    const compressed = await gzipAsync(json);
    if (compressed.length > maxBytes) {
      throw new StateError(
        `the ${records.size} records of the state Secret ${namespace}/${shardName(name, index)} are ${kib(compressed.length)} compressed, over the ${kib(maxBytes)} this store keeps in one Secret (Kubernetes caps a Secret at 1 MiB); use the file store on a volume (DRIFTLESS_STATE_STORE=file) or split the manifests between several driftless deployments`,
      );
    }
    return compressed.toString("base64");
  }

  /**
   * Creates or replaces Secret `secret` with `data` at `resourceVersion` ("" = create); returns its new
   * version. A conflict is another writer's, unless the Secret's last write is one of ours whose answer
   * was lost: then it is written again over that one.
   */
  async function writeSecret(
    secret: string,
    data: Record<string, string>,
    resourceVersion: string,
  ): Promise<string> {
    try {
      return await send(secret, data, resourceVersion);
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
      const ours = await ownUnansweredWrite(secret);
      if (ours === undefined) throw conflict(secret, resourceVersion, error);
      log.info(
        { secret, resourceVersion: ours },
        "an earlier save whose answer was lost had landed: saving over it",
      );
      return await send(secret, data, ours).catch((again: unknown) => {
        throw statusOf(again) === 409 ? conflict(secret, ours, again) : again;
      });
    }
  }

  /** One create or replace. Throws the client's error on 409, StateError otherwise. */
  async function send(
    secret: string,
    data: Record<string, string>,
    resourceVersion: string,
  ): Promise<string> {
    writeCount += 1;
    const writeId = `${storeId}-${writeCount}`;
    const body: V1Secret = {
      apiVersion: "v1",
      kind: "Secret",
      type: "Opaque",
      metadata: {
        name: secret,
        namespace,
        resourceVersion: resourceVersion || undefined,
        labels: LABELS,
        annotations: { [WRITE_ID_ANNOTATION]: writeId },
      },
      data,
    };
    const request = abortWith(AbortSignal.timeout(timeoutMs));
    try {
      const saved = resourceVersion
        ? await core.replaceNamespacedSecret({ name: secret, namespace, body }, request)
        : await core.createNamespacedSecret({ namespace, body }, request);
      unanswered.delete(secret);
      return saved.metadata?.resourceVersion ?? "";
    } catch (error) {
      if (statusOf(error) === 409) throw error;
      // No answer at all: the write may have landed (see ownUnansweredWrite).
      if (statusOf(error) === undefined) {
        unanswered.set(secret, (unanswered.get(secret) ?? new Set()).add(writeId));
      }
      throw new StateError(`cannot save the state Secret ${namespace}/${secret}: ${reasonOf(error)}`, {
        cause: error,
      });
    }
  }

  /** The Secret's resourceVersion when its last write is one of ours whose answer was lost, else undefined. */
  async function ownUnansweredWrite(secret: string): Promise<string | undefined> {
    const ours = unanswered.get(secret);
    if (!ours) return undefined;
    let current: V1Secret | undefined;
    try {
      current = await read(secret);
    } catch (error) {
      throw new StateError(
        `cannot read the state Secret ${namespace}/${secret} after a conflict: ${reasonOf(error)}`,
        {
          cause: error,
        },
      );
    }
    const writeId = current?.metadata?.annotations?.[WRITE_ID_ANNOTATION];
    if (!writeId || !ours.has(writeId)) return undefined;
    unanswered.delete(secret);
    return current?.metadata?.resourceVersion;
  }

  function conflict(secret: string, resourceVersion: string, cause?: unknown): StateError {
    const what = resourceVersion
      ? `it changed since this replica read it (resourceVersion ${resourceVersion})`
      : "it was created by someone else after this replica found none";
    return new StateError(
      `another writer changed the state: Secret ${namespace}/${secret} was not saved because ${what}; is a second driftless running without leader election? The next pass reloads it`,
      { cause },
    );
  }

  async function ensureWritable(): Promise<void> {
    open();
    // Nothing to check ahead: every write is conditional on the resourceVersion (see above).
    if (readOnly) throw new StateError(`the state store ${where} was opened read-only: not writing`);
  }

  async function close(): Promise<void> {
    closed = true;
    await writes;
  }

  // Nothing to unlock on close: with several replicas, the leader Lease decides who writes.
  return { load, save, ensureWritable, close };
}

/**
 * Whether a shard must be written: its records differ from what it is known to hold, or what it holds
 * is not known (the single-Secret form) while it has records or exists.
 */
function differs(
  known: ShardRecords | undefined,
  wanted: ShardRecords | undefined,
  version: string | undefined,
): boolean {
  if (!wanted) return false;
  if (!known) return wanted.size > 0 || !!version;
  if (known.size !== wanted.size) return true;
  for (const [id, { text }] of wanted) if (known.get(id)?.text !== text) return true;
  return false;
}

function kib(bytes: number): string {
  return `${Math.ceil(bytes / 1024)} KiB`;
}
