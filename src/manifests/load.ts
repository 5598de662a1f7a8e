import { lstat, realpath } from "node:fs/promises";
import { ConfigError, errnoOf, isConfigError, SupersededError } from "../errors.js";
import type { InvalidDocument, Manifest, ParsedManifest } from "./manifest.js";
import { DEFAULT_PARSE_LIMITS, MAX_MANIFEST_BYTES, type ParsedFile, type ParseLimits } from "./parse.js";
import { locatedInvalid, withPositions } from "./positions.js";
import { type Problem, sortProblems } from "./problem.js";
import { type ParseCache, readManifestFiles } from "./read-file.js";
import { checkReferences, type ReferenceOptions } from "./references.js";
import { revisionAt } from "./revision.js";
import { walkManifests } from "./walk.js";

export type ManifestSet = {
  /** The real folder every file of this set was read from (a symlinked root resolved once). */
  root: string;
  /** The revision read: the name of the folder git-sync's link points to (revision.ts). */
  revision?: string;
  /** The manifests that are valid and can be acted on, in file order. */
  manifests: Manifest[];
  /** Every other document read, as far as it could be read: each has a problem. */
  invalid: InvalidDocument[];
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
  /** Parse results of the previous read, reused for files whose text is unchanged (see ParseCache). */
  cache?: ParseCache;
  /** The manifests driftless already manages, for the checks between manifests (ReferenceOptions). */
  existing?: ReferenceOptions["existing"];
};

export const DEFAULT_MAX_FILE_BYTES = MAX_MANIFEST_BYTES;

/**
 * `loadManifests` until a read is not superseded (a git-sync swap during the read), at most three
 * reads. Throws SupersededError when every read was, so a pass never works from a mix of revisions.
 */
export async function loadRevision(dir: string, options: LoadOptions = {}): Promise<ManifestSet> {
  for (let read = 1; ; read++) {
    const set = await loadManifests(dir, options);
    if (!set.superseded) return set;
    if (read === 3)
      throw new SupersededError(`the manifests in ${dir} changed during ${read} reads in a row`);
  }
}

/**
 * Reads and validates every manifest under `dir`. Never stops at the first problem: each file and
 * each document is checked on its own and all problems are returned. Throws ConfigError only when
 * `dir` itself cannot be read.
 */
export async function loadManifests(dir: string, options: LoadOptions = {}): Promise<ManifestSet> {
  const { root, revision, link } = await resolveRoot(dir);
  const walk = await walkManifests(root);
  const problems = [...walk.problems];
  let superseded = walk.vanished;
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const limits = options.limits ?? DEFAULT_PARSE_LIMITS;

  const outcomes = await readManifestFiles(walk.files, { maxFileBytes, limits, cache: options.cache });
  for (const outcome of outcomes) if (outcome.vanished) superseded = true;
  const checked = checkedDocuments(outcomes, options);
  append(problems, checked.problems);
  // git-sync swaps the link atomically; if it moved during the pass, this set is already old.
  if (link && (await realpath(dir).catch(() => undefined)) !== root) superseded = true;
  return { root, revision, ...checked, problems: sortProblems(problems), superseded };
}

// Appended one by one: push(...list) throws RangeError past ~100,000 items, one hostile file's worth.
function append<T>(to: T[], items: readonly T[]): void {
  for (const item of items) to.push(item);
}

/**
 * The documents of files read and parsed (their text, when it could be read, and its parse), with
 * the checks between manifests done (references.ts): the valid manifests, the invalid documents, and
 * every problem, unsorted. What loadManifests and plan --base's reader of git both make of files.
 */
export function checkedDocuments(
  files: ReadonlyArray<{ file: string; text?: string | undefined } & ParsedFile>,
  options: Pick<LoadOptions, "cache" | "existing"> = {},
): Pick<ManifestSet, "manifests" | "invalid" | "problems"> {
  const manifests: Manifest[] = [];
  const invalid: InvalidDocument[] = [];
  const problems: Problem[] = [];
  for (const { file, text, ...parsed } of files) {
    append(problems, parsed.problems);
    if (text === undefined) continue;
    append(manifests, positionedManifests(file, text, parsed.manifests, options.cache));
    append(invalid, locatedInvalid(file, text, parsed.invalid));
  }
  const checked = checkReferences(manifests, {
    invalid,
    ...(options.existing ? { existing: options.existing } : {}),
  });
  append(problems, checked.problems);
  return { manifests: checked.manifests, invalid: checked.invalid, problems };
}

/**
 * A file's parsed manifests with their positions, made once per parse when `cache` keeps them: a file
 * the cache parsed before hands back the same positioned manifests too.
 */
function positionedManifests(
  file: string,
  text: string,
  parsed: readonly ParsedManifest[],
  cache?: ParseCache,
): Manifest[] {
  const cached = cache?.positioned.get(parsed);
  if (cached) return cached;
  const made = withPositions(file, text, parsed);
  cache?.positioned.set(parsed, made);
  return made;
}

/** The real folder to read, and the revision it is of. Throws ConfigError when `dir` cannot be read. */
async function resolveRoot(dir: string): Promise<{ root: string } & Awaited<ReturnType<typeof revisionAt>>> {
  try {
    const root = await realpath(dir);
    if (!(await lstat(root)).isDirectory()) throw new ConfigError(`manifests folder ${dir} is not a folder`);
    return { root, ...(await revisionAt(dir, root)) };
  } catch (error) {
    if (isConfigError(error)) throw error;
    const code = errnoOf(error);
    if (code === "ENOENT") throw new ConfigError(`manifests folder ${dir} does not exist`, { cause: error });
    throw new ConfigError(`manifests folder ${dir} cannot be read: ${code}`, { cause: error });
  }
}
