import { StateError } from "../errors.js";
import { META_KEY, type ShardRecords } from "./shard-codec.js";
import { type KnownRecord, knownRecords } from "./state-format.js";
import type { State } from "./store.js";

/**
 * What the Kubernetes store knows its Secrets hold, and the decisions it takes from that alone: which
 * shards a save writes, in which order, whether a state is too old to save, what a load may take from
 * memory instead of decoding it again. The decisions are pure functions (unit-tested in
 * test/unit/shard-ledger.test.ts); ShardLedger keeps the knowledge they read between loads and saves.
 */

/** The resourceVersion of the meta Secret and of each shard ("" = none yet), as one state saw them. */
export type Versions = { meta: string; shards: string[] };

/** What the Secrets hold, as far as the store knows: the records of each shard and the top-level text. */
export type Known = {
  /** undefined: not known (a state of the earlier single-Secret form); the shard is rewritten. */
  shards: Array<ShardRecords | undefined>;
  /** undefined: the meta Secret must be (re)written. */
  top: string | undefined;
  /** The meta Secret still holds the earlier single-Secret form. */
  legacy: boolean;
};

/** One shard written with these records. */
export type ShardWrite = { index: number; records: ShardRecords };

/**
 * One step of a save: the meta Secret written with the top-level text `meta`, or several shards
 * written side by side. Each step starts once the one before it has landed.
 */
export type SaveStep = { meta: string } | { shards: ShardWrite[] };

/** Versions of `count` shards and a meta Secret none of which exists yet. */
export function noVersions(count: number): Versions {
  return { meta: "", shards: Array.from({ length: count }, () => "") };
}

/** Knowledge of Secrets that hold no record (none yet, or created empty). */
export function emptyKnown(count: number): Known {
  return { shards: Array.from({ length: count }, () => new Map()), top: undefined, legacy: false };
}

/** Knowledge of a state in the earlier single-Secret form: every shard is written at the next save. */
export function legacyKnown(count: number): Known {
  return { shards: Array.from({ length: count }, () => undefined), top: undefined, legacy: true };
}

/**
 * Whether a shard must be written: its records differ from what it is known to hold, or what it holds
 * is not known (the single-Secret form) while it has records or exists (`version`).
 */
export function differs(
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

/**
 * What a shard known to hold `held` is written with to hold `wanted`: `first` among the writes that
 * add, `last` among those that remove (see planSave). A shard that gains or changes records and loses
 * others is written twice: first with the lost ones still in it, last without them.
 */
export function planShard(
  held: ShardRecords | undefined,
  wanted: ShardRecords,
): { first?: ShardRecords; last?: ShardRecords } {
  // Not known (the single-Secret form, whose meta Secret is rewritten last): nothing to keep.
  if (!held) return { first: wanted };
  const lost = [...held].filter(([id]) => !wanted.has(id));
  if (lost.length === 0) return { first: wanted };
  const gains = [...wanted].some(([id, { text }]) => held.get(id)?.text !== text);
  if (!gains) return { last: wanted };
  return { first: new Map([...wanted, ...lost]), last: wanted };
}

/**
 * The writes that turn Secrets holding `known` (at versions `base`) into ones holding `wanted` (the
 * records of each shard) and the top-level text `top`, ordered so that a save may stop after any step
 * (a failed write, a lost answer, the pod dying) and leave every record in at least one shard: first
 * every shard that gains or changes records, keeping any it is about to lose; then, once all of those
 * have landed, the shards that lose records. A rename across shards thus writes its new home before it
 * empties the old one; the state in between holds the record twice (the old name shows Unmanaged),
 * never zero times (the next process would create the endpoint again). The meta Secret goes first, so
 * a crash never leaves shards no meta Secret names, except when migrating from the single-Secret form:
 * then last, so that form stays in charge until every shard is written. No step is empty.
 */
export function planSave(
  known: Known,
  wanted: readonly ShardRecords[],
  base: Versions,
  top: string,
): { steps: SaveStep[]; shards: number } {
  const changed = wanted.flatMap((records, index) =>
    differs(known.shards[index], records, base.shards[index]) ? [index] : [],
  );
  const first: ShardWrite[] = [];
  const last: ShardWrite[] = [];
  for (const index of changed) {
    const plan = planShard(known.shards[index], wanted[index] as ShardRecords);
    if (plan.first) first.push({ index, records: plan.first });
    if (plan.last) last.push({ index, records: plan.last });
  }
  const meta = known.top === top ? [] : [{ meta: top }];
  const steps: SaveStep[] = [
    ...(known.legacy ? [] : meta),
    ...(first.length > 0 ? [{ shards: first }] : []),
    ...(last.length > 0 ? [{ shards: last }] : []),
    ...(known.legacy ? meta : []),
  ];
  return { steps, shards: changed.length };
}

/**
 * The Secret that changed since `base` was read, as `latest` (what the store last read or wrote) shows
 * it: saving a state read at `base` would overwrite another writer's. Undefined when none did.
 */
export function staleSecret(
  base: Versions,
  latest: Versions,
): { shard?: number; version: string } | undefined {
  if (base === latest) return undefined;
  if (base.meta !== latest.meta) return { version: base.meta };
  const stale = base.shards.findIndex((version, index) => version !== latest.shards[index]);
  return stale === -1 ? undefined : { shard: stale, version: base.shards[stale] as string };
}

/**
 * The records of a shard known to hold `held` as it was at `knownVersion`, when the Secret is still at
 * that `version` (a resourceVersion names one content): a load then neither decompresses, parses nor
 * checks it again. Undefined otherwise.
 */
export function unchangedShard(
  held: ShardRecords | undefined,
  knownVersion: string | undefined,
  version: string,
): State["resources"] | undefined {
  if (!version || version !== knownVersion || !held) return undefined;
  const records: State["resources"] = {};
  for (const [id, { record }] of held) records[id] = record;
  return records;
}

/**
 * The refusal of a meta Secret `name` (in `namespace`) that holds no state (gone, or `emptied`: a
 * deployment tool that replaced it with an empty one, a hand edit) while shards hold records, counted
 * per shard in `records`: starting afresh would forget them, with the salt of their secret hashes, and
 * create their endpoints again. Undefined when no shard holds a record.
 */
export function orphanedShards(
  where: { namespace: string; name: string },
  emptied: boolean,
  records: readonly number[],
): StateError | undefined {
  const total = records.reduce((sum, count) => sum + count, 0);
  if (total === 0) return undefined;
  const holding = records.filter((count) => count > 0).length;
  const { namespace, name } = where;
  const what = emptied ? `has no key ${META_KEY} (it was emptied or replaced)` : "is gone";
  const shardsHold = holding === 1 ? "1 shard Secret holds" : `${holding} shard Secrets hold`;
  return new StateError(
    `the state Secret ${namespace}/${name} holds no state: it ${what}, while ${shardsHold} ${total} record${total === 1 ? "" : "s"} (${name}-N). It was left as it is, and nothing is sent: restore its ${META_KEY} from a backup; without one, write a new ${META_KEY} with a new salt ("Writing a new meta Secret" in docs/operations.md), which keeps the records and sends their secrets once more. Deleting the shard Secrets instead would forget every endpoint and tile id driftless created`,
  );
}

/**
 * The store's knowledge between loads and saves: the versions each handed-out state was read at, the
 * versions and contents of the Secrets as last read or written, and the texts of every record. A load
 * adopts what it read only when nothing changed the knowledge since it began (`generation`): a load
 * for a reader never puts older versions under a save.
 */
export class ShardLedger {
  /**
   * The versions each loaded state was read at (then last saved at). A save is conditional on its
   * state's own versions, so a load made in between for another purpose (a poll reading tile ids)
   * cannot make a stale pass overwrite another writer's state.
   */
  private readonly versions = new WeakMap<State, Versions>();
  /** The versions the store last read or wrote, for states it did not hand out itself. */
  private latest: Versions;
  private known: Known;
  /** Every record the store last loaded or was asked to save, with its text (see knownRecords). */
  private serialized = new Map<string, KnownRecord>();
  private changes = 0;

  constructor(count: number) {
    this.latest = noVersions(count);
    this.known = emptyKnown(count);
  }

  /** Counts each change to the knowledge: a load started at one count adopts what it read only at the same. */
  get generation(): number {
    return this.changes;
  }

  /**
   * Hands out `state` read at `read`. What it read becomes the knowledge only when nothing changed it
   * since the load began at generation `began`.
   */
  adopt(state: State, read: Versions, known: Known, began: number, texts: Map<string, KnownRecord>): State {
    this.versions.set(state, structuredClone(read));
    if (this.changes !== began) return state;
    this.changes += 1;
    this.latest = read;
    this.known = known;
    this.serialized = texts;
    return state;
  }

  /** The records of shard `index` from memory when the Secret is still at `version` (see unchangedShard). */
  unchanged(index: number, version: string): State["resources"] | undefined {
    return unchangedShard(this.known.shards[index], this.latest.shards[index], version);
  }

  /** Each record of `state` with its text, reusing the texts of records the store already holds. */
  textsOf(state: State): Map<string, KnownRecord> {
    return knownRecords(state, this.serialized);
  }

  /** Runs a save: the knowledge changes when it starts and when it ends, whatever happened. */
  async saving<T>(save: () => Promise<T>): Promise<T> {
    this.changes += 1;
    try {
      return await save();
    } finally {
      this.changes += 1;
    }
  }

  /**
   * The versions a save of `state` builds on (followed by each write that lands), and its records
   * with their texts, remembered. Throws the StateError `conflict` makes of the Secret another writer
   * changed since `state` was read (the same replica reloaded it for something else): saving would
   * overwrite it.
   */
  begin(
    state: State,
    conflict: (shard: number | undefined, version: string) => StateError,
  ): { base: Versions; records: Map<string, KnownRecord> } {
    const base = this.versions.get(state) ?? this.latest;
    const stale = staleSecret(base, this.latest);
    if (stale) throw conflict(stale.shard, stale.version);
    this.serialized = knownRecords(state, this.serialized);
    return { base, records: this.serialized };
  }

  /** The steps of a save of `wanted` and `top` from `base` (see planSave). */
  plan(wanted: readonly ShardRecords[], base: Versions, top: string): ReturnType<typeof planSave> {
    return planSave(this.known, wanted, base, top);
  }

  /** Shard `index` now holds `records` at `version`. */
  shardWritten(index: number, records: ShardRecords, version: string, base: Versions): void {
    this.known.shards[index] = records;
    base.shards[index] = version;
    this.latest.shards[index] = version;
  }

  /** The meta Secret now holds the top-level text `top` at `version`. */
  metaWritten(top: string, version: string, base: Versions): void {
    this.known.top = top;
    this.known.legacy = false;
    base.meta = version;
    this.latest.meta = version;
  }
}
