import { createHash } from "node:crypto";

/**
 * Bounds on JSON values that come from outside (the platform's answers) and on what is shown of any
 * value (status, logs, notifications, plans). A platform may answer a value nested thousands of levels
 * deep, or a list of tens of thousands of entries: what driftless compares is cut in depth once, where
 * the answer is read, and what it shows is cut in length, so no answer can overflow the stack, fill a
 * log line or a status document, or make one resource's read fail anything else.
 */

/**
 * The nesting of a platform answer that is kept: far above any answer (a manifest nests at most 32
 * levels), far below what overflows the stack of the functions that walk a value.
 */
export const MAX_ANSWER_DEPTH = 64;

/** Characters of JSON shown of one value in a status message, a log line, a notification or a plan line. */
export const SHOWN_CHARS = 400;

/** Levels of nesting shown of one value. */
const SHOWN_DEPTH = 12;

/** What stands where a value nested too deep was cut. */
export const cutNote = (maxDepth: number) => `(nested deeper than ${maxDepth} levels: cut)`;

type Container = Record<string, unknown> | unknown[];

const isContainer = (value: unknown): value is Container => typeof value === "object" && value !== null;

/**
 * `value` with every list or object nested deeper than `maxDepth` levels (the value itself is level
 * 1) replaced by cutNote(maxDepth); `value` itself when nothing is that deep. Walks without recursion,
 * so a value of any depth is safe.
 */
export function cutDeep(value: unknown, maxDepth: number): unknown {
  if (!deeperThan(value, maxDepth)) return value;
  const root: Record<string, unknown> = { value };
  const stack: Array<[Container, string | number, number]> = [[root, "value", 1]];
  while (stack.length > 0) {
    const [parent, key, depth] = stack.pop() as [Container, string | number, number];
    const child = (parent as Record<string | number, unknown>)[key];
    if (!isContainer(child)) continue;
    const at = parent as Record<string | number, unknown>;
    if (depth > maxDepth) {
      at[key] = cutNote(maxDepth);
      continue;
    }
    // A spread copy: it keeps a member named __proto__ (JSON.parse makes it an own member) a member,
    // where Object.assign or a loop of assignments would make it the copy's prototype.
    const copy: Container = Array.isArray(child) ? [...child] : { ...child };
    at[key] = copy;
    const keys = Array.isArray(copy) ? copy.map((_, i) => i) : Object.keys(copy);
    for (const k of keys) stack.push([copy, k, depth + 1]);
  }
  return root.value;
}

/** Whether a list or object lies deeper than `maxDepth` levels in `value`; without recursion. */
function deeperThan(value: unknown, maxDepth: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (!isContainer(node)) continue;
    if (depth > maxDepth) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (isContainer(child)) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * The JSON text of `value`, cut after `maxChars` characters and below SHOWN_DEPTH levels, with a note
 * saying what was cut. Linear in what it writes, whatever the value's size or depth.
 */
export function jsonPreview(value: unknown, maxChars = SHOWN_CHARS): string {
  const { head, note } = preview(value, maxChars);
  return `${head}${note}`;
}

/**
 * What is shown of a value too long or too deep to show whole: jsonPreview's text, which JSON (a
 * status document, a log line, a notification) writes as a string and describeDrift as it is.
 */
export class CutValue {
  constructor(
    /** The JSON text kept, up to where it was cut. */
    readonly head: string,
    /** What was cut: ` (cut at 400 characters; a list of 20000 entries)`. */
    readonly note: string,
    /** What the whole value was: `; a list of 20000 entries`. */
    readonly about = "",
  ) {}
  get text(): string {
    return `${this.head}${this.note}`;
  }
  toJSON(): string {
    return this.text;
  }
}

/**
 * A value as it is shown beside others (a drift's field in /status, a log line, a notification): the
 * value itself when its JSON is short and shallow, else a CutValue of it.
 */
export function shownValue(value: unknown, maxChars = SHOWN_CHARS): unknown {
  if (!isContainer(value) && (typeof value !== "string" || value.length <= maxChars)) return value;
  if (value instanceof CutValue) return value;
  const shown = preview(value, maxChars);
  return shown.cut ? new CutValue(shown.head, shown.note, shown.about) : value;
}

function preview(
  value: unknown,
  maxChars: number,
): { head: string; note: string; about: string; cut: boolean } {
  // Shown once already: cut shorter still if need be, its note kept.
  if (value instanceof CutValue) {
    if (value.head.length <= maxChars)
      return { head: value.head, note: value.note, about: value.about, cut: true };
    const note = ` (cut at ${maxChars} characters${value.about})`;
    return { head: `${value.head.slice(0, maxChars)}…`, note, about: value.about, cut: true };
  }
  const parts: string[] = [];
  let length = 0;
  let cutDepth = false;
  const put = (text: string) => {
    parts.push(text);
    length += text.length;
    if (length > maxChars) throw new Enough();
  };
  const write = (node: unknown, depth: number): void => {
    if (node instanceof CutValue) {
      put(node.text);
    } else if (!isContainer(node)) {
      put(JSON.stringify(node) ?? "null");
    } else if (depth > SHOWN_DEPTH) {
      cutDepth = true;
      put(Array.isArray(node) ? "[…]" : "{…}");
    } else if (Array.isArray(node)) {
      put("[");
      for (const [i, entry] of node.entries()) {
        if (i > 0) put(",");
        write(entry, depth + 1);
      }
      put("]");
    } else {
      put("{");
      let first = true;
      for (const [key, member] of Object.entries(node)) {
        if (member === undefined) continue;
        put(`${first ? "" : ","}${JSON.stringify(key)}:`);
        first = false;
        write(member, depth + 1);
      }
      put("}");
    }
  };
  try {
    write(value, 1);
  } catch (error) {
    if (!(error instanceof Enough)) throw error;
    const head = `${parts.join("").slice(0, maxChars)}…`;
    const about = sizeOf(value);
    return { head, note: ` (cut at ${maxChars} characters${about})`, about, cut: true };
  }
  const head = parts.join("");
  return { head, note: cutDepth ? ` (cut below ${SHOWN_DEPTH} levels)` : "", about: "", cut: cutDepth };
}

/** Thrown by the writer when the text is long enough; never leaves this module. */
class Enough extends Error {}

const sizeOf = (value: unknown) =>
  Array.isArray(value)
    ? `; a list of ${value.length} entries`
    : isContainer(value)
      ? `; an object of ${Object.keys(value).length} members`
      : "";

/**
 * A digest of `value` that is the same for the same JSON value whatever the order of its objects'
 * members: what tells one finding from another without keeping either. Members nested deeper than
 * MAX_ANSWER_DEPTH count as cut.
 */
export function digestOf(value: unknown): string {
  const hash = createHash("sha256");
  const stack: Array<[unknown, number] | string> = [[value, 1]];
  while (stack.length > 0) {
    const item = stack.pop() as [unknown, number] | string;
    if (typeof item === "string") {
      hash.update(item);
      continue;
    }
    const [node, depth] = item;
    if (!isContainer(node)) {
      hash.update(JSON.stringify(node) ?? "null");
      continue;
    }
    if (depth > MAX_ANSWER_DEPTH) {
      hash.update(JSON.stringify(cutNote(MAX_ANSWER_DEPTH)));
      continue;
    }
    // Pushed in reverse, so that they are hashed in order: open, each entry, close.
    const entries: Array<[unknown, number] | string> = ["["];
    if (Array.isArray(node)) {
      for (const [i, entry] of node.entries()) entries.push(i > 0 ? "," : "", [entry, depth + 1]);
    } else {
      entries[0] = "{";
      const keys = Object.keys(node)
        .filter((key) => node[key] !== undefined)
        .sort();
      for (const [i, key] of keys.entries()) {
        entries.push(`${i > 0 ? "," : ""}${JSON.stringify(key)}:`, [node[key], depth + 1]);
      }
    }
    entries.push(Array.isArray(node) ? "]" : "}");
    for (let i = entries.length - 1; i >= 0; i--) stack.push(entries[i] as [unknown, number] | string);
  }
  return hash.digest("hex");
}
