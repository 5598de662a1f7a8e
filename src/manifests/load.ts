import { readFileSync, statSync } from "node:fs";
import { lstat, realpath } from "node:fs/promises";
import { basename } from "node:path";
import { ConfigError } from "../errors.js";
import type { Manifest } from "./manifest.js";
import { DEFAULT_PARSE_LIMITS, type ParseLimits, parseManifestFile } from "./parse.js";
import { type Problem, sortProblems } from "./problem.js";
import { checkReferences } from "./references.js";
import { type FoundFile, walkManifests } from "./walk.js";

export type ManifestSet = {
  /** The real folder every file of this set was read from (a symlinked root resolved once). */
  root: string;
  /** The link target's name when the folder given is a symlink (git-sync's revision). */
  revision?: string;
  /** The manifests that are valid and can be acted on, in file order. */
  manifests: Manifest[];
  /** Every problem found, sorted by file, line and column. */
  problems: Problem[];
  /**
   * True when the folder changed while it was read (a file or folder vanished, or the root link now
   * points elsewhere): the set may mix two revisions, so the caller should read it again.
   */
  superseded: boolean;
};

export type LoadOptions = {
  /** Files larger than this are refused unread; default 1 MiB (a manifest is a few KiB). */
  maxFileBytes?: number;
  limits?: ParseLimits;
};

export const DEFAULT_MAX_FILE_BYTES = 1024 * 1024;

// Files read between two turns of the event loop.
const BATCH = 200;

/**
 * Reads and validates every manifest under `dir`. Never stops at the first problem: each file and
 * each document is checked on its own and all problems are returned. Throws ConfigError only when
 * `dir` itself cannot be read.
 */
export async function loadManifests(dir: string, options: LoadOptions = {}): Promise<ManifestSet> {
  const { root, revision, isLink } = await resolveRoot(dir);
  const walk = await walkManifests(root);
  const problems = [...walk.problems];
  let superseded = walk.vanished;
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const limits = options.limits ?? DEFAULT_PARSE_LIMITS;

  const perFile: Manifest[][] = [];
  for (let start = 0; start < walk.files.length; start += BATCH) {
    // Small files are read faster synchronously than through the thread pool; between batches the
    // event loop runs, so the daemon still answers /healthz during a large pass.
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    for (const found of walk.files.slice(start, start + BATCH)) {
      const text = readText(found, maxFileBytes, problems);
      if (text === VANISHED) superseded = true;
      if (text === undefined || text === VANISHED) continue;
      const parsed = parseManifestFile(found.file, text, limits);
      perFile.push(parsed.manifests);
      problems.push(...parsed.problems);
    }
  }

  const checked = checkReferences(perFile.flat());
  problems.push(...checked.problems);
  // git-sync swaps the link atomically; if it moved during the pass, this set is already old.
  if (isLink && (await realpath(dir).catch(() => undefined)) !== root) superseded = true;
  return { root, revision, manifests: checked.manifests, problems: sortProblems(problems), superseded };
}

async function resolveRoot(dir: string): Promise<{ root: string; revision?: string; isLink: boolean }> {
  try {
    const isLink = (await lstat(dir)).isSymbolicLink();
    const root = await realpath(dir);
    if (!(await lstat(root)).isDirectory()) throw new ConfigError(`manifests folder ${dir} is not a folder`);
    return isLink ? { root, revision: basename(root), isLink } : { root, isLink };
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      throw new ConfigError(`manifests folder ${dir} does not exist`, { cause: error });
    }
    throw new ConfigError(
      `manifests folder ${dir} cannot be read: ${(error as NodeJS.ErrnoException).code}`,
      {
        cause: error,
      },
    );
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

const VANISHED = Symbol("vanished");

/** The file's text; undefined when it is refused (with a problem); VANISHED when it is gone. */
function readText(
  found: FoundFile,
  maxFileBytes: number,
  problems: Problem[],
): string | undefined | typeof VANISHED {
  const refuse = (message: string) => {
    problems.push({ file: found.file, line: 1, col: 1, message });
    return undefined;
  };
  let bytes: Buffer;
  try {
    const { size } = statSync(found.path);
    if (size > maxFileBytes)
      return refuse(`file is ${size} bytes, over the ${maxFileBytes}-byte limit: not read`);
    bytes = readFileSync(found.path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return VANISHED;
    return refuse(`cannot read file: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  // The file may have grown since it was measured.
  if (bytes.length > maxFileBytes) {
    return refuse(`file is ${bytes.length} bytes, over the ${maxFileBytes}-byte limit: not read`);
  }
  if (bytes.includes(0)) return refuse("binary file (it holds NUL bytes): not YAML text");
  try {
    return utf8.decode(bytes);
  } catch {
    return refuse("binary file (not UTF-8 text): not YAML text");
  }
}
