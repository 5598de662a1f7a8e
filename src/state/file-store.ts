import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { StateError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { isTemporaryOf, writeFileAtomic } from "./atomic-write.js";
import { acquireFileLock, type FileLock } from "./file-lock.js";
import { newState, parseState, serializeState } from "./state-format.js";
import type { State, StateStore } from "./store.js";

/**
 * The state store in a folder (DRIFTLESS_STATE_DIR): `state.json`, replaced atomically on every save,
 * and `state.lock`, held from the first load or save until close, so that two processes never write
 * the folder at once. A read-only store (for `driftless plan` beside a running daemon) takes no lock,
 * creates nothing, and refuses to save.
 */

export const STATE_FILE = "state.json";
export const LOCK_FILE = "state.lock";

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

  async function load(): Promise<State> {
    // Every pass starts with a load: one that stalled past the stale period learns it here.
    if (!readOnly) await (await locked()).check();
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        // No state (any more): an unreadable one was moved aside, as its error advises.
        unreadable = undefined;
        fresh ??= newState();
        return structuredClone(fresh);
      }
      unreadable = new StateError(`cannot read the state ${file}: ${(error as Error).message}`, {
        cause: error,
      });
      throw unreadable;
    }
    try {
      const state = parseState(text, file);
      unreadable = undefined;
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
    const data = serializeState(state);
    // Saves of one process land in the order they were asked for.
    const write = writes.then(async () => {
      await held.check();
      try {
        await writeFileAtomic(file, data);
      } catch (error) {
        throw new StateError(`cannot write the state ${file}: ${(error as Error).message}`, { cause: error });
      }
    });
    writes = write.catch(() => {});
    await write;
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
    await held?.release();
  }

  return { file, load, save, ensureWritable, close };
}

/** Temporary files of writes that a killed process never finished: never the state, safe to remove. */
async function removeLeftovers(dir: string, logger?: Logger): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names.filter((entry) => isTemporaryOf(STATE_FILE, entry))) {
    logger?.info({ file: join(dir, name) }, "removing an unfinished state write");
    await rm(join(dir, name), { force: true });
  }
}
