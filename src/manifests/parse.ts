import { type Document, isCollection, isMap, isNode, isPair, isScalar, type Node } from "yaml";
import type { z } from "zod";
import type { Position } from "../errors.js";
import { parseFast } from "./fast-parse.js";
import { isMapping } from "./fields.js";
import {
  type FieldPath,
  formatPath,
  isKind,
  KIND_SCHEMAS,
  KINDS,
  type Locate,
  type ParsedInvalid,
  type ParsedManifest,
} from "./manifest.js";
import { documentStart, duplicateKey, isDocument, locator, parseYaml, type YamlFile } from "./positions.js";
import type { Problem } from "./problem.js";
import { fieldsAt, nearest } from "./suggest.js";

/** The largest manifest file read, in bytes (load.ts): a manifest is a few KiB. */
export const MAX_MANIFEST_BYTES = 1024 * 1024;

/** Limits on what one file may make the parser do; a manifest is small and flat. */
export type ParseLimits = {
  /** Aliases one document may expand (yaml's maxAliasCount); default 100. */
  maxAliases: number;
  /** Nesting of maps and lists in a document; default 32 (the deepest kind needs 8). */
  maxDepth: number;
  /**
   * The size of a document with its aliases expanded (expandedSize); default MAX_MANIFEST_BYTES.
   * yaml's alias count bounds aliases within aliases, not what one alias repeats: 100 aliases to a
   * list of 200,000 numbers pass it and make 20 million values, which every later step (the schema,
   * the plan, the state) copies again.
   */
  maxExpandedSize: number;
};

export const DEFAULT_PARSE_LIMITS: ParseLimits = {
  maxAliases: 100,
  maxDepth: 32,
  maxExpandedSize: MAX_MANIFEST_BYTES,
};

/**
 * A valid manifest as parsed, before positions are attached: plain data, so it can cross from a
 * worker thread. `ordinal` is its document's index among the file's non-empty documents.
 */

export type ParsedFile = { manifests: ParsedManifest[]; problems: Problem[]; invalid: ParsedInvalid[] };

const ENVELOPE = "a manifest is a mapping with apiVersion, kind, metadata and spec";

const NOUNS: Record<string, string> = {
  object: "a mapping",
  array: "a list",
  int: "an integer",
  number: "a number",
  string: "a string",
  boolean: "true or false",
};

/**
 * Friendlier words for zod's generic type messages; messages set in the schemas win over these. An id
 * like 000123 or a version like 1.10 is read by YAML as a number: say how to keep it a string.
 */
const messages: z.core.$ZodErrorMap = (issue) => {
  if (issue.code !== "invalid_type") return undefined;
  const wanted = `must be ${NOUNS[issue.expected] ?? issue.expected}`;
  const got = typeof issue.input;
  if (issue.expected === "string" && (got === "number" || got === "boolean")) {
    return `${wanted}: put it in quotes, YAML read it as a ${got}`;
  }
  return wanted;
};

/**
 * The manifests of one file's text, and the problems of the documents that are not. One broken
 * document never hides the others: each is parsed and validated on its own. Most files are valid and
 * take the fast path; any file with a problem is read again by the yaml library, whose node ranges
 * give every problem its line and column.
 */
export function parseManifestFile(file: string, text: string, limits = DEFAULT_PARSE_LIMITS): ParsedFile {
  const fast = parseFast(text);
  if (fast) return { manifests: fast, problems: [], invalid: [] };
  return parseCarefully(file, text, limits);
}

/** The yaml library's reading of a file, the one that decides: what parseManifestFile gives when slow. */
export function parseCarefully(file: string, text: string, limits = DEFAULT_PARSE_LIMITS): ParsedFile {
  const deep = deepNesting(text, MAX_TEXT_NESTING);
  if (deep !== undefined) {
    const message = "the YAML is nested too deeply or too large to parse";
    return { manifests: [], problems: [{ ...lineAndColumn(file, text, deep), message }], invalid: [] };
  }
  const yaml = parseYaml(file, text);
  const result: ParsedFile = { manifests: [], problems: [], invalid: [] };
  yaml.documents.filter(isDocument).forEach((doc, ordinal) => {
    parseDocument(doc, ordinal, yaml.at, limits, result);
  });
  return result;
}

function parseDocument(
  doc: Document.Parsed,
  ordinal: number,
  at: YamlFile["at"],
  limits: ParseLimits,
  result: ParsedFile,
): void {
  const start = documentStart(doc, at);
  // Even a document that cannot be read whole usually says what it is: name it in its problems.
  const resource = peekResource(doc);
  const report = (position: Position, message: string, extra: Partial<Problem> = {}) =>
    result.problems.push({ ...position, resource, ...extra, message });
  // Called once a document is known to be invalid, with what could be read of it.
  const rejected = (read: Pick<ParsedInvalid, "kind" | "name" | "spec"> = {}) =>
    result.invalid.push({ ordinal, position: start, ...(resource ? { resource } : {}), ...read });

  // Warnings too (an unknown tag kept as a string, an unknown directive): a manifest is read one way only.
  const errors = [...doc.errors, ...doc.warnings];
  if (errors.length > 0) {
    for (const error of errors) {
      const message =
        error.code === "RESOURCE_EXHAUSTION"
          ? "the YAML is nested too deeply or too large to parse"
          : `invalid YAML: ${error.message}`;
      // Where yaml ran out of stack depends on the stack: the document's start is a stable place.
      report(error.code === "RESOURCE_EXHAUSTION" ? at(doc.range[0]) : at(error.pos[0]), message);
    }
    rejected();
    return;
  }
  // Empty documents (a trailing `---`, a file of comments) were left out by the caller.
  if (!doc.contents) return;

  // Checked on the nodes, before toJS would quietly turn any of these into something else.
  const odd = oddNode(doc.contents, limits.maxDepth);
  if (odd) {
    const field = odd.path?.length ? formatPath(odd.path) : undefined;
    report(at(odd.node.range?.[0] ?? 0), odd.message, { field });
    rejected();
    return;
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: limits.maxAliases });
  } catch (error) {
    report(start, `too many aliases (more than ${limits.maxAliases}): ${(error as Error).message}`);
    rejected();
    return;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    report(start, ENVELOPE);
    rejected();
    return;
  }
  const size = expandedSize(value, limits.maxExpandedSize);
  if (size > limits.maxExpandedSize) {
    const why =
      size === Number.POSITIVE_INFINITY
        ? "an alias names a value that contains the alias: the document never ends"
        : `its aliases expand it past ${limits.maxExpandedSize} characters of data, more than a manifest file may hold: write the repeated values out, or split it`;
    report(start, why);
    rejected();
    return;
  }
  const raw = value as Record<string, unknown>;
  const locate = locator(doc, at);
  if (!isKind(raw.kind)) {
    report(locate(["kind"]), unknownKind(raw.kind), { field: raw.kind === undefined ? undefined : "kind" });
    rejected();
    return;
  }
  const schema = KIND_SCHEMAS[raw.kind];
  const parsed = schema.safeParse(raw, { error: messages });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      for (const problem of issueProblems(issue, raw, locate, schema))
        report(problem.position, problem.message, { resource, field: problem.field });
    }
    const { metadata, spec } = raw;
    const name = isMapping(metadata) && typeof metadata.name === "string" ? metadata.name : undefined;
    rejected({ kind: raw.kind, ...(name ? { name } : {}), ...(isMapping(spec) ? { spec } : {}) });
    return;
  }
  const data = parsed.data;
  result.manifests.push({
    kind: data.kind,
    name: data.metadata.name,
    labels: data.metadata.labels ?? {},
    annotations: data.metadata.annotations ?? {},
    spec: data.spec,
    ordinal,
  } as ParsedManifest);
}

/** What validate says of a `kind` that is none of KINDS, with the kind a typo was meant to be. */
function unknownKind(kind: unknown): string {
  if (kind === undefined) return `kind is required: ${ENVELOPE}`;
  const near = typeof kind === "string" ? nearest(kind, KINDS) : undefined;
  return `must be one of ${KINDS.join(", ")}${near ? `; did you mean ${near}?` : ""}`;
}

/**
 * One zod issue as problems: an unknown-fields issue names each field at its key; a field that is not
 * there at all is "required", whatever type the schema wanted.
 */
function issueProblems(issue: z.core.$ZodIssue, raw: unknown, locate: Locate, schema: z.ZodType) {
  const path = issue.path.filter((step): step is string | number => typeof step !== "symbol");
  if (issue.code === "unrecognized_keys") {
    const known = fieldsAt(schema, path);
    return issue.keys.map((key) => {
      // Everything under spec mirrors a request body; a field outside it is a typo or belongs elsewhere.
      const unknown = path[0] === "spec" ? "unknown field (not in the API's request body)" : "unknown field";
      const near = nearest(key, known);
      return {
        position: locate([...path, key], { key: true }),
        field: formatPath([...path, key]),
        message: near ? `${unknown}; did you mean ${near}?` : unknown,
      };
    });
  }
  // A record's key broke its rule: zod says only "Invalid key"; the rule's own words are inside.
  if (issue.code === "invalid_key") {
    return [
      {
        position: locate(path, { key: true }),
        field: formatPath(path),
        message: issue.issues[0]?.message ?? issue.message,
      },
    ];
  }
  // A rule between fields says why its missing field is needed; zod's own "required" says only that.
  const missing = path.length > 0 && issue.code !== "custom" && !isPresent(raw, path);
  return [
    {
      position: locate(path),
      field: path.length ? formatPath(path) : undefined,
      message: missing ? "is required" : issue.message,
    },
  ];
}

/** Whether the plain value has a key at every step of `path`. */
function isPresent(value: unknown, path: FieldPath): boolean {
  let current = value;
  for (const step of path) {
    if (current === null || typeof current !== "object" || !Object.hasOwn(current, step)) return false;
    current = (current as Record<string | number, unknown>)[step];
  }
  return current !== undefined;
}

/** `Kind/name` from the top of a document, read node by node so a broken document can still be named. */
function peekResource(doc: Document.Parsed): string | undefined {
  if (!isMap(doc.contents)) return undefined;
  const kind = doc.contents.get("kind");
  if (typeof kind !== "string" || kind === "") return undefined;
  const metadata = doc.contents.get("metadata", true);
  const name = isMap(metadata) ? metadata.get("name") : undefined;
  return `${kind}/${typeof name === "string" && name !== "" ? name : "?"}`;
}

// Far above any manifest (maxDepth, checked on the parsed nodes, is 32) and far below what costs yaml
// memory (1 MiB of `[` takes it about a gigabyte).
const MAX_TEXT_NESTING = 1000;

/**
 * The offset where flow collections (`[[[...`) or compact block entries on one line (`- - - ...`)
 * go deeper than `max`, found in the text: yaml needs about a gigabyte to build 1 MiB of them.
 * Brackets inside quotes count too; a manifest never has dozens of unclosed ones.
 */
function deepNesting(text: string, max: number): number | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return i;
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  return new RegExp(`^[ \\t]*(?:[-?:][ \\t]+){${max + 1}}`, "m").exec(text)?.index;
}

/**
 * The size of `value` as if every alias were a copy of what it names: 1 per list, map and scalar, and
 * a string's or key's length (never more than the YAML text of a document without aliases takes),
 * counted up to `limit` (then limit + 1) without making the copies. A value reached again is counted
 * again from its first count; one that contains itself (an alias to an enclosing anchor) never ends:
 * Infinity.
 */
export function expandedSize(value: unknown, limit: number): number {
  const sizes = new Map<object, number>();
  const open = new Set<object>();
  const stack: Array<{ node: object; entered: boolean }> = [];
  const sizeOf = (node: unknown): number | undefined => {
    if (typeof node === "string") return Math.max(1, node.length);
    if (typeof node !== "object" || node === null) return 1;
    return sizes.get(node);
  };
  const visit = (node: unknown): boolean => {
    if (typeof node !== "object" || node === null || sizes.has(node)) return true;
    if (open.has(node)) return false;
    stack.push({ node, entered: false });
    return true;
  };
  if (!visit(value)) return Number.POSITIVE_INFINITY;
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as { node: object; entered: boolean };
    // Pushed twice by two aliases of one parent, and counted meanwhile.
    if (!top.entered && sizes.has(top.node)) {
      stack.pop();
      continue;
    }
    const children: Array<[string, unknown]> = Array.isArray(top.node)
      ? top.node.map((child) => ["", child])
      : Object.entries(top.node);
    if (!top.entered) {
      top.entered = true;
      open.add(top.node);
      for (const [, child] of children) if (!visit(child)) return Number.POSITIVE_INFINITY;
      continue;
    }
    stack.pop();
    open.delete(top.node);
    let size = 1;
    for (const [key, child] of children) size = Math.min(limit + 1, size + key.length + (sizeOf(child) ?? 0));
    sizes.set(top.node, size);
  }
  return sizeOf(value) ?? limit + 1;
}

function lineAndColumn(file: string, text: string, offset: number): Position {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf("\n") + 1;
  return { file, line: before.split("\n").length, col: offset - lineStart + 1 };
}

/**
 * The first node no manifest has: nested deeper than `maxDepth`, a list or mapping as a key (yaml
 * would stringify it with a process warning, js-yaml another way), a key repeated, or a tag that
 * changes a value's type.
 */
function oddNode(root: Node, maxDepth: number): OddNode | undefined {
  let odd: OddNode | undefined;
  findNode(root, (node, place) => {
    odd = nodeProblem(node, place, maxDepth);
    return odd !== undefined;
  });
  return odd;
}

type OddNode = { node: Node; message: string; path?: FieldPath };

function nodeProblem(node: Node, { depth, path, isKey }: NodePlace, maxDepth: number): OddNode | undefined {
  // No path: 32 levels of [0] say less than the position does.
  if (depth > maxDepth && isCollection(node)) {
    return { node, message: `nested deeper than ${maxDepth} levels: not a manifest` };
  }
  if (isKey && isCollection(node)) {
    return { node, path, message: "a key must be plain text, not a list or a mapping" };
  }
  if (node.tag !== undefined && !CORE_TAGS.has(node.tag)) {
    return {
      node,
      path,
      message: `the YAML tag ${shortTag(node.tag)} is not supported: write the plain value (binary data, timestamps and sets have no place in a manifest)`,
    };
  }
  const repeated = isMap(node) ? duplicateKey(node) : undefined;
  if (!repeated) return undefined;
  const key = isScalar(repeated) ? String(repeated.value) : "?";
  return { node: repeated, path: [...path, key], message: "invalid YAML: Map keys must be unique" };
}

/** Explicit tags that only restate what a plain value is; others (!!binary, !!timestamp, !custom) are refused. */
const CORE_TAGS = new Set(
  ["str", "int", "float", "bool", "null", "map", "seq"].map((name) => `tag:yaml.org,2002:${name}`),
);

const shortTag = (tag = "") => tag.replace(/^tag:yaml\.org,2002:/, "!!");

/** Where a node is: its depth (1 is the document's top), field path, and whether it is a key. */
type NodePlace = { depth: number; path: FieldPath; isKey: boolean };

/** The first node, key or value, for which `test` holds, found without recursion. */
function findNode(root: Node, test: (node: Node, place: NodePlace) => boolean): Node | undefined {
  const stack: [Node, NodePlace][] = [[root, { depth: 1, path: [], isKey: false }]];
  while (stack.length > 0) {
    const [node, { depth, path, isKey }] = stack.pop() as [Node, NodePlace];
    if (test(node, { depth, path, isKey })) return node;
    if (!isCollection(node)) continue;
    node.items.forEach((item, index) => {
      if (isPair(item)) {
        if (isNode(item.key)) stack.push([item.key, { depth: depth + 1, path, isKey: true }]);
        const step = isScalar(item.key) ? String(item.key.value) : "?";
        if (isNode(item.value))
          stack.push([item.value, { depth: depth + 1, path: [...path, step], isKey: false }]);
      } else if (isNode(item)) stack.push([item, { depth: depth + 1, path: [...path, index], isKey: false }]);
    });
  }
  return undefined;
}
