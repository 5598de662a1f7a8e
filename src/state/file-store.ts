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
 * snapshot (which already holds every change of it) yields that same snapshot. A state.json written
 * before the journal existed is simply a snapshot with no journal. A read-only store (for `driftless
 * plan` beside a running daemon) takes no lock, creates nothing, and refuses to save.
 */

export const STATE_FILE = "state.json";
export const LOCK_FILE = "state.lock";

/** The journal is compacted into the snapshot once it is larger than the snapshot and than this. */
export const MIN_COMPACTION_BYTES = 1024 * 1024;

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
   * and, while the files still have the `signature` this process last saw, what the next load returns
   * without reading them again (the same frozen records: a load then costs no parse).
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
  /** Set when an append may have left a torn line: the next save writes a snapshot instead. */
  let mustCompact = false;

  async function load(): Promise<State> {
    // Every pass starts with a load: one that stalled past the stale period learns it here.
    if (!readOnly) await (await locked()).check();
    // A load of this process waits for its own saves: it never reads the folder mid-compaction.
    await writes;
    // The lock holder is the only writer: unless the files were touched by hand, it knows what they hold.
    if (onDisk?.signature && onDisk.signature === (await signatureOf(file, journal))) {
      return stateOf(onDisk);
    }
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
      const { bytes: journalBytes, torn } = replayJournal(state, read.journal, journal);
      unreadable = undefined;
      if (torn && !readOnly) await dropTornLine(journalBytes);
      // A read-only store never saves: it needs no texts to compare a save against.
      if (readOnly) return state;
      onDisk = {
        records: knownRecords(state),
        top: topLevelText(state),
        snapshotBytes: Buffer.byteLength(read.snapshot),
        journalBytes,
        signature: await signatureOf(file, journal),
      };
      return state;
    } catch (error) {
      unreadable = error as StateError;
      throw error;
    }
  }

  /** Cuts a torn last line (a crash mid-append) off the journal, so the next append starts a line. */
  async function dropTornLine(bytes: number): Promise<void> {
    logger?.warn({ file: journal }, "ignoring the last journal line, cut short by a crash");
    await truncateDurably(journal, bytes).catch((error: unknown) => {
      mustCompact = true;
      logger?.warn({ file: journal, err: error }, "cannot cut the torn journal line: the next save compacts");
    });
  }

  async function save(state: State): Promise<void> {
    if (readOnly) throw new StateError(`the state store ${dir} was opened read-only: not saving`);
    if (unreadable)
      throw new StateError(`not saving over a state that could not be read: ${unreadable.message}`);
    const held = await locked();
    const texts = { records: knownRecords(state, onDisk?.records), top: topLevelText(state) };
    // Saves of one process land in the order they were asked for.
    const write = writes.then(async () => {
      await held.check();
      try {
        await persist(state, texts);
      } catch (error) {
        // The journal may end in a torn line now: the next save starts over with a snapshot.
        mustCompact = true;
        throw new StateError(`cannot write the state ${file}: ${(error as Error).message}`, { cause: error });
      }
    });
    writes = write.catch(() => {});
    await write;
  }

  /** Appends what changed since the last load or save, compacting when the journal has grown. */
  async function persist(
    state: State,
    texts: { records: Map<string, KnownRecord>; top: string },
  ): Promise<void> {
    const lines = onDisk ? journalLine(onDisk, texts) : "";
    const journalBytes = (onDisk?.journalBytes ?? 0) + Buffer.byteLength(lines);
    // Appended even when compacting: snapshot + journal stays the saved state at every step.
    if (onDisk && lines) await appendDurably(journal, lines);
    if (onDisk && !mustCompact && journalBytes <= Math.max(onDisk.snapshotBytes, MIN_COMPACTION_BYTES)) {
      const signature = lines ? await signatureOf(file, journal) : onDisk.signature;
      onDisk = { ...texts, snapshotBytes: onDisk.snapshotBytes, journalBytes, signature };
      return;
    }
    const snapshot = serializeState(state);
    await writeFileAtomic(file, snapshot);
    await truncateDurably(journal, 0).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    });
    mustCompact = false;
    onDisk = {
      ...texts,
      snapshotBytes: Buffer.byteLength(snapshot),
      journalBytes: 0,
      signature: await signatureOf(file, journal),
    };
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
