import { spawn } from "node:child_process";
import { realpath, stat } from "node:fs/promises";
import { isAbsolute, relative, sep } from "node:path";
import { ConfigError } from "../errors.js";
import {
  checkedDocuments,
  DEFAULT_MAX_FILE_BYTES,
  loadRevision,
  type ManifestSet,
} from "../manifests/load.js";
import { DEFAULT_PARSE_LIMITS, parseManifestFile } from "../manifests/parse.js";
import { sortProblems } from "../manifests/problem.js";
import type { ParseCache } from "../manifests/read-file.js";

/**
 * The manifests at the base of a `plan --base`: the same relative folder at a git revision of the
 * repository that holds DIR, or another folder. Git is asked three times in all (rev-parse, ls-tree,
 * one `cat-file --batch` for every blob), so 10,000 files cost one process each, not 10,000.
 */

export type BaseSet = ManifestSet & { ref: string; commit?: string; folder?: string };

/** Runs git in `cwd` with `input` on stdin; resolves its stdout, throws ConfigError with its stderr. */
function git(cwd: string, args: string[], input?: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, { cwd, stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    child.on("error", (error) =>
      reject(
        new ConfigError(`plan --base: git cannot be run (${error.message}); is git installed?`, {
          cause: error,
        }),
      ),
    );
    child.on("close", (code) => {
      if (code === 0) return resolve(Buffer.concat(out));
      const message = Buffer.concat(err).toString("utf8").trim().split("\n")[0];
      reject(new ConfigError(`plan --base: git ${args[0]} failed: ${message}`));
    });
    child.stdin.on("error", () => {});
    child.stdin.end(input ?? "");
  });
}

/**
 * Whether `base` is written as a path: absolute, `.`, `..`, or starting with `./` or `../`. No git
 * revision can be written so (no ref or ref component begins with `.` or `/`), so the choice never
 * depends on what exists on disk.
 */
function isFolderBase(base: string): boolean {
  return isAbsolute(base) || /^\.\.?(?:[/\\]|$)/.test(base);
}

/**
 * The manifests at `base`: a folder when `base` is written as a path (isFolderBase), else a git
 * revision, whatever folders exist. A pull request controls every name in its own checkout: a folder
 * it adds under the name of its base commit, where CI runs, must not stand in for that commit.
 * What it parses goes into `cache`, so that reading the head after it parses only the files whose
 * text differs. Throws ConfigError when the folder or the revision cannot be read.
 */
export async function loadBase(base: string, dir: string, cache?: ParseCache): Promise<BaseSet> {
  if (!isFolderBase(base)) return loadAtRevision(base, dir, cache);
  if (!(await isFolder(base))) {
    throw new ConfigError(`plan --base ${base}: no such folder (a base written as a path is a folder)`);
  }
  return { ...(await loadRevision(base, { cache })), ref: base, folder: base };
}

const isFolder = (path: string) =>
  stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );

/** What to add to a "no such commit" or "no repository" error when a folder named `ref` exists. */
async function folderHint(ref: string): Promise<string | undefined> {
  if (!(await isFolder(ref))) return undefined;
  return `a folder of that name exists: to plan against it, write it as a path (--base ./${ref})`;
}

/** Throws ConfigError when DIR is not inside a git repository or `ref` names no commit. */
async function loadAtRevision(ref: string, dir: string, cache?: ParseCache): Promise<BaseSet> {
  const real = await realpath(dir).catch((error: unknown) => {
    throw new ConfigError(`manifests folder ${dir} does not exist`, { cause: error });
  });
  const top = await git(real, ["rev-parse", "--show-toplevel"]).catch(async (error: unknown) => {
    const hint =
      (await folderHint(ref)) ?? "give a base folder as a path (./NAME) instead, or run in a clone";
    throw new ConfigError(`plan --base ${ref}: ${dir} is not inside a git repository; ${hint}`, {
      cause: error,
    });
  });
  const root = await realpath(top.toString("utf8").trim());
  const prefix = relative(root, real).split(sep).join("/");
  const commit = (
    await git(root, ["rev-parse", "--verify", "--quiet", "--end-of-options", `${ref}^{commit}`]).catch(
      async (error: unknown) => {
        const hint =
          (await folderHint(ref)) ??
          "fetch it first (a shallow CI clone may lack it: git fetch --depth=1 origin <branch>)";
        throw new ConfigError(`plan --base ${ref}: no such commit in ${root}; ${hint}`, { cause: error });
      },
    )
  )
    .toString("utf8")
    .trim();
  const files = await listBlobs(root, commit, prefix);
  const texts = await readBlobs(root, files);
  return { ...parseTexts(texts, cache), root, ref, commit, superseded: false };
}

type Blob = { file: string; object: string };

const isManifestName = (name: string) => name.endsWith(".yaml") || name.endsWith(".yml");

/** Regular files named *.yaml/*.yml under `prefix` at `commit`, outside hidden folders, sorted. */
async function listBlobs(root: string, commit: string, prefix: string): Promise<Blob[]> {
  const args = ["ls-tree", "-r", "-z", "--full-tree", commit];
  const out = await git(root, prefix ? [...args, "--", `${prefix}/`] : args);
  const blobs: Blob[] = [];
  for (const entry of out.toString("utf8").split("\0")) {
    // `<mode> <type> <object>\t<path>`; symlinks (120000) and submodules are not followed at the base.
    const tab = entry.indexOf("\t");
    if (tab < 0) continue;
    const [mode, type, object] = entry.slice(0, tab).split(" ");
    const path = entry.slice(tab + 1);
    if (type !== "blob" || mode === "120000" || !object) continue;
    const file = prefix ? path.slice(prefix.length + 1) : path;
    if (!isManifestName(file) || file.split("/").some((step) => step.startsWith("."))) continue;
    blobs.push({ file, object });
  }
  return blobs.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

type Text = { file: string; text?: string; problem?: string };

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Every blob's text, from one `git cat-file --batch`; refused like loadManifests refuses a file. */
async function readBlobs(root: string, blobs: readonly Blob[]): Promise<Text[]> {
  if (blobs.length === 0) return [];
  const out = await git(root, ["cat-file", "--batch"], blobs.map((b) => `${b.object}\n`).join(""));
  const texts: Text[] = [];
  let at = 0;
  for (const blob of blobs) {
    // `<object> blob <size>\n<bytes>\n`
    const end = out.indexOf(10, at);
    const size = Number(out.subarray(at, end).toString("latin1").split(" ")[2]);
    const bytes = out.subarray(end + 1, end + 1 + size);
    at = end + 1 + size + 1;
    texts.push({ file: blob.file, ...decode(bytes) });
  }
  return texts;
}

function decode(bytes: Buffer): { text?: string; problem?: string } {
  if (bytes.length > DEFAULT_MAX_FILE_BYTES)
    return {
      problem: `file is ${bytes.length} bytes, over the ${DEFAULT_MAX_FILE_BYTES}-byte limit: not read`,
    };
  if (bytes.includes(0)) return { problem: "binary file (it holds NUL bytes): not YAML text" };
  try {
    return { text: utf8.decode(bytes) };
  } catch {
    return { problem: "binary file (not UTF-8 text): not YAML text" };
  }
}

/**
 * The manifests, invalid documents and problems of the texts, exactly as loadManifests makes them of
 * files, each file's parse kept in `cache` as loadManifests keeps it.
 */
function parseTexts(
  texts: readonly Text[],
  cache?: ParseCache,
): Pick<ManifestSet, "manifests" | "invalid" | "problems"> {
  const files = texts.map(({ file, text, problem }) => {
    const refused = problem === undefined ? [] : [{ file, line: 1, col: 1, message: problem }];
    if (text === undefined) return { file, manifests: [], invalid: [], problems: refused };
    const parsed = parseManifestFile(file, text, DEFAULT_PARSE_LIMITS);
    cache?.files.set(file, { text, parsed });
    return { file, text, ...parsed, problems: [...refused, ...parsed.problems] };
  });
  const checked = checkedDocuments(files, cache ? { cache } : {});
  return { ...checked, problems: sortProblems(checked.problems) };
}
