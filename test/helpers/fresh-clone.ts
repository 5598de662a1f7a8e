import { execFileSync } from "node:child_process";
import { copyFile, mkdir, symlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { repo } from "./cli.js";

/**
 * The repository's files as a fresh clone has them, in `into`: tracked and new files as git would check
 * them out, never the ignored dist/ or node_modules/, and the clone's `npm ci` as a link to the
 * repository's node_modules (the same packages, without the network).
 */
export async function freshClone(into: string): Promise<void> {
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: repo,
    encoding: "utf8",
  })
    .split("\0")
    .filter(Boolean);
  for (const file of files) {
    const to = join(into, file);
    await mkdir(dirname(to), { recursive: true });
    // A tracked file deleted in the working tree is not in the clone.
    await copyFile(join(repo, file), to).catch(() => {});
  }
  await symlink(join(repo, "node_modules"), join(into, "node_modules"));
}
