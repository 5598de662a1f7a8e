import {
  type Document,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  parseAllDocuments,
  type YAMLMap,
} from "yaml";
import type { Position } from "../errors.js";
import type {
  FieldPath,
  InvalidDocument,
  Locate,
  Manifest,
  ParsedInvalid,
  ParsedManifest,
} from "./manifest.js";

/** A file parsed by the yaml library, which knows where every node is. */
export type YamlFile = {
  documents: Document.Parsed[];
  /** 1-based line and column of a source offset. */
  at(offset: number): Position;
};

/**
 * Parses `text` keeping node ranges. Never throws: problems are in each document's `errors` and
 * `warnings`. Always YAML 1.2's core schema, whatever a `%YAML 1.1` directive says, so `yes` is a
 * string and `0777` decimal in every file, as the fast reader reads them.
 */
export function parseYaml(file: string, text: string): YamlFile {
  const lineCounter = new LineCounter();
  // prettyErrors off: yaml's pretty printer itself exhausts memory on hostile one-line inputs.
  const parsed = parseAllDocuments(text, {
    lineCounter,
    prettyErrors: false,
    schema: "core",
    // yaml's own check compares each key with every earlier one: minutes on a file of 80,000 keys.
    // parse.ts checks with a set instead (duplicateKey).
    uniqueKeys: false,
  });
  return {
    documents: Array.isArray(parsed) ? parsed : [],
    at: (offset) => ({ file, ...lineCounter.linePos(Math.max(0, offset)) }),
  };
}

/**
 * The first key of `map` that names a property an earlier key already named. Compared once read:
 * `1` and `"1"`, or `null` and `""`, are the same property, and the later one would silently win.
 */
export function duplicateKey(map: YAMLMap): Node | undefined {
  const seen = new Set<string>();
  for (const { key } of map.items) {
    if (!isScalar(key)) continue;
    const text = key.value === null ? "" : String(key.value);
    if (seen.has(text)) return key;
    seen.add(text);
  }
  return undefined;
}

/** A document that holds something (not an empty `---` section or a file of comments). */
export const hasContent = (doc: Document.Parsed): boolean =>
  !(doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null));

/** Where the document's content starts. */
export const documentStart = (doc: Document.Parsed, at: YamlFile["at"]): Position =>
  at(doc.contents?.range[0] ?? doc.range[0]);

/** A Locate for one document: field paths to positions, through the document's node ranges. */
export const locator =
  (doc: Document.Parsed, at: YamlFile["at"]): Locate =>
  (path, options) =>
    at(offsetOf(doc, path, options?.key ?? false));

/** The source offset of `path`: its value, or its key; else its deepest existing parent. */
function offsetOf(doc: Document.Parsed, path: FieldPath, key: boolean): number {
  let node: unknown = doc.contents;
  let offset = doc.contents?.range[0] ?? 0;
  for (let i = 0; i < path.length; i++) {
    if (isAlias(node)) node = node.resolve(doc);
    const step = path[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === step);
      if (!pair) return offset;
      const keyOffset = isScalar(pair.key) && pair.key.range ? pair.key.range[0] : offset;
      if (key && i === path.length - 1) return keyOffset;
      node = pair.value;
      const range = (node as Node | null)?.range;
      // `key:` with no value has no range of its own: point at the key.
      if (!range) return keyOffset;
      offset = range[0];
    } else if (isSeq(node) && typeof step === "number") {
      node = node.items[step];
      const range = (node as Node | undefined)?.range;
      if (!range) return offset;
      offset = range[0];
    } else {
      return offset;
    }
  }
  return offset;
}

/**
 * Whether a document counts when numbering a file's documents: it holds something, or it is broken.
 * Both readers of a file number documents this way, so an ordinal means the same document to both.
 */
export const isDocument = (doc: Document.Parsed): boolean => doc.errors.length > 0 || hasContent(doc);

type Where = { position: Position; locate: Locate };

/**
 * Where each document of a file is, by ordinal, computed on first use by one yaml parse of the file's
 * text: most manifests are valid and most positions are never asked for.
 */
function documentPlaces(file: string, text: string): (ordinal: number) => Where {
  let located: Where[] | undefined;
  return (ordinal) => {
    if (!located) {
      const yaml = parseYaml(file, text);
      located = yaml.documents
        .filter(isDocument)
        .map((doc) => ({ position: documentStart(doc, yaml.at), locate: locator(doc, yaml.at) }));
    }
    const start = { file, line: 1, col: 1 };
    return located[ordinal] ?? { position: start, locate: () => start };
  };
}

/** Manifests with their positions, each found on first use (documentPlaces). */
export function withPositions(file: string, text: string, parsed: readonly ParsedManifest[]): Manifest[] {
  const whereOf = documentPlaces(file, text);
  return parsed.map(({ ordinal, ...manifest }) => {
    let memo: Where | undefined;
    const where = () => {
      memo ??= whereOf(ordinal);
      return memo;
    };
    const locate: Locate = (path, options) => where().locate(path, options);
    return Object.defineProperties(manifest, {
      position: { get: () => where().position, enumerable: true },
      locate: { value: locate, enumerable: false },
    }) as Manifest;
  });
}

/** Invalid documents with a `locate` for their fields (their start is known from the parse). */
export function locatedInvalid(
  file: string,
  text: string,
  parsed: readonly ParsedInvalid[],
): InvalidDocument[] {
  if (parsed.length === 0) return [];
  const whereOf = documentPlaces(file, text);
  return parsed.map(({ ordinal, ...document }) => ({
    ...document,
    locate: (path, options) => whereOf(ordinal).locate(path, options),
  }));
}
