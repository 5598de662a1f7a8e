import { isSecret } from "../plan/secret.js";
import { isPlainObject } from "../plan/values.js";
import { unmatched } from "./set-match.js";

/**
 * Drift, as a pure function: what of a live object differs from the desired state its manifest
 * states, the same desired state the kind's update sends (each kind's module, kinds/, gives it with
 * the rules of its lists). Only the fields the manifest states are compared; a field the answer does
 * not carry is not compared (an answer that leaves a field out says nothing of it, and a false diff is
 * worse than none); secrets are never compared (answers do not carry them, and their values must not
 * be shown). Lists whose order the platform does not keep compare as sets, a three-way list (an
 * organization's privateEndpoints, a postgres pipe's tableMappings) only needs the desired entries to
 * be there (the others are someone else's).
 */

/** One field that differs: its path (as `plan` prints paths), what git states and what is live. */
export type DriftField = { path: string; want: unknown; have: unknown };

/** Credentials fields: never compared, whatever form they take. */
const SECRET_FIELDS = new Set(["password", "secretKey", "accessKeyId", "connectionString"]);

/** How the lists of one kind compare, by dotted path (list entries have no path segment). */
export type ListRule = { kind: "set" } | { kind: "contains"; key: (entry: unknown) => string };

export type Rules = Readonly<Record<string, ListRule>>;

/** The differing fields of `have` against what `want` states, from `path` down. */
export function walk(want: unknown, have: unknown, rules: Rules = {}, path = ""): DriftField[] {
  if (want === undefined || have === undefined || isSecretValue(want)) return [];
  if (isPlainObject(want)) {
    if (!isPlainObject(have)) return [{ path: path || "(object)", want, have }];
    const fields: DriftField[] = [];
    for (const [key, value] of Object.entries(want)) {
      if (SECRET_FIELDS.has(key)) continue;
      fields.push(...walk(value, have[key], rules, path ? `${path}.${key}` : key));
    }
    return fields;
  }
  if (Array.isArray(want)) return compareList(want, have, rules, path);
  return sameScalar(want, have, path) ? [] : [{ path, want, have }];
}

/** A list: as a set, as the entries a three-way list must contain, or entry by entry in order. */
function compareList(want: unknown[], have: unknown, rules: Rules, path: string): DriftField[] {
  if (!Array.isArray(have)) return [{ path, want, have }];
  const rule = rules[path];
  if (rule?.kind === "contains") return containsEntries(want, have, rule.key, rules, path);
  if (rule?.kind === "set") return sameSet(want, have, rules, path) ? [] : [{ path, want, have }];
  if (want.length !== have.length) return [{ path, want, have }];
  return want.flatMap((entry, index) => walk(entry, have[index], rules, `${path}[${index}]`));
}

/**
 * Whether the two lists hold the same entries in any order, an entry matching as walk judges it: keyed
 * (set-match.ts), in linear time. A list whose entries hold lists with rules of their own is compared
 * entry with entry (no kind has one: the keyed comparison does not know those rules).
 */
function sameSet(want: unknown[], have: unknown[], rules: Rules, path: string): boolean {
  const nested = Object.keys(rules).some((p) => p.startsWith(`${path}.`));
  if (!nested) {
    const { missing, extra } = unmatched(want, have, {
      field: (key) => SECRET_FIELDS.has(key),
      value: isSecretValue,
    });
    return missing === 0 && extra === 0;
  }
  const matches = (w: unknown, h: unknown) => walk(w, h, rules, path).length === 0;
  return (
    want.every((w) => have.some((h) => matches(w, h))) && have.every((h) => want.some((w) => matches(w, h)))
  );
}

/** Each desired entry is live, with what it states; entries only live are someone else's. */
function containsEntries(
  want: unknown[],
  have: unknown[],
  key: (entry: unknown) => string,
  rules: Rules,
  path: string,
): DriftField[] {
  const live = new Map(have.map((entry) => [key(entry), entry]));
  return want.flatMap((entry) => {
    const at = `${path}[${key(entry)}]`;
    const found = live.get(key(entry));
    if (found === undefined) return [{ path: at, want: entry, have: null }];
    return walk(entry, found, rules, at);
  });
}

/** Scalars; an expiry compares as the instant it names, whatever its spelling. */
function sameScalar(want: unknown, have: unknown, path: string): boolean {
  if (want === have) return true;
  if (path === "expireAt" && typeof want === "string" && typeof have === "string") {
    const [a, b] = [Date.parse(want), Date.parse(have)];
    return Number.isFinite(a) && a === b;
  }
  return false;
}

const isSecretValue = (value: unknown): boolean =>
  isSecret(value) ||
  (isPlainObject(value) &&
    Object.keys(value).length === 1 &&
    (typeof value.fromEnv === "string" || typeof value.fromFile === "string"));
