import { mkdir, readdir, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { StateError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { compactsAfterSave, foldsOnClose } from "./compaction.js";
import { appendDurably, isTemporaryOf, truncateDurably, writeFileAtomic } from "./durable-write.js";
import { acquireFileLock, type FileLock } from "./file-lock.js";
import { JOURNAL_FILE, journalLine, replayJournal, tailAction } from "./journal.js";
import {
  type KnownRecord,
  knownRecords,
  newState,
  parseState,
  serializeState,
  topLevelText,
} from "./state-format.js";
import type { State, StateStore } from "./store.js";

/**
 * The state store in a folder (DRIFTLESS_STATE_DIR): `state.json`, a snapshot of the whole state;
 * `state.journal`, the changes saved since (see journal.ts), so that a save writes and flushes only the
 * records it changed; and `state.lock`, held from the first load or save until close, so that two
 * processes never write the folder at once. Once the journal outgrows the snapshot (and 1 MiB; see
 * compaction.ts), a save compacts: it appends its changes as usual, replaces the snapshot atomically with the whole state,
 * then empties the journal. A crash at any point leaves snapshot + journal = a state that was saved:
 * between the snapshot's replacement and the journal's truncation, replaying the journal over the new
 * snapshot (which already holds every change of it) yields that same snapshot. A save cut short (a
 * full disk, a crash) may leave a torn last line: it is cut off before anything is appended after it
 * (see journal.ts). A state.json written before the journal existed is simply a snapshot with no
 * journal. A read-only store (for `driftless plan` beside a running daemon) takes no lock, creates
 * nothing, and refuses to save.
 *
 * Loads and saves of one store take turns: a load never reads the folder while a save of this process
 * writes it, so what it learns of the folder is what the folder holds, and what the next save appends
 * to.
 */

export const STATE_FILE = "state.json";
export const LOCK_FILE = "state.lock";

/** `writing`, with a failure turned into a StateError naming `path` and the system's reason. */
async function written(path: string, writing: Promise<void>): Promise<void> {
  try {
    await writing;
  } catch (error) {
    if (error instanceof StateError) throw error;
    throw new StateError(`cannot write the state ${path}: ${(error as Error).message}`, { cause: error });
  }
}

export type FileStoreOptions = {
  logger?: Logger;
  /** Open without the lock; save() throws StateError. Default false. */
  readOnly?: boolean;
  /** A lock from another host untouched this long is taken over; default 60 s. */
  lockStaleMs?: number;
  /** How often the holder touches its lock; default 10 s. */
  lockRefreshMs?: number;
};

export type FileStore = StateStore & { readonly file: string };

/**
 * The store of `dir` (created on the first load or save unless read-only). load() and save() throw
 * StateError when the folder is locked by another live process, when the state is unreadable or
 * corrupt (it is never replaced silently), or when its format version is not this driftless's.
 * load(), save() and ensureWritable() re-check the lock at each call, and throw StateError once another
 * process has taken it over.
 */
export function createFileStore(dir: string, options: FileStoreOptions = {}): FileStore {
  const store = new FolderStore(dir, options);
  return {
    file: store.file,
    load: () => store.load(),
    save: (state) => store.save(state),
    ensureWritable: () => store.ensureWritable(),
    close: () => store.close(),
  };
}

/**
 * What the folder holds, as far as this process knows: the base of the next save's journal lines, the
 * bytes of whole lines in the journal (what a torn tail is cut back to), and, while the files still
 * have the `signature` they had when this process last read or wrote them, what the next load returns
 * without reading them again (the same frozen records: a load then costs no parse).
 */
type OnDisk = {
  records: Map<string, KnownRecord>;
  top: string;
  snapshotBytes: number;
  journalBytes: number;
  signature?: string | undefined;
};

/** The records and top-level fields of a state, with their texts, as a save compares them. */
type Texts = { records: Map<string, KnownRecord>; top: string };

/** The shell around the journal's rules and the compaction policy: the lock, the turns, the files. */
class FolderStore {
  readonly file: string;
  private readonly journal: string;
  private readonly logger: Logger | undefined;
  private readonly readOnly: boolean;
  private lock: Promise<FileLock> | undefined;
  /** The state of a store that has none saved yet, made once so its salt does not change per load. */
  private fresh: State | undefined;
  private writes: Promise<void> = Promise.resolve();
  private closed = false;
  /** Why the saved state could not be read: saving over it would lose it, so save() refuses. */
  private unreadable: StateError | undefined;
  private onDisk: OnDisk | undefined;
  /** The journal holds lines an earlier driftless wrote after a torn one: the next save compacts. */
  private mustCompact = false;

  constructor(
    private readonly dir: string,
    private readonly options: FileStoreOptions,
  ) {
    this.file = join(dir, STATE_FILE);
    this.journal = join(dir, JOURNAL_FILE);
    this.logger = options.logger;
    this.readOnly = options.readOnly ?? false;
  }

  async load(): Promise<State> {
    // Every pass starts with a load: one that stalled past the stale period learns it here.
    if (!this.readOnly) await (await this.locked()).check();
    return this.inTurn(() => this.readState());
  }

  async save(state: State): Promise<void> {
    if (this.readOnly) throw new StateError(`the state store ${this.dir} was opened read-only: not saving`);
    if (this.unreadable) {
      throw new StateError(`not saving over a state that could not be read: ${this.unreadable.message}`);
    }
    const held = await this.locked();
    const texts = { records: knownRecords(state, this.onDisk?.records), top: topLevelText(state) };
    // Saves of one process land in the order they were asked for.
    await this.inTurn(async () => {
      await held.check();
      await this.persist(state, texts);
    });
  }

  async ensureWritable(): Promise<void> {
    if (this.readOnly) throw new StateError(`the state store ${this.dir} was opened read-only: not writing`);
    await (await this.locked()).check();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.writes;
    const held = await this.lock?.catch(() => undefined);
    this.lock = undefined;
    await this.compactOnClose(held);
    await held?.release();
  }

  /** The lock, taken (with the folder created) at the first call. Throws StateError. */
  private locked(): Promise<FileLock> {
    if (this.closed) return Promise.reject(new StateError(`the state store ${this.dir} is closed`));
    this.lock ??= this.takeLock().catch((error) => {
      this.lock = undefined;
      throw error;
    });
    return this.lock;
  }

  private async takeLock(): Promise<FileLock> {
    const { dir, logger, options } = this;
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new StateError(`cannot create the state folder ${dir}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const taken = await acquireFileLock(join(dir, LOCK_FILE), {
      logger,
      staleMs: options.lockStaleMs,
      refreshMs: options.lockRefreshMs,
    });
    await removeLeftovers(dir, logger);
    return taken;
  }

  /** Runs `step` after every load and save asked for before it, and before any asked for after. */
  private inTurn<T>(step: () => Promise<T>): Promise<T> {
    const done = this.writes.then(step);
    this.writes = done.then(
      () => {},
      () => {},
    );
    return done;
  }

  private async readState(): Promise<State> {
    // Taken before the files are read: if they change meanwhile, the next load reads them again.
    const signature = await signatureOf(this.file, this.journal);
    // The lock holder is the only writer: unless the files were touched by hand, it knows what they hold.
    if (this.onDisk?.signature && this.onDisk.signature === signature) return stateOf(this.onDisk);
    let read: Awaited<ReturnType<typeof readFolder>>;
    try {
      read = await readFolder(this.file, this.journal);
    } catch (error) {
      return this.noState(error);
    }
    try {
      return this.parsed(read, signature);
    } catch (error) {
      this.unreadable = error as StateError;
      throw error;
    }
  }

  /** A new state when there is none (any more): an unreadable one was moved aside, as its error advises. */
  private noState(error: unknown): State {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
      this.unreadable = new StateError(`cannot read the state ${this.file}: ${(error as Error).message}`, {
        cause: error,
      });
      throw this.unreadable;
    }
    this.unreadable = undefined;
    this.fresh ??= newState();
    this.onDisk = undefined;
    return structuredClone(this.fresh);
  }

  /** The state the snapshot and the journal read at `signature` hold. Throws StateError. */
  private parsed(read: { snapshot: string; journal: string }, signature: string): State {
    const state = parseState(read.snapshot, this.file);
    const { bytes: journalBytes, torn, repaired } = replayJournal(state, read.journal, this.journal);
    this.unreadable = undefined;
    // A read-only store never saves: it needs no texts to compare a save against.
    if (this.readOnly) return state;
    const file = this.journal;
    if (torn) this.logger?.warn({ file }, "ignoring the last journal line, cut short by a crash");
    if (repaired.length > 0) {
      this.logger?.warn(
        { file, lines: repaired },
        "journal lines written after a torn one by an earlier driftless: each torn save ignored, the next save rewrites the state",
      );
      this.mustCompact = true;
    }
    const snapshotBytes = Buffer.byteLength(read.snapshot);
    this.onDisk = {
      records: knownRecords(state),
      top: topLevelText(state),
      snapshotBytes,
      journalBytes,
      signature,
    };
    return state;
  }

  /**
   * Appends what changed since the last load or save, then compacts when the journal has grown. Once
   * the line is appended and flushed the save has landed: a compaction that fails after it is left to
   * a later save, not reported as a failed save.
   */
  private async persist(state: State, texts: Texts): Promise<void> {
    const base = this.onDisk;
    const lines = base ? journalLine(base, texts) : "";
    // Nothing known of the folder, or a journal cut by someone else: the whole state is the save.
    if (!base || (lines && !(await this.readyToAppend(base.journalBytes)))) return this.compact(state, texts);
    if (lines) await written(this.journal, appendDurably(this.journal, lines));
    const journalBytes = base.journalBytes + Buffer.byteLength(lines);
    const signature = lines ? await signatureOf(this.file, this.journal) : base.signature;
    const { snapshotBytes } = base;
    this.onDisk = { ...texts, snapshotBytes, journalBytes, signature };
    if (!compactsAfterSave({ journalBytes, snapshotBytes, mustCompact: this.mustCompact })) return;
    await this.compact(state, texts).catch((error: unknown) => {
      this.logger?.warn(
        { err: error, file: this.file },
        "could not fold the journal into the state: a later save tries again",
      );
    });
  }

  /** Writes the whole state as the snapshot, then empties the journal (see the top of this file). */
  private async compact(state: State, texts: Texts): Promise<void> {
    const snapshot = serializeState(state);
    await written(this.file, writeFileAtomic(this.file, snapshot));
    await written(
      this.journal,
      truncateDurably(this.journal, 0).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }),
    );
    this.mustCompact = false;
    this.onDisk = {
      ...texts,
      snapshotBytes: Buffer.byteLength(snapshot),
      journalBytes: 0,
      signature: await signatureOf(this.file, this.journal),
    };
  }

  /**
   * Makes the journal ready for a line after its `bytes` of whole lines (see tailAction): cuts a torn
   * tail off. Returns false when the journal is shorter than that (cut by someone else): the save then
   * writes a snapshot.
   */
  private async readyToAppend(bytes: number): Promise<boolean> {
    const file = this.journal;
    const size = await stat(file).then(
      (found) => found.size,
      (error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return 0;
        throw new StateError(`cannot write the state ${file}: ${error.message}`, { cause: error });
      },
    );
    const action = tailAction(size, bytes);
    if (action === "append") return true;
    if (action === "rewrite") {
      this.logger?.warn(
        { file, bytes, size },
        "the journal is shorter than this process wrote it: saving the whole state",
      );
      return false;
    }
    this.logger?.warn({ file, bytes: size - bytes }, "cutting off a torn last journal line before appending");
    await written(file, truncateDurably(file, bytes));
    return true;
  }

  /**
   * Folds the journal into the snapshot before the lock is released (see foldsOnClose). A failure only
   * leaves the journal in place, which the next load replays.
   */
  private async compactOnClose(held: FileLock | undefined): Promise<void> {
    const { onDisk } = this;
    if (!held || !onDisk || !foldsOnClose({ ...onDisk, readable: !this.unreadable })) return;
    try {
      await held.check();
      await writeFileAtomic(this.file, serializeState(stateOf(onDisk)));
      await truncateDurably(this.journal, 0);
    } catch (error) {
      this.logger?.warn(
        { err: error, file: this.journal },
        "could not fold the journal into the state on close: left for the next load",
      );
    }
  }
}

/**
 * The State `known` describes: new top-level fields and a new `resources` object each time (callers add,
 * replace and delete records), holding the known records themselves (frozen: callers replace them).
 */
function stateOf(known: { records: ReadonlyMap<string, KnownRecord>; top: string }): State {
  const resources: State["resources"] = {};
  for (const [id, { record }] of known.records) resources[id] = record;
  return { ...JSON.parse(known.top), resources } as State;
}

/**
 * Identity, size and time of change of the snapshot and the journal: when they are what this process
 * left, nobody else wrote them (the lock), so it need not read them again.
 */
async function signatureOf(file: string, journal: string): Promise<string> {
  const of = async (path: string) => {
    const found = await stat(path, { bigint: true }).catch(() => undefined);
    return found ? `${found.ino}:${found.size}:${found.mtimeNs}:${found.ctimeNs}` : "none";
  };
  return `${await of(file)}|${await of(journal)}`;
}

/**
 * The texts of the snapshot and the journal, read as one generation: the journal is read after the
 * snapshot, and the read is retried when the snapshot was replaced meanwhile (a compaction by the
 * writing process, seen by a read-only one), since that journal might then belong to the new snapshot.
 * No snapshot means no state (throws ENOENT): a journal left without its snapshot is not a state.
 */
async function readFolder(file: string, journal: string): Promise<{ snapshot: string; journal: string }> {
  for (let attempt = 1; ; attempt++) {
    const before = await stat(file);
    const snapshot = await readFile(file, "utf8");
    const changes = await readFile(journal, "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return "";
      throw error;
    });
    const after = await stat(file);
    if ((before.ino === after.ino && before.mtimeMs === after.mtimeMs) || attempt >= 5) {
      return { snapshot, journal: changes };
    }
  }
}

/** Temporary files of writes that a killed process never finished: never the state, safe to remove. */
async function removeLeftovers(dir: string, logger?: Logger): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names.filter((entry) => isTemporaryOf(STATE_FILE, entry))) {
    logger?.info({ file: join(dir, name) }, "removing an unfinished state write");
    await rm(join(dir, name), { force: true });
  }
}
