import { lstat, readlink } from "node:fs/promises";
import { basename, dirname, isAbsolute, relative, resolve, sep } from "node:path";

/**
 * The revision of a manifests folder: the name of the folder a link on the way to it points to.
 * git-sync's `--link` swaps revisions by pointing it at a new worktree named by its commit; the link
 * may be the manifests folder itself or hold it in a subfolder. The pass (load.ts) and the watcher
 * (daemon/source-watcher.ts) both find it here, so they always name the same revision.
 */

/**
 * The git-sync link on the way to `dir` (the folder itself or a parent), or undefined. A link only
 * counts when its target looks like git-sync's (a sibling or `.worktrees/<hash>`), so that links such
 * as macOS's /tmp, or a user's link to a checkout elsewhere (whose files are edited in place), are not
 * taken for one.
 */
export async function gitSyncLink(dir: string): Promise<string | undefined> {
  for (let path = resolve(dir); ; path = dirname(path)) {
    const stats = await lstat(path).catch(() => undefined);
    if (stats?.isSymbolicLink() && looksLikeGitSync(await readlink(path))) return path;
    if (dirname(path) === path) return undefined;
  }
}

function looksLikeGitSync(target: string): boolean {
  const segments = target.split(/[/\\]+/).filter(Boolean);
  if (isAbsolute(target)) return false;
  return segments.length === 1 || (segments.length === 2 && (segments[0] ?? "").startsWith("."));
}

/**
 * The link whose target names the revision of `dir`: `dir` itself when it is a symlink (whatever it
 * points to), else the git-sync link above it; undefined for a plain folder.
 */
export async function revisionLink(dir: string): Promise<string | undefined> {
  const stats = await lstat(dir).catch(() => undefined);
  return stats?.isSymbolicLink() ? resolve(dir) : gitSyncLink(dir);
}

/** The revision `link` points to now: the name of its target (one readlink, no walk). */
export async function revisionOf(link: string): Promise<string | undefined> {
  const target = await readlink(link).catch(() => undefined);
  return target === undefined ? undefined : basename(target.replace(/[/\\]+$/, ""));
}

/**
 * The revision that `root`, the real path one read of `dir` resolved to, is of: the name of the folder
 * the link resolved to in that same resolution (the link may point elsewhere already; the caller checks
 * that by resolving `dir` again). Undefined for a plain folder.
 */
export async function revisionAt(dir: string, root: string): Promise<{ link?: string; revision?: string }> {
  const link = await revisionLink(dir);
  if (!link) return {};
  // What lies between the link and the manifests folder: `root` ends with it below the link's folder.
  const below = relative(link, resolve(dir));
  const folder =
    below === "" ? root : root.endsWith(sep + below) ? root.slice(0, -below.length - 1) : undefined;
  return { link, revision: folder === undefined ? await revisionOf(link) : basename(folder) };
}
