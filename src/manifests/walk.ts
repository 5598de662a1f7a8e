import type { Dirent, Stats } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { errnoOf } from "../errors.js";
import type { Problem } from "./problem.js";

/** A manifest file found under the root: its path as users see it and the real path to read. */
export type FoundFile = { file: string; path: string };

export type Walk = {
  files: FoundFile[];
  problems: Problem[];
  /** A folder or link listed a moment ago is gone: the tree changed under the walk. */
  vanished: boolean;
};

/** Whether a file name is a manifest file's: `*.yaml` or `*.yml`. */
export const isManifestName = (name: string) => name.endsWith(".yaml") || name.endsWith(".yml");
const toPosix = (path: string) => path.split(sep).join("/");
const isInside = (root: string, path: string) => path === root || path.startsWith(root + sep);
const NOT_A_FILE = "not a regular file: not read";

/**
 * Every `*.yaml`/`*.yml` file under `root` (a real path), sorted. Hidden entries (`.git`, git-sync's
 * `.worktrees`) are skipped. Symlinks are followed only while they stay inside the root; a link that
 * leaves it, loops, or dangles is a problem, never read. Each real folder and file is visited once,
 * so a link back to an ancestor cannot loop and a linked file is not loaded twice.
 */
export async function walkManifests(root: string): Promise<Walk> {
  const walk: Walk = { files: [], problems: [], vanished: false };
  const seenDirs = new Set<string>([root]);
  const seenFiles = new Set<string>();
  const problem = (path: string, message: string) =>
    walk.problems.push({ file: toPosix(relative(root, path)), line: 1, col: 1, message });

  const visitDir = async (dir: string): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if (errnoOf(error) === "ENOENT") walk.vanished = true;
      else problem(dir, `cannot read folder: ${errnoOf(error) ?? String(error)}`);
      return;
    }
    await Promise.all(entries.map((entry) => visitEntry(dir, entry)));
  };

  const visitEntry = async (dir: string, entry: Dirent): Promise<void> => {
    if (entry.name.startsWith(".")) return;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (seenDirs.has(path)) return;
      seenDirs.add(path);
      return visitDir(path);
    }
    if (entry.isFile()) {
      if (isManifestName(entry.name)) addFile(path, path);
      return;
    }
    if (entry.isSymbolicLink()) return visitLink(path, entry.name);
    // A FIFO or device would block the read or never end.
    if (isManifestName(entry.name)) problem(path, NOT_A_FILE);
  };

  const visitLink = async (path: string, name: string): Promise<void> => {
    let target: string;
    try {
      target = await realpath(path);
    } catch (error) {
      const code = errnoOf(error);
      if (code === "ELOOP") problem(path, "symlink loop: the link never reaches a file or folder");
      else if (code === "ENOENT" && isManifestName(name))
        problem(path, "broken symlink: its target does not exist");
      else if (code !== "ENOENT") problem(path, `cannot follow symlink: ${code ?? String(error)}`);
      return;
    }
    let stats: Stats;
    try {
      stats = await stat(target);
    } catch {
      walk.vanished = true;
      return;
    }
    const isDir = stats.isDirectory();
    if (!isDir && !isManifestName(name)) return;
    if (!isInside(root, target)) {
      problem(path, "symlink leads outside the manifests folder: not read");
      return;
    }
    if (!isDir && !stats.isFile()) {
      problem(path, NOT_A_FILE);
      return;
    }
    if (!isDir) return addFile(path, target);
    // A link to a folder already walked (an ancestor, or a second name) would loop or load twice.
    if (seenDirs.has(target)) return;
    seenDirs.add(target);
    return visitDir(target);
  };

  const addFile = (shown: string, real: string) => {
    if (seenFiles.has(real)) return;
    seenFiles.add(real);
    walk.files.push({ file: toPosix(relative(root, shown)), path: real });
  };

  await visitDir(root);
  walk.files.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  return walk;
}
