import { mkdir, readdir, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { StateError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { isTemporaryOf, writeFileAtomic } from "./atomic-write.js";
import { acquireFileLock, type FileLock } from "./file-lock.js";
import { appendDurably, JOURNAL_FILE, journalLine, replayJournal, truncateDurably } from "./journal.js";
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
 * processes never write the folder at once. Once the journal outgrows the snapshot (and 1 MiB), a save
 * compacts: it appends its changes as usual, replaces the snapshot atomically with the whole state,
 * then empties the journal. A crash at any point leaves snapshot + journal = a state that was saved:
 * between the snapshot's replacement and the journal's truncation, replaying the journal over the new
 * snapshot (which already holds every change of it) yields that same snapshot. A save cut short (a
 * full disk, a crash) may leave a torn last line: it is cut off before anything is appended after it
 * (see journal.ts). A state.json written before the journal existed is simply a snapshot with no
 * journal. A read-only store (for `driftless plan` beside a running daemon) takes no lock, creates
 * nothing, and refuses to save.
 *
 * Loads and saves of one store take turns: a load made for a reader (a poll round reading tile ids)
 * never reads the folder while a save of this process writes it, so what it learns of the folder is
 * what the folder holds, and what the next save appends to.
 */

export const STATE_FILE = "state.json";
export const LOCK_FILE = "state.lock";

/** The journal is compacted into the snapshot once it is larger than the snapshot and than this. */
export const MIN_COMPACTION_BYTES = 1024 * 1024;

/** The journal size past which a save compacts: the snapshot's, and at least MIN_COMPACTION_BYTES. */
const compactionBytes = (known: { snapshotBytes: number }) =>
  Math.max(known.snapshotBytes, MIN_COMPACTION_BYTES);

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
  const { logger, readOnly = false } = options;
  const file = join(dir, STATE_FILE);
  let lock: Promise<FileLock> | undefined;
  /** The state of a store that has none saved yet, made once so its salt does not change per load. */
  let fresh: State | undefined;
  let writes: Promise<void> = Promise.resolve();
  let closed = false;
  /** Why the saved state could not be read: saving over it would lose it, so save() refuses. */
  let unreadable: StateError | undefined;

  const locked = (): Promise<FileLock> => {
    if (closed) return Promise.reject(new StateError(`the state store ${dir} is closed`));
    lock ??= (async () => {
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
    })().catch((error) => {
      lock = undefined;
      throw error;
    });
    return lock;
  };

  const journal = join(dir, JOURNAL_FILE);
  /**
   * What the folder holds, as far as this process knows: the base of the next save's journal lines,
   * the bytes of whole lines in the journal (what a torn tail is cut back to), and, while the files
   * still have the `signature` they had before this process last read or wrote them, what the next load
   * returns without reading them again (the same frozen records: a load then costs no parse).
   */
  let onDisk:
    | {
        records: Map<string, KnownRecord>;
        top: string;
        snapshotBytes: number;
        journalBytes: number;
        signature?: string;
      }
    | undefined;
  /** The journal holds lines an earlier driftless wrote after a torn one: the next save compacts. */
  let mustCompact = false;

  /** Runs `step` after every load and save asked for before it, and before any asked for after. */
  function inTurn<T>(step: () => Promise<T>): Promise<T> {
    const done = writes.then(step);
    writes = done.then(
      () => {},
      () => {},
    );
    return done;
  }

  async function load(): Promise<State> {
    // Every pass starts with a load: one that stalled past the stale period learns it here.
    if (!readOnly) await (await locked()).check();
    return inTurn(readState);
  }

  async function readState(): Promise<State> {
    // Taken before the files are read: if they change meanwhile, the next load reads them again.
    const signature = await signatureOf(file, journal);
    // The lock holder is the only writer: unless the files were touched by hand, it knows what they hold.
    if (onDisk?.signature && onDisk.signature === signature) return stateOf(onDisk);
    let read: Awaited<ReturnType<typeof readFolder>>;
    try {
      read = await readFolder(file, journal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        // No state (any more): an unreadable one was moved aside, as its error advises.
        unreadable = undefined;
        fresh ??= newState();
        onDisk = undefined;
        return structuredClone(fresh);
      }
      unreadable = new StateError(`cannot read the state ${file}: ${(error as Error).message}`, {
        cause: error,
      });
      throw unreadable;
    }
    try {
      const state = parseState(read.snapshot, file);
      const { bytes: journalBytes, torn, repaired } = replayJournal(state, read.journal, journal);
      unreadable = undefined;
      // A read-only store never saves: it needs no texts to compare a save against.
      if (readOnly) return state;
      if (torn) logger?.warn({ file: journal }, "ignoring the last journal line, cut short by a crash");
      if (repaired.length > 0) {
        logger?.warn(
          { file: journal, lines: repaired },
          "journal lines written after a torn one by an earlier driftless: each torn save ignored, the next save rewrites the state",
        );
        mustCompact = true;
      }
      onDisk = {
        records: knownRecords(state),
        top: topLevelText(state),
        snapshotBytes: Buffer.byteLength(read.snapshot),
        journalBytes,
        signature,
      };
      return state;
    } catch (error) {
      unreadable = error as StateError;
      throw error;
    }
  }

  async function save(state: State): Promise<void> {
    if (readOnly) throw new StateError(`the state store ${dir} was opened read-only: not saving`);
    if (unreadable)
      throw new StateError(`not saving over a state that could not be read: ${unreadable.message}`);
    const held = await locked();
    const texts = { records: knownRecords(state, onDisk?.records), top: topLevelText(state) };
    // Saves of one process land in the order they were asked for.
    await inTurn(async () => {
      await held.check();
      await persist(state, texts);
    });
  }

  /**
   * Appends what changed since the last load or save, then compacts when the journal has grown. Once
   * the line is appended and flushed the save has landed: a compaction that fails after it is left to
   * a later save, not reported as a failed save.
   */
  async function persist(
    state: State,
    texts: { records: Map<string, KnownRecord>; top: string },
  ): Promise<void> {
    const base = onDisk;
    const lines = base ? journalLine(base, texts) : "";
    // Nothing known of the folder, or a journal cut by someone else: the whole state is the save.
    if (!base || (lines && !(await cutTornTail(base.journalBytes)))) return compact(state, texts);
    if (lines) await written(journal, appendDurably(journal, lines));
    const journalBytes = base.journalBytes + Buffer.byteLength(lines);
    const signature = lines ? await signatureOf(file, journal) : base.signature;
    onDisk = { ...texts, snapshotBytes: base.snapshotBytes, journalBytes, signature };
    if (!mustCompact && journalBytes <= compactionBytes(base)) return;
    await compact(state, texts).catch((error: unknown) => {
      logger?.warn(
        { err: error, file },
        "could not fold the journal into the state: a later save tries again",
      );
    });
  }

  /** Writes the whole state as the snapshot, then empties the journal (see the top of this file). */
  async function compact(
    state: State,
    texts: { records: Map<string, KnownRecord>; top: string },
  ): Promise<void> {
    const snapshot = serializeState(state);
    await written(file, writeFileAtomic(file, snapshot));
    await written(
      journal,
      truncateDurably(journal, 0).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }),
    );
    mustCompact = false;
    onDisk = {
      ...texts,
      snapshotBytes: Buffer.byteLength(snapshot),
      journalBytes: 0,
      signature: await signatureOf(file, journal),
    };
  }

  /**
   * Cuts the journal back to its `bytes` of whole lines when it is longer (an append cut short by a
   * full disk or a crash left a torn line), so that the next line starts on a line of its own. Returns
   * false when the journal is shorter than that (cut by someone else): the save then writes a snapshot.
   */
  async function cutTornTail(bytes: number): Promise<boolean> {
    const size = await stat(journal).then(
      (found) => found.size,
      (error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return 0;
        throw new StateError(`cannot write the state ${journal}: ${error.message}`, { cause: error });
      },
    );
    if (size < bytes) {
      logger?.warn(
        { file: journal, bytes, size },
        "the journal is shorter than this process wrote it: saving the whole state",
      );
      return false;
    }
    if (size === bytes) return true;
    logger?.warn(
      { file: journal, bytes: size - bytes },
      "cutting off a torn last journal line before appending",
    );
    await written(journal, truncateDurably(journal, bytes));
    return true;
  }

  async function ensureWritable(): Promise<void> {
    if (readOnly) throw new StateError(`the state store ${dir} was opened read-only: not writing`);
    await (await locked()).check();
  }

  async function close(): Promise<void> {
    closed = true;
    await writes;
    const held = await lock?.catch(() => undefined);
    lock = undefined;
    await compactOnClose(held);
    await held?.release();
  }

  /**
   * Folds the journal into the snapshot before the lock is released, so that after a clean stop
   * state.json alone holds the state (what an operator reads, backs up or edits by hand). A failure
   * only leaves the journal in place, which the next load replays.
   */
  async function compactOnClose(held: FileLock | undefined): Promise<void> {
    if (!held || !onDisk || onDisk.journalBytes === 0 || unreadable) return;
    try {
      await held.check();
      await writeFileAtomic(file, serializeState(stateOf(onDisk)));
      await truncateDurably(journal, 0);
    } catch (error) {
      logger?.warn(
        { err: error, file: journal },
        "could not fold the journal into the state on close: left for the next load",
      );
    }
  }

  return { file, load, save, ensureWritable, close };
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
