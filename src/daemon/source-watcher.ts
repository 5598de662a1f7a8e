import { lstat, realpath } from "node:fs/promises";
import { dirname, resolve, sep } from "node:path";
import { type FSWatcher, watch } from "chokidar";
import { gitSyncLink, revisionLink, revisionOf } from "../manifests/revision.js";
import { isManifestName } from "../manifests/walk.js";
import type { Logger } from "../telemetry/logger.js";

export type SourceChange = {
  /** The revision the link points to now (git-sync), or undefined for a plain folder. */
  revision?: string;
  /** The path whose event caused the change, for logs. */
  path: string;
};

export type SourceWatcher = {
  /** The revision a pass would read now; undefined when no folder on the way is a symlink. */
  currentRevision(): Promise<string | undefined>;
  close(): Promise<void>;
};

const isHidden = (path: string, root: string) =>
  path
    .slice(root.length)
    .split(sep)
    .some((segment) => segment.startsWith("."));

/**
 * Calls `onChange` when the manifests may have changed, and resolves once watching.
 *
 * With a git-sync layout, watching through the link is a trap: the watch stays on the worktree that
 * git-sync deletes right after swapping the link. So the link's parent folder is watched (without
 * following links) and every event there re-reads the link target; a new target is a new revision.
 * A plain folder (local use) is watched as a tree: any `*.yaml`/`*.yml` or folder change outside hidden
 * folders.
 */
export async function watchSource(
  dir: string,
  onChange: (change: SourceChange) => void,
  logger: Logger,
): Promise<SourceWatcher> {
  // A folder that does not exist yet is most likely git-sync's link before its first clone: watch for
  // it the same way, so its creation is the first revision.
  const exists = await lstat(dir).then(
    () => true,
    () => false,
  );
  const link = (await gitSyncLink(dir)) ?? (exists ? undefined : resolve(dir));
  // The link whose target names the revision, found as a pass finds it (manifests/revision.ts).
  const named = exists ? await revisionLink(dir) : link;
  // A tree behind an ordinary link is watched where its files are.
  const watcher = link ? await watchLink(link, onChange) : await watchTree(await realpath(dir), onChange);
  watcher.on("error", (error) => logger.warn({ err: error }, "file watcher error"));
  logger.info({ dir, link, mode: link ? "link swap" : "tree" }, "watching manifests");
  return {
    currentRevision: async () => (named ? revisionOf(named) : undefined),
    close: () => watcher.close(),
  };
}

async function watchLink(link: string, onChange: (change: SourceChange) => void): Promise<FSWatcher> {
  const parent = dirname(link);
  let last = await revisionOf(link);
  const watcher = watch(parent, {
    depth: 0,
    followSymlinks: false,
    ignoreInitial: true,
    // git-sync's worktrees live beside the link; only the link itself moves when a revision lands.
    ignored: (path) => path !== parent && path.slice(parent.length + 1).startsWith(".worktrees"),
  });
  watcher.on("all", async (_event, path) => {
    const revision = await revisionOf(link);
    if (revision === undefined || revision === last) return;
    last = revision;
    onChange({ revision, path });
  });
  await ready(watcher);
  return watcher;
}

async function watchTree(root: string, onChange: (change: SourceChange) => void): Promise<FSWatcher> {
  const watcher = watch(root, {
    followSymlinks: false,
    ignoreInitial: true,
    ignored: (path) => path !== root && isHidden(path, root),
  });
  watcher.on("all", (event, path) => {
    if (event === "addDir" || event === "unlinkDir" || isManifestName(path)) onChange({ path });
  });
  await ready(watcher);
  return watcher;
}

const ready = (watcher: FSWatcher) =>
  new Promise<void>((resolve) => {
    watcher.once("ready", () => resolve());
  });
