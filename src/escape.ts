/**
 * Escaping of values that come from manifests, so that a pull request cannot forge lines in the plan a
 * reviewer reads: no raw control character (a newline starts a fake line, ESC[ recolours or erases it),
 * no lone surrogate, no bidirectional override (it reorders what is shown), and in Markdown no syntax
 * or HTML that could open a table row or a `<details>` block of its own.
 */

// C0 and C1 controls, DEL, line/paragraph separators, bidi overrides/isolates, and lone surrogates.
// Built from a string: a regex literal of control characters is what the linter (rightly, elsewhere) refuses.
const UNSAFE = new RegExp(
  [
    "[\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]",
    "[\\ud800-\\udbff](?![\\udc00-\\udfff])",
    "(?<![\\ud800-\\udbff])[\\udc00-\\udfff]",
  ].join("|"),
  "g",
);

const SHORT: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

const codeOf = (char: string) => `\\u${(char.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`;

/** `text` on one line with every unsafe character written as an escape (`\n`, `\u001b`, `\ud800`). */
export function escapeLine(text: string): string {
  return text.replace(UNSAFE, (char) => SHORT[char] ?? codeOf(char));
}

/**
 * A JSON document with the characters JSON.stringify leaves raw (DEL, C1 controls, U+2028/9, bidi
 * controls) escaped too. They can only occur inside strings, where `\uXXXX` means the same character.
 */
export function escapeJson(json: string): string {
  return json.replace(LEFT_RAW_BY_JSON, codeOf);
}

const LEFT_RAW_BY_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** True when `text` holds a character escapeLine would escape. */
export const hasUnsafe = (text: string): boolean => new RegExp(UNSAFE.source).test(text);

// Everything Markdown or HTML could read as syntax inside a line, a table cell or a <summary>.
const MARKDOWN_SYNTAX = /[\\`*_{}[\]#+|<>&~!]/g;

/** `text` safe inline in Markdown and HTML (a table cell, a `<summary>`): syntax as character references. */
export function markdownInline(text: string): string {
  return escapeLine(text).replace(MARKDOWN_SYNTAX, (char) => `&#${char.charCodeAt(0)};`);
}

/**
 * A fenced code block around `lines` (already escaped to one line each), its fence longer than any
 * run of backticks inside, so that no content can close it; HTML inside a fence is shown, not read.
 */
export function codeBlock(lines: readonly string[], info = ""): string {
  let longest = 0;
  for (const line of lines)
    for (const run of line.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const fence = "`".repeat(Math.max(3, longest + 1));
  return [`${fence}${info}`, ...lines, fence].join("\n");
}
