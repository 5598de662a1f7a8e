import { FAILSAFE_SCHEMA, loadAll, Type } from "js-yaml";
import { isKind, KIND_SCHEMAS, type ParsedManifest } from "./manifest.js";

/**
 * The happy path, for speed: most files of a repository are valid, and js-yaml reads them an order of
 * magnitude faster than the yaml library, which keeps every node's range. Returns the file's
 * manifests when every document in it is valid, or undefined, and the caller reads the file again
 * with the yaml library to find and place the problems. So a problem is only ever reported by the
 * careful path, and positions always come from it (see withPositions).
 *
 * The yaml library's reading is the truth; this path must never accept a file that it would read
 * differently or reject. So plain scalars resolve with the yaml library's own core-schema patterns
 * (js-yaml's CORE_SCHEMA reads `0b101` as 5 and `+.5` as a string, yaml the other way round), and
 * every construct where the two are known to differ sends the file down the careful path unread.
 */
export function parseFast(text: string): ParsedManifest[] | undefined {
  if (needsCarefulReader(text)) return undefined;
  let documents: unknown[];
  try {
    documents = loadAll(text, undefined, { schema: YAML_CORE });
  } catch {
    return undefined;
  }
  const manifests: ParsedManifest[] = [];
  for (const value of documents) {
    if (value === null || value === undefined) continue;
    const kind = (value as { kind?: unknown }).kind;
    if (!isKind(kind)) return undefined;
    const parsed = KIND_SCHEMAS[kind].safeParse(value);
    if (!parsed.success) return undefined;
    const labels = parsed.data.metadata.labels ?? {};
    const annotations = parsed.data.metadata.annotations ?? {};
    // js-yaml names a null key "null", yaml "": labels and annotations are the maps whose keys are free.
    if (Object.hasOwn(labels, "null") || Object.hasOwn(annotations, "null")) return undefined;
    manifests.push({
      kind: parsed.data.kind,
      name: parsed.data.metadata.name,
      labels,
      annotations,
      spec: parsed.data.spec,
      ordinal: manifests.length,
    } as ParsedManifest);
  }
  return manifests;
}

/**
 * Constructs the two readers treat differently, or that only the careful one bounds: anchors (the
 * alias cap), tags (yaml keeps unknown ones as strings, js-yaml throws or reads !!float 1 as a
 * number), directives (%YAML 1.1), a lone CR as a line break, a comment glued to a closing quote or
 * bracket, content on a `---` line, explicit `?` keys and collections as keys, and flow collections
 * that span lines (js-yaml does not check their indentation). Rare in manifests; each only costs
 * the careful path's time.
 */
const CAREFUL_ONLY =
  /[&!]|^%|\r(?!\n)|["'\]}]#|^---[ \t]+[^\s#]|(?:^|[\s[{,])\?(?:\s|$)|[\]}][ \t]*:(?:\s|$)/m;

function needsCarefulReader(text: string): boolean {
  return CAREFUL_ONLY.test(text) || hasMultiLineFlow(text);
}

/** Whether some line opens more `[`/`{` than it closes (quotes are not parsed: a false alarm is only slower). */
function hasMultiLineFlow(text: string): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) depth++;
    else if (c === 0x5d || c === 0x7d) depth--;
    else if (c === 0x0a) {
      if (depth !== 0) return true;
      depth = 0;
    }
  }
  return depth !== 0;
}

/**
 * A plain-scalar type of the yaml library's core schema: the same patterns, each with its value.
 * One Type per tag, because js-yaml keeps only the last of several types with one tag.
 */
const plain = (tag: string, forms: [RegExp, (text: string) => unknown][]) => {
  // Every plain scalar is tested against every type: one combined pattern keeps that cheap.
  const any = new RegExp(forms.map(([pattern]) => `(?:${pattern.source})`).join("|"));
  const formOf = (text: string) => forms.find(([pattern]) => pattern.test(text));
  return new Type(`tag:yaml.org,2002:${tag}`, {
    kind: "scalar",
    resolve: (text: string | null) => text !== null && any.test(text),
    construct: (text: string) => (formOf(text) as [RegExp, (text: string) => unknown])[1](text),
  });
};

// Copied from yaml's schema/core (null, bool, int, float): the patterns decide what a scalar means.
const YAML_CORE = FAILSAFE_SCHEMA.extend({
  implicit: [
    plain("null", [[/^(?:~|[Nn]ull|NULL)?$/, () => null]]),
    plain("bool", [[/^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/, (text) => text[0] === "t" || text[0] === "T"]]),
    plain("int", [
      [/^0o[0-7]+$/, (text) => Number.parseInt(text.substring(2), 8)],
      [/^[-+]?[0-9]+$/, (text) => Number.parseInt(text, 10)],
      [/^0x[0-9a-fA-F]+$/, (text) => Number.parseInt(text.substring(2), 16)],
    ]),
    plain("float", [
      [
        /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/,
        (text) =>
          text.slice(-3).toLowerCase() === "nan" ? Number.NaN : text[0] === "-" ? -Infinity : Infinity,
      ],
      [/^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/, Number.parseFloat],
      [/^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/, Number.parseFloat],
    ]),
  ],
});
