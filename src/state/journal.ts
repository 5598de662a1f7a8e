import { z } from "zod";
import { StateError } from "../errors.js";
import { checked, type KnownRecord, TopLevelSchema } from "./state-format.js";
import { ResourceRecord, type State } from "./store.js";

/**
 * The file store's journal (`state.journal` beside `state.json`): one JSON line per save, holding the
 * records that save changed, appended and flushed, so that a save costs what it changed. A line is
 * `{"set": {id: record, …}, "delete": [id, …], "top": {…}}` (each part only when it has something):
 * whole values, so replaying a line twice changes nothing; that is what makes compaction crash-safe
 * (see file-store.ts). One line per save keeps a save atomic.
 *
 * The damage a crash or a full disk can leave, and how a load reads it:
 * - a last line without its newline (an append cut short): that save never was; it is left out, and
 *   the writer cuts it off before it appends anything (so a torn line is never followed by another);
 * - a line that is a torn save followed by a whole one, which a driftless before the rule above wrote
 *   by appending after a torn line: the whole save that ends the line counts, the torn one does not.
 *   It is found as the first point in the line where a save starts (`{"set":`, `{"delete":` or
 *   `{"top":`) and the rest of the line is one whole save: a torn prefix cannot end in a complete JSON
 *   value, so no earlier point can parse.
 * Any other line that is not a save is refused, naming the file and line: it was edited or damaged
 * otherwise, and guessing could lose a record.
 *
 * Everything here is pure (unit-tested in test/unit/journal.test.ts): file-store.ts reads the file
 * and writes it through durable-write.ts.
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

/** One save: the records it set, the ids it deleted, the top-level fields it replaced. */
export const Line = z.strictObject({
  set: z.record(z.string(), ResourceRecord).optional(),
  delete: z.array(z.string()).optional(),
  top: TopLevelSchema.optional(),
});
export type Line = z.infer<typeof Line>;

/** What replayJournal found. */
export type Replayed = {
  /** Bytes of `text` that are whole lines. */
  bytes: number;
  /** A torn last line was left out. */
  torn: boolean;
  /** Numbers of the lines read as a torn save followed by a whole one (see above). */
  repaired: number[];
};

/**
 * Applies the journal `text` (read from `where`) to `state` in place. Throws StateError for a whole
 * line that is not a save (nor a torn save followed by a whole one).
 */
export function replayJournal(state: State, text: string, where: string): Replayed {
  const { lines, bytes, torn } = wholeLines(text);
  const repaired: number[] = [];
  for (const { number, text: line } of lines) {
    const read = readLine(line, `${where} line ${number}`);
    applyLine(state, read.line);
    if (read.repaired) repaired.push(number);
  }
  return { bytes, torn, repaired };
}

/**
 * The whole lines of a journal's `text`, numbered from 1, empty ones left out: those that end in a
 * newline. What follows the last newline is a torn line (`torn`), an append a crash or a full disk cut
 * short: that save never was. `bytes` counts the whole lines, what a torn tail is cut back to.
 */
export function wholeLines(text: string): {
  lines: Array<{ number: number; text: string }>;
  bytes: number;
  torn: boolean;
} {
  const end = text.lastIndexOf("\n") + 1;
  const lines: Array<{ number: number; text: string }> = [];
  let start = 0;
  for (let number = 1; start < end; number++) {
    const stop = text.indexOf("\n", start);
    if (stop > start) lines.push({ number, text: text.slice(start, stop) });
    start = stop + 1;
  }
  return { lines, bytes: Buffer.byteLength(text.slice(0, end)), torn: end < text.length };
}

/**
 * One whole line (`where` names its file and number) read as a save. A line that is not JSON may be a
 * torn save followed by a whole one (`repaired`: only the whole one counts, see the top of this file).
 * Throws StateError for anything else: a line that is not a save, or damaged otherwise.
 */
export function readLine(text: string, where: string): { line: Line; repaired: boolean } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    const whole = wholeSaveAtEnd(text);
    if (!whole) throw corruptLine(where, error);
    return { line: whole, repaired: true };
  }
  return { line: checked(Line, json, where), repaired: false };
}

/**
 * What the next append needs, from the journal's `size` on disk and the `bytes` of whole lines this
 * process knows it holds: `append` when they agree; `cut` back to `bytes` first when the journal is
 * longer (an append cut short left a torn line, which must never be followed by another); `rewrite`
 * the whole state when it is shorter (cut by someone else: the saves it held would be lost).
 */
export function tailAction(size: number, bytes: number): "append" | "cut" | "rewrite" {
  if (size < bytes) return "rewrite";
  return size === bytes ? "append" : "cut";
}

/** Applies one save to `state` in place: whole values, so applying it twice changes nothing. */
export function applyLine(state: State, line: Line): void {
  Object.assign(state.resources, line.set as Record<string, ResourceRecord> | undefined);
  for (const id of line.delete ?? []) delete state.resources[id];
  if (line.top) {
    for (const key of Object.keys(state))
      if (key !== "resources") delete (state as Record<string, unknown>)[key];
    Object.assign(state, line.top);
  }
}

const SAVE_START = /\{"(?:set|delete|top)":/g;

/** The whole save that ends `text` after a torn one, or undefined (see the comment at the top). */
function wholeSaveAtEnd(text: string): Line | undefined {
  for (const found of text.matchAll(SAVE_START)) {
    if (found.index === 0) continue;
    let json: unknown;
    try {
      json = JSON.parse(text.slice(found.index));
    } catch {
      continue;
    }
    const line = Line.safeParse(json);
    if (line.success) return line.data;
  }
  return undefined;
}

function corruptLine(where: string, error: unknown): StateError {
  return new StateError(
    `${where} is corrupt (not valid JSON: ${(error as Error).message}). It was left as it is: restore the state folder from a backup, or delete that one line from the journal, which loses only the changes of that one save (read it first: a serverId or tileIds in it is something driftless created). Do not move the state aside: driftless would forget every endpoint and tile id it created`,
    { cause: error },
  );
}
