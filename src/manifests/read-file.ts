import { closeSync, constants, fstatSync, openSync, readSync, type Stats, statSync } from "node:fs";
import { errnoOf } from "../errors.js";
import type { Manifest, ParsedInvalid, ParsedManifest } from "./manifest.js";
import { type ParseLimits, parseManifestFile } from "./parse.js";
import type { Problem } from "./problem.js";
import type { FoundFile } from "./walk.js";

export type ReadOptions = { maxFileBytes: number; limits: ParseLimits; cache?: ParseCache };

/**
 * What the files of the last read parsed to, by file name relative to the root (a git-sync revision
 * swap changes the root, not the names): a file that is still the same file (device and inode) with the
 * same size and times of change is not read again, and one whose text is unchanged is not parsed again.
 * (A write always moves the time of change, which no tool can set back.) Each read keeps only the
 * files it saw. Safe because nothing downstream changes a parse result in place (withPositions makes
 * new manifest objects; specs are cloned where they are resolved).
 */
export type ParseCache = {
  files: Map<string, { text: string; parsed: ReturnType<typeof parseManifestFile>; stamp?: Stamp }>;
  /** The manifests with positions made of a file's parsed manifests (load.ts), reused with them. */
  positioned: WeakMap<readonly ParsedManifest[], Manifest[]>;
};

/** An empty ParseCache, for a process that reads the same folder pass after pass (the daemon). */
export function createParseCache(): ParseCache {
  return { files: new Map(), positioned: new WeakMap() };
}

/**
 * What reading one file gave: its text (kept for positions), its valid manifests, its invalid
 * documents and its problems.
 */
export type FileOutcome = {
  file: string;
  text?: string;
  manifests: ParsedManifest[];
  invalid: ParsedInvalid[];
  problems: Problem[];
  /** The file was listed but is gone: the folder changed under the pass. */
  vanished?: boolean;
};

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Which file, how large, when it last changed, and when it was read. */
type Stamp = { dev: number; ino: number; size: number; mtimeMs: number; ctimeMs: number; readAt: number };

/**
 * A file whose last change is this close to its read may change again without its times moving, on a
 * file system that keeps them to the second (or two): it is read again until its change is older.
 */
const RACY_MS = 3000;

const stampOf = ({ dev, ino, size, mtimeMs, ctimeMs }: Stats): Stamp => ({
  dev,
  ino,
  size,
  mtimeMs,
  ctimeMs,
  readAt: Date.now(),
});

/** Whether `now` shows the very file, unchanged, that `stamp` was read from. */
const unchanged = (stamp: Stamp | undefined, now: Stats | undefined): boolean =>
  !!stamp &&
  !!now &&
  now.isFile() &&
  Math.max(stamp.mtimeMs, stamp.ctimeMs) < stamp.readAt - RACY_MS &&
  stamp.ino === now.ino &&
  stamp.dev === now.dev &&
  stamp.size === now.size &&
  stamp.mtimeMs === now.mtimeMs &&
  stamp.ctimeMs === now.ctimeMs;

/** The file's stats now; undefined when they cannot be had (the read then says why). */
function statNow(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/**
 * The file's bytes and its stamp as they were before the read, or its size when over `maxBytes` (then
 * nothing is read). Measured on the open descriptor: one syscall fewer than stat then read.
 */
function readBounded(
  path: string,
  maxBytes: number,
): { bytes: Buffer; stamp: Stamp } | { tooBig: number } | { notAFile: true } {
  // Non-blocking: a file swapped for a FIFO after the walk must not block the open.
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return { notAFile: true };
    const { size } = stats;
    if (size > maxBytes) return { tooBig: size };
    const bytes = Buffer.allocUnsafe(size);
    let read = 0;
    while (read < size) {
      const n = readSync(fd, bytes, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    return { bytes: bytes.subarray(0, read), stamp: stampOf(stats) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads and parses one file. Synchronous on purpose: for small files it is several times faster than
 * going through the thread pool, and callers batch files and yield between batches.
 */
export function readManifestFile(
  found: FoundFile,
  options: ReadOptions,
  seen?: ParseCache["files"],
): FileOutcome {
  const refuse = (message: string): FileOutcome => ({
    file: found.file,
    manifests: [],
    invalid: [],
    problems: [{ file: found.file, line: 1, col: 1, message }],
  });
  const tooBig = (size: number) =>
    refuse(`file is ${size} bytes, over the ${options.maxFileBytes}-byte limit: not read`);
  const cached = options.cache?.files.get(found.file);
  // One stat instead of open, read and close: at 10,000 files, most of an unchanged pass's reading.
  if (cached && unchanged(cached.stamp, statNow(found.path))) {
    seen?.set(found.file, cached);
    return { file: found.file, text: cached.text, ...cached.parsed };
  }
  let bytes: Buffer;
  let stamp: Stamp;
  try {
    const read = readBounded(found.path, options.maxFileBytes);
    if ("notAFile" in read) return refuse("not a regular file: not read");
    if ("tooBig" in read) return tooBig(read.tooBig);
    ({ bytes, stamp } = read);
  } catch (error) {
    const code = errnoOf(error);
    if (code === "ENOENT")
      return { file: found.file, manifests: [], invalid: [], problems: [], vanished: true };
    return refuse(`cannot read file: ${code ?? String(error)}`);
  }
  if (bytes.includes(0)) return refuse("binary file (it holds NUL bytes): not YAML text");
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return refuse("binary file (not UTF-8 text): not YAML text");
  }
  const parsed = cached?.text === text ? cached.parsed : parseManifestFile(found.file, text, options.limits);
  seen?.set(found.file, { text, parsed, stamp });
  return { file: found.file, text, ...parsed };
}

// Files read between two turns of the event loop.
const BATCH = 200;

/**
 * Reads and parses `files`, in order, on this thread. (Worker threads were measured: loading the
 * schemas in each worker and copying results back cost more than they saved, even at 10,000 files.)
 * Between batches the event loop runs, so the daemon still answers /healthz during a large pass.
 */
export async function readManifestFiles(
  files: readonly FoundFile[],
  options: ReadOptions,
): Promise<FileOutcome[]> {
  const outcomes: FileOutcome[] = [];
  const seen: ParseCache["files"] | undefined = options.cache ? new Map() : undefined;
  for (let start = 0; start < files.length; start += BATCH) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    for (const found of files.slice(start, start + BATCH))
      outcomes.push(readManifestFile(found, options, seen));
  }
  if (options.cache && seen) options.cache.files = seen;
  return outcomes;
}
