import type { Kind, ManifestOf } from "../manifests/manifest.js";
import { type SecretRef, secretFields } from "../manifests/secrets.js";
import { Secret } from "../plan/secret.js";
import type { Specs } from "../plan/types.js";
import { member } from "../plan/values.js";
import type { SecretLabels } from "../plan/view.js";
import { desiredWith } from "../reconcile/desired.js";

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

/** Secrets compared by reference (plan --base): a changed reference is sent, an unchanged one is not. */
export function byReference<K extends Kind>(manifest: ManifestOf<K>): Specs[K] {
  return desiredWith(manifest, (ref) => new Secret("", referenceHash(ref)));
}

/**
 * Secrets not read at all (plan --secrets skip): a secret takes the hash last applied at its path, so
 * it is never the only reason to send, and `(not compared)` when nothing was applied there. The ids a
 * planner leaves out of `applied` are top-level fields and never secrets, so the paths agree.
 */
export function withoutSecretValues<K extends Kind>(
  manifest: ManifestOf<K>,
  record: { applied?: Record<string, unknown> } | undefined,
): Specs[K] {
  return desiredWith(manifest, (_ref, path) => {
    let applied: unknown = record?.applied;
    for (const step of path)
      applied = Array.isArray(applied) ? applied[Number(step)] : member(applied, String(step));
    return new Secret("", typeof applied === "string" ? applied : NEVER_APPLIED);
  });
}

/** True when a spec names any secret. */
export const hasReferences = (spec: unknown): boolean => secretFields(spec, []).length > 0;
