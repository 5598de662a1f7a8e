import { open } from "node:fs/promises";
import { z } from "zod";
import { checked, type KnownRecord, parseJson, TopLevelSchema } from "./state-format.js";
import { ResourceRecord, type State } from "./store.js";

/**
 * The file store's journal (`state.journal` beside `state.json`): one JSON line per save, holding the
 * records that save changed, appended and flushed, so that a save costs what it changed. A line is
 * `{"set": {id: record, …}, "delete": [id, …], "top": {…}}` (each part only when it has something):
 * whole values, so replaying a line twice changes nothing; that is what makes compaction crash-safe
 * (see file-store.ts). One line per save keeps a save atomic: a last line without its newline is a save
 * cut short by a crash, ignored as a whole, never fatal.
 */

export const JOURNAL_FILE = "state.journal";

/** The line that turns a state whose texts are `before` into one whose texts are `after`; "" if equal. */
export function journalLine(
  before: { records: ReadonlyMap<string, KnownRecord>; top: string },
  after: { records: ReadonlyMap<string, KnownRecord>; top: string },
): string {
  const set: string[] = [];
  for (const [id, known] of after.records) {
    const was = before.records.get(id);
    if (was !== known && was?.text !== known.text) set.push(`${JSON.stringify(id)}:${known.text}`);
  }
  const deleted = [...before.records.keys()].filter((id) => !after.records.has(id));
  const parts: string[] = [];
  if (set.length > 0) parts.push(`"set":{${set.join(",")}}`);
  if (deleted.length > 0) parts.push(`"delete":${JSON.stringify(deleted)}`);
  if (after.top !== before.top) parts.push(`"top":${after.top}`);
  return parts.length > 0 ? `{${parts.join(",")}}\n` : "";
}

const Line = z.strictObject({
  set: z.record(z.string(), ResourceRecord).optional(),
  delete: z.array(z.string()).optional(),
  top: TopLevelSchema.optional(),
});

/**
 * Applies the journal `text` (read from `where`) to `state` in place. Returns how many bytes of it are
 * whole lines, and whether a torn last line was left out. Throws StateError for a whole line that is
 * not a save.
 */
export function replayJournal(state: State, text: string, where: string): { bytes: number; torn: boolean } {
  const end = text.lastIndexOf("\n") + 1;
  let start = 0;
  for (let line = 1; start < end; line++) {
    const stop = text.indexOf("\n", start);
    if (stop > start) apply(state, text.slice(start, stop), `${where} line ${line}`);
    start = stop + 1;
  }
  return { bytes: Buffer.byteLength(text.slice(0, end)), torn: end < text.length };
}

function apply(state: State, text: string, where: string): void {
  const line = checked(Line, parseJson(text, where), where);
  Object.assign(state.resources, line.set as Record<string, ResourceRecord> | undefined);
  for (const id of line.delete ?? []) delete state.resources[id];
  if (line.top) {
    for (const key of Object.keys(state))
      if (key !== "resources") delete (state as Record<string, unknown>)[key];
    Object.assign(state, line.top);
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
