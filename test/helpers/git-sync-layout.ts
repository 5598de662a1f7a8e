import { mkdir, rename, rm, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

export type GitSyncLayout = {
  /** The `--link` path: what DRIFTLESS_MANIFESTS points at. */
  link: string;
  /** The revision the link points at now. */
  revision: string;
  /**
   * Publishes a new revision the way git-sync does: writes a new worktree, swaps the link atomically
   * (a temporary link renamed over it), then deletes the old worktree. Returns the new revision.
   */
  publish(files: Record<string, string>): Promise<string>;
};

let counter = 0;

/**
 * A git-sync root in `root` (root/rev-N worktrees, root/link → the current one), first holding `files`.
 * `nameRevision` names each new worktree (git-sync names them by commit sha); default `rev-N-pid`.
 */
export async function createGitSyncLayout(
  root: string,
  files: Record<string, string>,
  nameRevision?: () => string,
): Promise<GitSyncLayout> {
  const link = join(root, "link");
  const writeWorktree = async (revision: string, content: Record<string, string>) => {
    for (const [path, text] of Object.entries(content)) {
      const file = join(root, revision, path);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, text);
    }
    await mkdir(join(root, revision), { recursive: true });
  };
  const nextRevision = nameRevision ?? (() => `rev-${String(++counter).padStart(4, "0")}-${process.pid}`);

  const layout: GitSyncLayout = {
    link,
    revision: nextRevision(),
    async publish(content) {
      const previous = layout.revision;
      const revision = nextRevision();
      await writeWorktree(revision, content);
      const temporary = join(root, `.link-${revision}`);
      await symlink(revision, temporary);
      await rename(temporary, link);
      layout.revision = revision;
      await rm(join(root, previous), { recursive: true, force: true });
      return revision;
    },
  };
  await mkdir(root, { recursive: true });
  await writeWorktree(layout.revision, files);
  await symlink(layout.revision, link);
  return layout;
}
