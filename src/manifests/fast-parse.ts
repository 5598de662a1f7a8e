import { CORE_SCHEMA, loadAll } from "js-yaml";
import type { Position } from "../errors.js";
import { isKind, KIND_SCHEMAS, type Locate, type Manifest } from "./manifest.js";
import { documentStart, hasContent, locator, parseYaml } from "./positions.js";

/**
 * The happy path, for speed: most files of a repository are valid, and js-yaml reads them an order of
 * magnitude faster than the yaml library, which keeps every node's range. Returns the file's
 * manifests when every document in it is valid, or undefined, and the caller reads the file again
 * with the yaml library to find and place the problems. So a problem is only ever reported by the
 * careful path; positions of valid manifests are computed by it too, lazily, when first asked for.
 *
 * Files with anchors take the careful path directly: only it bounds alias expansion.
 */
export function parseFast(file: string, text: string): Manifest[] | undefined {
  if (text.includes("&")) return undefined;
  let documents: unknown[];
  try {
    // CORE_SCHEMA reads scalars as YAML 1.2's core schema does, like the yaml library.
    documents = loadAll(text, undefined, { schema: CORE_SCHEMA });
  } catch {
    return undefined;
  }
  const positions = lazyPositions(file, text);
  const manifests: Manifest[] = [];
  for (const value of documents) {
    if (value === null || value === undefined) continue;
    const kind = (value as { kind?: unknown }).kind;
    if (!isKind(kind)) return undefined;
    const parsed = KIND_SCHEMAS[kind].safeParse(value);
    if (!parsed.success) return undefined;
    const ordinal = manifests.length;
    manifests.push(
      withLazyPosition(
        {
          kind: parsed.data.kind,
          name: parsed.data.metadata.name,
          labels: parsed.data.metadata.labels ?? {},
          spec: parsed.data.spec,
        },
        () => positions(ordinal),
      ),
    );
  }
  return manifests;
}

type Where = { position: Position; locate: Locate };

/** The position and locator of the file's n-th non-empty document, from one yaml parse made on demand. */
function lazyPositions(file: string, text: string): (ordinal: number) => Where {
  let located: Where[] | undefined;
  return (ordinal) => {
    if (!located) {
      const yaml = parseYaml(file, text);
      located = yaml.documents
        .filter(hasContent)
        .map((doc) => ({ position: documentStart(doc, yaml.at), locate: locator(doc, yaml.at) }));
    }
    return (
      located[ordinal] ?? { position: { file, line: 1, col: 1 }, locate: () => ({ file, line: 1, col: 1 }) }
    );
  };
}

function withLazyPosition(base: Omit<Manifest, "position" | "locate">, where: () => Where): Manifest {
  let memo: Where | undefined;
  const get = () => {
    memo ??= where();
    return memo;
  };
  return Object.defineProperties(base, {
    position: { get: () => get().position, enumerable: true },
    locate: { value: ((path, options) => get().locate(path, options)) satisfies Locate, enumerable: false },
  }) as Manifest;
}
