import type { SecretRef } from "../manifests/secrets.js";
import { Secret } from "../plan/secret.js";
import { member } from "../plan/values.js";
import type { SecretLabels } from "../plan/view.js";

/**
 * Desired specs built without reading a single secret value, for plans made where the secrets are not
 * available (a pull request's CI job). Each `{fromEnv}` / `{fromFile}` reference becomes a Secret leaf
 * with an empty value that is never sent (these plans have no sender) and a hash that stands for it.
 */

/** `plan --secrets skip`: every secret shows as not compared. */
export const NOT_COMPARED: SecretLabels = { changed: "(not compared)", unchanged: "(not compared)" };

/** `plan --base`: secrets are compared by their reference. */
export const BY_REFERENCE: SecretLabels = {
  changed: "(reference changed)",
  unchanged: "(reference unchanged)",
};

const NEVER_APPLIED = "(not compared)";

/** A reference as a hash: two specs naming the same variable or file compare equal. */
export const referenceHash = (ref: SecretRef): string =>
  "fromEnv" in ref ? `reference:fromEnv:${ref.fromEnv}` : `reference:fromFile:${ref.fromFile}`;

/** `spec` with each secret reference replaced by `leaf(ref, path)`; the spec itself is not changed. */
function replaceReferences(
  spec: Record<string, unknown>,
  leaf: (ref: SecretRef, path: (string | number)[]) => Secret,
): Record<string, unknown> {
  const fields = referencesIn(spec, []);
  // Most specs hold no secret: no copy is made, which shows at 10,000 manifests.
  if (fields.length === 0) return spec;
  const desired = structuredClone(spec);
  for (const { path, ref } of fields) {
    let node = desired as Record<string | number, unknown>;
    for (const step of path.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
    node[path.at(-1) as string | number] = leaf(ref, path);
  }
  return desired;
}

/** Secrets compared by reference (plan --base): a changed reference is sent, an unchanged one is not. */
export function byReference(spec: Record<string, unknown>): Record<string, unknown> {
  return replaceReferences(spec, (ref) => new Secret("", referenceHash(ref)));
}

/**
 * Secrets not read at all (plan --secrets skip): a secret takes the hash last applied at its path, so
 * it is never the only reason to send, and `(not compared)` when nothing was applied there. The ids a
 * planner leaves out of `applied` are top-level fields and never secrets, so the paths agree.
 */
export function withoutSecretValues(
  spec: Record<string, unknown>,
  record: { applied?: Record<string, unknown> } | undefined,
): Record<string, unknown> {
  return replaceReferences(spec, (_ref, path) => {
    let applied: unknown = record?.applied;
    for (const step of path)
      applied = Array.isArray(applied) ? applied[Number(step)] : member(applied, String(step));
    return new Secret("", typeof applied === "string" ? applied : NEVER_APPLIED);
  });
}

/**
 * Where a (validated) spec holds secret references: the schemas allow these objects only where a
 * credential is, so the shape is enough, and far cheaper than a schema check per object.
 */
function referencesIn(
  value: unknown,
  path: (string | number)[],
): { path: (string | number)[]; ref: SecretRef }[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => referencesIn(item, [...path, index]));
  if (value === null || typeof value !== "object") return [];
  const entries = Object.entries(value);
  const [only] = entries;
  if (
    entries.length === 1 &&
    only &&
    (only[0] === "fromEnv" || only[0] === "fromFile") &&
    typeof only[1] === "string"
  )
    return [{ path, ref: value as SecretRef }];
  return entries.flatMap(([key, child]) => referencesIn(child, [...path, key]));
}

/** True when a spec names any secret. */
export const hasReferences = (spec: unknown): boolean => referencesIn(spec, []).length > 0;
