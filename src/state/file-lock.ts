import { randomBytes } from "node:crypto";
import { link, open, readdir, readFile, rename, stat, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { StateError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";

/**
 * A lock file, so that two driftless processes never write one state folder at once. The holder
 * writes who it is into the file (created exclusively) and touches it every `refreshMs`. A lock is
 * stale, and is taken over, when its holder is gone: a dead process on this host, an earlier process
 * with our own pid (a container restarted with pid 1 again), or, on another host (a new pod on the same
 * volume), when it has not been touched for `staleMs`. A holder that stalls longer than that (SIGSTOP,
 * a frozen VM) may find its lock taken over when it resumes: check() says so, and the store asks it
 * before every write.
 *
 * How long ago a lock was touched is read on the file system's clock, never by comparing two hosts'
 * clocks: the holder touches by rewriting its lock in place, so the file system stamps the time, and
 * the judge compares that stamp with the one the same file system gives a file it has just written
 * itself. On a shared file system (NFS, SMB, CephFS) both stamps come from the server's clock; on a
 * volume one node mounts at a time, two live holders on different nodes cannot exist. A host whose
 * clock is wrong can neither make a live lock look old nor its own lock look fresh.
 */

export type LockHolder = {
  pid: number;
  hostname: string;
  /** When the lock was taken. */
  startedAt: string;
  /** When the holding process started (epoch ms): tells this process from an earlier one of its pid. */
  processStartedAt: number;
  token: string;
};

export type FileLock = {
  readonly holder: LockHolder;
  /**
   * Confirms the lock file still holds our token and touches it. Throws StateError when it was taken
   * over (after this process stalled past the stale period), removed, or cannot be read or touched.
   */
  check(): Promise<void>;
  release(): Promise<void>;
};

export type FileLockOptions = {
  logger?: Logger;
  /** Default 60 s. */
  staleMs?: number;
  /** Default 10 s. */
  refreshMs?: number;
};

export const LOCK_STALE_MS = 60_000;
export const LOCK_REFRESH_MS = 10_000;
/**
 * A lock file that names no holder (left by a process killed while creating it in place, or emptied
 * by a full disk) is taken over once it is this old; any later write of its creator's is refused by
 * the token check.
 */
export const UNNAMED_STALE_MS = 5_000;

/** Takes the lock at `path`, or throws StateError naming its holder. */
export async function acquireFileLock(path: string, options: FileLockOptions = {}): Promise<FileLock> {
  const staleMs = options.staleMs ?? LOCK_STALE_MS;
  const refreshMs = options.refreshMs ?? LOCK_REFRESH_MS;
  const holder: LockHolder = {
    pid: process.pid,
    hostname: hostname(),
    startedAt: new Date().toISOString(),
    processStartedAt: processStartedAt(),
    token: randomBytes(8).toString("hex"),
  };

  // A few rounds: a stale lock moved aside may race with another process doing the same.
  for (let round = 0; round < 5; round++) {
    const { created, now } = await create(path, holder);
    if (created) {
      await sweep(path, staleMs, now);
      return held(path, holder, { staleMs, refreshMs, logger: options.logger });
    }
    const existing = await inspect(path, now);
    if (!existing) continue;
    if (!isStale(existing, staleMs)) throw lockedBy(path, existing.holder);
    options.logger?.warn({ lock: path, holder: existing.holder }, "taking over a stale state lock");
    await takeAway(path, existing.text);
  }
  throw new StateError(`cannot take the state lock ${path}: other processes keep taking it`);
}

/**
 * Creates the lock file with its holder's name already in it: written to a file of our own, then
 * linked to `path` (a link, like an exclusive create, fails when `path` exists). A file created first
 * and written after would be seen empty, and a holder killed in between would leave a lock that names
 * nobody. A process killed before the link leaves its own file, which later holders sweep away. On a
 * file system without hard links (some SMB shares), the lock is created in place and written after.
 * Also returns the file system's time now (epoch ms): the time it stamped on the file just written.
 */
async function create(path: string, holder: LockHolder): Promise<{ created: boolean; now: number }> {
  const text = JSON.stringify(holder);
  const own = `${path}.${holder.token}.new`;
  let now = Date.now();
  try {
    await writeNew(own, text);
    now = (await stat(own)).mtimeMs;
    await link(own, path).catch((error: NodeJS.ErrnoException) => {
      if (!NO_HARD_LINKS.has(error.code ?? "")) throw error;
      return writeNew(path, text);
    });
    return { created: true, now };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return { created: false, now };
    throw new StateError(`cannot create the state lock ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  } finally {
    await unlink(own).catch(() => {});
  }
}

/** What link() answers on a file system that has no hard links. */
const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"]);

/** Creates `file`, which must not exist, with `text`, flushed to the disk. */
async function writeNew(file: string, text: string): Promise<void> {
  const handle = await open(file, "wx", 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Removes what killed processes left beside the lock: their unlinked `.new` and moved `.stale` files,
 * once older than `staleMs` by the file system's clock (`now`).
 */
async function sweep(path: string, staleMs: number, now: number): Promise<void> {
  const dir = dirname(path);
  const prefix = `${basename(path)}.`;
  const names = await readdir(dir).catch(() => []);
  for (const name of names) {
    if (!name.startsWith(prefix) || !(name.endsWith(".new") || name.endsWith(".stale"))) continue;
    const file = join(dir, name);
    const info = await stat(file).catch(() => undefined);
    if (info && now - info.mtimeMs > staleMs) await unlink(file).catch(() => {});
  }
}

type Existing = { text: string; holder?: LockHolder; ageMs: number };

/**
 * The lock at `path`, and how long ago it was touched by the file system's clock (`now`). Read and
 * timed through one open file: opening revalidates what a network file system's client has cached.
 */
async function inspect(path: string, now: number): Promise<Existing | undefined> {
  try {
    const handle = await open(path, "r");
    try {
      const info = await handle.stat();
      const text = await handle.readFile("utf8");
      return { text, holder: parseHolder(text), ageMs: now - info.mtimeMs };
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new StateError(`cannot read the state lock ${path}: ${(error as Error).message}`, { cause: error });
  }
}

function isStale({ holder, ageMs }: Existing, staleMs: number): boolean {
  if (ageMs > staleMs) return true;
  // A holder names itself as it creates the lock: an unnamed one is what a killed process left.
  if (!holder) return ageMs > Math.min(staleMs, UNNAMED_STALE_MS);
  if (holder.hostname !== hostname()) return false;
  if (holder.pid === process.pid) return !isThisProcess(holder);
  return !isAlive(holder.pid);
}

function processStartedAt(): number {
  return Math.round(Date.now() - process.uptime() * 1000);
}

/** Our pid on our host is this process, or an earlier one (a container restarted with pid 1 again). */
function isThisProcess(holder: LockHolder): boolean {
  return (
    typeof holder.processStartedAt === "number" &&
    Math.abs(holder.processStartedAt - processStartedAt()) < 2000
  );
}

/**
 * Moves a stale lock out of the way. The rename is atomic, so of several processes only one moves a
 * given file; if what it moved is not the stale lock it judged (another process took over first), it
 * is put back.
 */
async function takeAway(path: string, staleText: string): Promise<void> {
  const aside = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.stale`;
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw new StateError(`cannot remove the stale state lock ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if ((await readFile(aside, "utf8")) !== staleText) await link(aside, path).catch(() => {});
  await unlink(aside);
}

function held(path: string, holder: LockHolder, options: HeldOptions): FileLock {
  const { staleMs } = options;
  /** Monotonic time of the last touch that went through: how long a stall lasted, when one ends. */
  let touchedAt = performance.now();
  let released = false;
  let timer: NodeJS.Timeout | undefined;

  /**
   * Confirms the lock still holds our token and touches it, through one open file: a lock taken over
   * is a new file (moved aside, then created), so a touch through this one never lands on another
   * holder's lock. The touch rewrites the same bytes in place, so that the file system, not this
   * host's clock, stamps the time.
   */
  const check = async (): Promise<void> => {
    if (released) throw new StateError(`the state lock ${path} was released: not writing`);
    const handle = await openHeld();
    try {
      const text = await handle.readFile("utf8");
      const current = parseHolder(text);
      if (current?.token !== holder.token) {
        // Lost for good: this process never takes the lock back, so the heartbeat has nothing left to do.
        clearInterval(timer);
        throw lost(path, current, performance.now() - touchedAt);
      }
      await handle.write(text, 0).catch((error: unknown) => {
        throw cannotTouch(error);
      });
    } finally {
      await handle.close();
    }
    touchedAt = performance.now();
  };

  async function openHeld() {
    try {
      return await open(path, "r+");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw cannotTouch(error);
      clearInterval(timer);
      throw lost(path, undefined, performance.now() - touchedAt);
    }
  }

  const cannotTouch = (error: unknown) => cannotTouchError(path, staleMs, error);
  timer = heartbeat(check, path, options);

  return {
    holder,
    check,
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      const current = await readHolder(path).catch(() => undefined);
      if (current?.token === holder.token) await unlink(path).catch(() => {});
    },
  };
}

type HeldOptions = { staleMs: number; refreshMs: number; logger: Logger | undefined };

/** Runs `check` every `refreshMs`, logging each distinct failure once; the timer is unref'd. */
function heartbeat(
  check: () => Promise<void>,
  path: string,
  { refreshMs, logger }: HeldOptions,
): NodeJS.Timeout {
  let lastProblem: string | undefined;
  const timer = setInterval(() => {
    check().then(
      () => {
        lastProblem = undefined;
      },
      (error: Error) => {
        // Said once per distinct problem, not at every heartbeat; check() raises it again at each write.
        if (error.message !== lastProblem)
          logger?.error({ lock: path, err: error.message }, "the state lock heartbeat failed");
        lastProblem = error.message;
      },
    );
  }, refreshMs);
  // The heartbeat alone must not keep a finished CLI alive.
  timer.unref();
  return timer;
}

function cannotTouchError(path: string, staleMs: number, error: unknown): StateError {
  return new StateError(
    `cannot touch the state lock ${path} (${(error as Error).message}): another driftless may take it over once it is ${staleMs / 1000} s old, so this process writes nothing more; check the state folder's file system`,
    { cause: error },
  );
}

/** The holder named in the lock file, undefined when there is none. Throws StateError when unreadable. */
async function readHolder(path: string): Promise<LockHolder | undefined> {
  try {
    return parseHolder(await readFile(path, "utf8"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new StateError(`cannot read the state lock ${path}: ${(error as Error).message}; not writing`, {
      cause: error,
    });
  }
}

/** The lock was taken over while this process was stalled (or removed by hand). */
function lost(path: string, current: LockHolder | undefined, sinceTouchMs: number): StateError {
  const who = current
    ? `process ${current.pid} on ${current.hostname} (since ${current.startedAt}) took it over`
    : "its file is gone";
  return new StateError(
    `this process no longer holds the state lock ${path}: ${who} after this one went ${Math.round(sinceTouchMs / 1000)} s without touching it (a stall past the stale period, or the file was removed); this pass stops and sends nothing more. Stop one of the two driftless processes; restart this one only once the other is gone`,
  );
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (typeof value.pid === "number" && typeof value.hostname === "string") return value as LockHolder;
  } catch {
    // An unreadable lock names no holder (see isStale).
  }
  return undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function lockedBy(path: string, holder: LockHolder | undefined): StateError {
  const who = holder
    ? `process ${holder.pid} on ${holder.hostname} (since ${holder.startedAt})`
    : "a process that left no name in it";
  return new StateError(
    `the state is locked by ${who}: another driftless is using it. Stop that one first, or remove ${path} if you are sure it is gone`,
  );
}
