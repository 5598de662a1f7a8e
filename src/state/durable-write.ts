import { randomBytes } from "node:crypto";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * Writes of the state's files that survive a crash or a power loss: a whole file replaced atomically,
 * a journal line appended and flushed, a journal cut back and flushed.
 */

/**
 * Replaces `path` with `data` so that a reader, or the next start after a crash or power loss, sees
 * either the old file or the new one, never a mix: the data goes to a temporary file in the same
 * folder, is flushed to disk, renamed over `path`, and the folder itself is flushed so the rename
 * survives a power loss. Temporary files are named `.<name>.*.tmp`; see isTemporaryOf.
 */
export async function writeFileAtomic(path: string, data: string, mode = 0o600): Promise<void> {
  const folder = dirname(path);
  const temporary = join(folder, `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    const handle = await open(temporary, "wx", mode);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  await syncFolder(folder);
}

/** True for a temporary file that writeFileAtomic of `name` left behind when its process died. */
export function isTemporaryOf(name: string, file: string): boolean {
  return file.startsWith(`.${name}.`) && file.endsWith(".tmp");
}

async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, "r");
  try {
    await handle.sync();
  } catch (error) {
    // Some platforms and file systems cannot fsync a folder; the rename is as durable as they allow.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "EINVAL" && code !== "EPERM" && code !== "ENOTSUP") throw error;
  } finally {
    await handle.close();
  }
}

/** Appends `text` to `path` (created 0600) and flushes it to disk before resolving. */
export async function appendDurably(path: string, text: string): Promise<void> {
  const handle = await open(path, "a", 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Cuts `path` to its first `bytes` bytes (a torn last line, or compaction's 0), flushed to disk. */
export async function truncateDurably(path: string, bytes: number): Promise<void> {
  const handle = await open(path, "r+");
  try {
    await handle.truncate(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}
