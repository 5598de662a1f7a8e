import { CORE_SCHEMA, loadAll } from "js-yaml";
import { isKind, KIND_SCHEMAS } from "./manifest.js";
import type { ParsedManifest } from "./parse.js";

/**
 * The happy path, for speed: most files of a repository are valid, and js-yaml reads them an order of
 * magnitude faster than the yaml library, which keeps every node's range. Returns the file's
 * manifests when every document in it is valid, or undefined, and the caller reads the file again
 * with the yaml library to find and place the problems. So a problem is only ever reported by the
 * careful path, and positions always come from it (see withPositions).
 *
 * Files with anchors take the careful path directly: only it bounds alias expansion.
 */
export function parseFast(text: string): ParsedManifest[] | undefined {
  if (text.includes("&")) return undefined;
  let documents: unknown[];
  try {
    // CORE_SCHEMA reads scalars as YAML 1.2's core schema does, like the yaml library.
    documents = loadAll(text, undefined, { schema: CORE_SCHEMA });
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
    manifests.push({
      kind: parsed.data.kind,
      name: parsed.data.metadata.name,
      labels: parsed.data.metadata.labels ?? {},
      spec: parsed.data.spec,
      ordinal: manifests.length,
    } as ParsedManifest);
  }
  return manifests;
}
