import { API_VERSION } from "../manifests/fields.js";
import { formatPath, KIND_SCHEMAS } from "../manifests/manifest.js";
import { isPlainObject } from "../plan/values.js";
import type { Draft } from "./drafts.js";

/**
 * A drafted manifest fitted to its kind's schema, as validate reads it: each field the schema refuses
 * (one no manifest has, one only a create sets, an empty value a manifest may not state) is left out and
 * named for the reviewer, so that what is written validates, states only what the platform answered,
 * and a plan with reads on finds it equal to the live object. A draft that still does not validate
 * (a required field the answer lacks, a list entry it cannot state) is not written.
 */

export type Fitted =
  | {
      spec: Record<string, unknown>;
      /** The fields left out, by why. */
      leftOut: Map<string, string[]>;
    }
  | { error: string };

/** Rounds of leaving fields out before giving up (each round leaves out what the last parse named). */
const ROUNDS = 20;

export function fitToSchema(draft: Draft, name: string): Fitted {
  const spec = structuredClone(draft.spec);
  const leftOut = new Map<string, string[]>();
  /** Leaves out the member at `path` (from the spec) for `why`; false when there is none to leave out. */
  const leave = (why: string, path: readonly PropertyKey[]): boolean => {
    if (!removeAt(spec, path)) return false;
    leftOut.set(why, [...(leftOut.get(why) ?? []), formatPath(path.map(String))]);
    return true;
  };
  for (let round = 0; round < ROUNDS; round++) {
    const document = { apiVersion: API_VERSION, kind: draft.kind, metadata: { name }, spec };
    const parsed = KIND_SCHEMAS[draft.kind].safeParse(document);
    if (parsed.success) return { spec, leftOut };
    let changed = false;
    const problems: string[] = [];
    for (const issue of parsed.error.issues) {
      const path = issue.path.slice(1);
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) if (leave("not a manifest field", [...path, key])) changed = true;
      } else if (issue.path[0] === "spec" && leave(issue.message, path)) changed = true;
      else problems.push(`${formatPath(issue.path.map(String))}: ${issue.message}`);
    }
    if (!changed) return { error: problems.join("; ") || "its manifest does not validate" };
  }
  return { error: "its manifest does not validate" };
}

/**
 * Removes the member at `path` of `value`; false when there is none, or it is a list entry (leaving out
 * a tile or a mapping would delete it from the platform at the next write).
 */
function removeAt(value: Record<string, unknown>, path: readonly PropertyKey[]): boolean {
  const last = path.at(-1);
  if (typeof last !== "string") return false;
  let node: unknown = value;
  for (const step of path.slice(0, -1))
    node = isPlainObject(node) || Array.isArray(node) ? Reflect.get(node, step) : undefined;
  if (!isPlainObject(node) || !(last in node)) return false;
  delete node[last];
  return true;
}
