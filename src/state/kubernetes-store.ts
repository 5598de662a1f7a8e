import { CoreV1Api, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import { StateError } from "../errors.js";
import { pooledApiClient } from "../kubernetes/client.js";
import { mapLimited } from "../map-limited.js";
import type { Logger } from "../telemetry/logger.js";
import { SecretWriter } from "./secret-writer.js";
import {
  decodeShard,
  decodeWholeState,
  encodeShard,
  META_KEY,
  recordsByShard,
  SHARD_COUNT,
  SHARD_KEY,
  STATE_KEY,
  shardName,
} from "./shard-codec.js";
import {
  emptyKnown,
  legacyKnown,
  orphanedShards,
  type SaveStep,
  ShardLedger,
  type ShardWrite,
  type Versions,
} from "./shard-ledger.js";
import { type KnownRecord, knownRecords, newState, parseTopLevel, topLevelText } from "./state-format.js";
import type { State, StateStore } from "./store.js";

export { WRITE_ID_ANNOTATION } from "./secret-writer.js";
export { META_KEY, SHARD_COUNT, SHARD_KEY, STATE_KEY, shardName, shardOf } from "./shard-codec.js";

/**
 * The state in Kubernetes Secrets, so that any replica can pick it up after a handover (Secrets, not
 * ConfigMaps: the state holds salted hashes of secrets). The records are spread over SHARD_COUNT shard
 * Secrets `<name>-0` … `<name>-511` by a stable hash of the resource id, each holding gzip'd JSON of
 * its records; the meta Secret `<name>` holds the top-level fields (format version, salt, …); see
 * shard-codec.ts. A save writes only the shards whose records changed (and the meta Secret only when a
 * top-level field did), each conditional on the resourceVersion this store read it at: a second
 * writer gets a clear StateError instead of silently overwriting the first (secret-writer.ts). A save
 * is several writes, so it is ordered for any prefix of them to be a safe state: every record is
 * written to its new home before any record leaves its old one (a rename moves a record between
 * shards; see planSave in shard-ledger.ts). A load reads each Secret once, so it never mixes two
 * generations of one shard, and it changes what the store knows of the Secrets only when no save or
 * other load did meanwhile: a load made for a reader never puts older versions under a save. A state
 * written by an earlier driftless in the meta Secret alone (key state.json.gz) is loaded as it is, and
 * the first save moves it into the shards, rewriting the meta Secret last, so that a crash midway
 * leaves the old form in charge.
 */

/** The meta Secret's name unless told otherwise; the shards are named after it (shardName). */
export const DEFAULT_SECRET_NAME = "driftless-state";

/**
 * The API server refuses a Secret whose data exceeds 1 MiB. The default refusal point (per shard) leaves
 * a quarter of that as headroom so that one more pass's growth never meets the hard limit mid-save.
 */
export const DEFAULT_MAX_STATE_BYTES = 768 * 1024;

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

/** Requests in flight at once when a load reads every shard, or a save writes several. */
const PARALLEL_REQUESTS = 16;
const SHARD_INDEXES = Array.from({ length: SHARD_COUNT }, (_, index) => index);

/** A shard write with its data, made before anything is sent. */
type EncodedWrite = ShardWrite & { body: string };
type EncodedStep = { meta: string } | { shards: EncodedWrite[] };

/**
 * A StateStore backed by the Secrets named after `name` in `namespace`. `load` throws StateError when a
 * Secret cannot be read or is corrupt; `save` throws StateError when another writer changed a Secret it
 * writes since this store last read or wrote it (a write of its own that landed unanswered is not
 * another writer), when a shard is larger than `maxBytes`, or when the API fails. `ensureWritable`
 * resolves at once unless read-only: the conditional writes are its guard.
 */
export function createKubernetesStateStore(options: KubernetesStateStoreOptions): StateStore {
  const store = new KubernetesStateStore(options);
  // Nothing to unlock on close: with several replicas, the leader Lease decides who writes.
  return {
    load: () => store.load(),
    save: (state) => store.save(state),
    ensureWritable: () => store.ensureWritable(),
    close: () => store.close(),
  };
}

/** The shell around the codec, the writer and the ledger: the order of reads and writes, and turns. */
class KubernetesStateStore {
  private readonly namespace: string;
  private readonly name: string;
  private readonly maxBytes: number;
  private readonly readOnly: boolean;
  private readonly where: string;
  private readonly log: Logger;
  private readonly writer: SecretWriter;
  private readonly ledger = new ShardLedger(SHARD_COUNT);
  /** The state of a store that has none saved yet, made once so its salt does not change per load. */
  private fresh: State | undefined;
  private writes: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly closeConnections: () => void;

  constructor(options: KubernetesStateStoreOptions) {
    this.namespace = options.namespace;
    this.name = options.name ?? DEFAULT_SECRET_NAME;
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_STATE_BYTES;
    this.readOnly = options.readOnly ?? false;
    this.where = `Secret ${this.namespace}/${this.name}`;
    this.log = options.logger.child({ stateStore: "kubernetes", secret: `${this.namespace}/${this.name}` });
    const client = pooledApiClient(options.kubeConfig, CoreV1Api);
    this.closeConnections = client.close;
    this.writer = new SecretWriter({
      core: client.api,
      namespace: this.namespace,
      timeoutMs: options.timeoutMs ?? 10_000,
      log: this.log,
    });
  }

  async load(): Promise<State> {
    this.open();
    // A load waits for this store's own saves: what it knows of the Secrets is final by then.
    await this.writes;
    const began = this.ledger.generation;
    const meta = await this.writer.read(this.name);
    const shards = await mapLimited(SHARD_INDEXES, PARALLEL_REQUESTS, (index) =>
      this.writer.read(shardName(this.name, index)),
    );
    const readAt: Versions = { meta: versionOf(meta), shards: shards.map(versionOf) };
    const whole = meta?.data?.[STATE_KEY];
    const top = meta?.data?.[META_KEY];
    if (whole) return this.fromSingleSecret(whole, readAt, began);
    if (top) return this.fromShards(top, shards, readAt, began);
    return this.emptyState(meta, shards, readAt, began);
  }

  async save(state: State): Promise<void> {
    this.open();
    if (this.readOnly) throw new StateError(`the state store ${this.where} was opened read-only: not saving`);
    // Saves of one process land in the order they were asked for, each on the previous one's versions.
    const write = this.writes.then(() => this.ledger.saving(() => this.persist(state)));
    this.writes = write.catch(() => {});
    await write;
  }

  async ensureWritable(): Promise<void> {
    this.open();
    // Nothing to check ahead: every write is conditional on the resourceVersion (see above).
    if (this.readOnly)
      throw new StateError(`the state store ${this.where} was opened read-only: not writing`);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.writes;
    this.closeConnections();
  }

  private open(): void {
    if (this.closed) throw new StateError(`the state store ${this.where} is closed`);
  }

  /**
   * A new state when no meta Secret holds one: none exists yet, or one was created empty ahead of time
   * (e.g. by a deployment tool). Throws StateError when shards hold records (see orphanedShards) and
   * the meta Secret, read again behind them, still holds no state; when it does, loads again.
   */
  private async emptyState(
    meta: V1Secret | undefined,
    shards: Array<V1Secret | undefined>,
    readAt: Versions,
    began: number,
  ): Promise<State> {
    const counts: number[] = [];
    for (const [index, shard] of shards.entries()) {
      counts.push(Object.keys(await this.shardRecords(shard, index)).length);
    }
    const refusal = orphanedShards(
      { namespace: this.namespace, name: this.name },
      meta !== undefined,
      counts,
    );
    if (refusal) {
      // The meta Secret was read before the shards: a first save that landed in between is read again.
      const now = (await this.writer.read(this.name))?.data;
      if (now?.[META_KEY] || now?.[STATE_KEY]) return this.load();
      throw refusal;
    }
    if (!meta) this.log.info("no state Secret yet: starting from an empty state");
    this.fresh ??= newState();
    return this.ledger.adopt(structuredClone(this.fresh), readAt, emptyKnown(SHARD_COUNT), began, new Map());
  }

  /** The state of an earlier release's single Secret; every shard is rewritten at the next save. */
  private async fromSingleSecret(whole: string, readAt: Versions, began: number): Promise<State> {
    const state = await decodeWholeState(whole, `${this.namespace}/${this.name}`);
    this.log.info(
      { resources: Object.keys(state.resources).length },
      "state in the single-Secret form of an earlier driftless: the next save moves it into the shards",
    );
    return this.ledger.adopt(state, readAt, legacyKnown(SHARD_COUNT), began, knownRecords(state));
  }

  /** The state of the meta Secret's top-level fields and the shards' records, each shard read once. */
  private async fromShards(
    top: string,
    shards: Array<V1Secret | undefined>,
    readAt: Versions,
    began: number,
  ): Promise<State> {
    const topText = Buffer.from(top, "base64").toString("utf8");
    const state = {
      ...parseTopLevel(topText, `the state in ${this.where} (key ${META_KEY})`),
      resources: {},
    } as State;
    const ids: string[][] = [];
    for (const [index, shard] of shards.entries()) {
      const records =
        this.ledger.unchanged(index, readAt.shards[index] as string) ??
        (await this.shardRecords(shard, index));
      Object.assign(state.resources, records);
      ids.push(Object.keys(records));
    }
    const texts = this.ledger.textsOf(state);
    const held = ids.map((shard) => new Map(shard.map((id) => [id, texts.get(id) as KnownRecord])));
    const known = { shards: held, top: topLevelText(state), legacy: false };
    return this.ledger.adopt(state, readAt, known, began, texts);
  }

  /** The records of shard `index` as read (none when it does not exist or is empty). Throws StateError. */
  private shardRecords(shard: V1Secret | undefined, index: number): Promise<State["resources"]> {
    return decodeShard(shard?.data?.[SHARD_KEY], `${this.namespace}/${shardName(this.name, index)}`);
  }

  /** Writes the steps of the save of `state` (see planSave), each once the one before has landed. */
  private async persist(state: State): Promise<void> {
    const { base, records } = this.ledger.begin(state, (shard, version) =>
      this.writer.conflict(shard === undefined ? this.name : shardName(this.name, shard), version),
    );
    const top = topLevelText(state);
    const { steps, shards } = this.ledger.plan(recordsByShard(records), base, top);
    // Every body is made (and its size checked) before anything is sent.
    const encoded = await Promise.all(steps.map((step) => this.encoded(step)));
    for (const step of encoded) {
      if ("meta" in step) await this.saveMeta(step.meta, base);
      else await this.saveShards(step.shards, base);
    }
    this.log.debug(
      { shards, meta: steps.some((step) => "meta" in step), resources: Object.keys(state.resources).length },
      "state saved",
    );
  }

  private async encoded(step: SaveStep): Promise<EncodedStep> {
    if ("meta" in step) return step;
    const shards = await Promise.all(
      step.shards.map(async (write) => ({
        ...write,
        body: await encodeShard(
          write.records,
          this.maxBytes,
          `${this.namespace}/${shardName(this.name, write.index)}`,
        ),
      })),
    );
    return { shards };
  }

  /** Writes `shards` (at most PARALLEL_REQUESTS at once); throws the first failure once all are answered. */
  private async saveShards(shards: EncodedWrite[], base: Versions): Promise<void> {
    const failures = await mapLimited(shards, PARALLEL_REQUESTS, (write) =>
      this.saveShard(write, base).catch((error: unknown) => error),
    );
    const failure = failures.find((error) => error !== undefined);
    if (failure) throw failure;
  }

  /** Writes one shard; what the store knows of it follows only once the write is answered. */
  private async saveShard({ index, records, body }: EncodedWrite, base: Versions): Promise<void> {
    const name = shardName(this.name, index);
    const version = await this.writer.write(name, { [SHARD_KEY]: body }, base.shards[index] ?? "");
    this.ledger.shardWritten(index, records, version, base);
  }

  private async saveMeta(top: string, base: Versions): Promise<void> {
    const data = { [META_KEY]: Buffer.from(top).toString("base64") };
    const version = await this.writer.write(this.name, data, base.meta);
    this.ledger.metaWritten(top, version, base);
  }
}

function versionOf(secret: V1Secret | undefined): string {
  return secret?.metadata?.resourceVersion ?? "";
}
