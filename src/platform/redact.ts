import { CREDENTIAL_FIELDS } from "../credentials.js";

/**
 * Masking the secrets of a request wherever the platform may echo them back: in an error answer's text,
 * which driftless shows in logs, `/status` and command output, and in a success answer, which the state
 * keeps.
 */

/** What a secret is replaced with. */
export const MASK = "(secret)";

/** The shortest piece of a secret masked at the edge of a cut text: shorter ones say too little to hide. */
export const MIN_FRAGMENT = 4;

/**
 * `text` with every occurrence of each secret replaced by `(secret)`: the secret as sent, JSON-escaped
 * (as a body that quotes it carries it), and with its whitespace collapsed (as a displayed message shows
 * it). Empty secrets are ignored. Call it on the raw text, before any rewriting: a rewritten text (cut,
 * whitespace collapsed) may no longer contain the secret as it was sent.
 */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const form of formsOf(secrets)) out = out.split(form).join(MASK);
  return out;
}

/**
 * `text`, which a cut ended, with its trailing start of a secret (at least MIN_FRAGMENT characters, in
 * any of the secret's forms) replaced by `(secret)`: a cut through a secret leaves a piece that no
 * longer matches the whole secret.
 */
export function redactCutEdge(text: string, secrets: readonly string[]): string {
  let longest = 0;
  for (const form of formsOf(secrets)) {
    for (let length = Math.min(form.length, text.length); length >= MIN_FRAGMENT; length--) {
      if (length > longest && text.endsWith(form.slice(0, length))) longest = length;
    }
  }
  return longest === 0 ? text : text.slice(0, text.length - longest) + MASK;
}

/** Every form a secret may take in a text, longest first so that no shorter form splits a longer one. */
function formsOf(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret === "") continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
    forms.add(collapse(secret));
  }
  forms.delete("");
  return [...forms].sort((a, b) => b.length - a.length);
}

/** Whitespace runs as one space, ends trimmed: how a message is shown on one line. */
export function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** The credential fields of requests, never kept of an answer. */
const CREDENTIALS = new Set<string>(CREDENTIAL_FIELDS);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * An answer as driftless may keep it: results are said to omit credentials, yet a pipe's result lists
 * `connectionString` (which may embed an account key; docs/platform-apis.md#credential-fields), so
 * credential fields are dropped and any value equal to a secret just sent is masked.
 */
export function withoutSecrets(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === "string") return secrets.includes(value) ? MASK : value;
  if (Array.isArray(value)) return value.map((item) => withoutSecrets(item, secrets));
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value))
    if (!CREDENTIALS.has(key)) out[key] = withoutSecrets(child, secrets);
  return out;
}
