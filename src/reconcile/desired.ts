import type { Kind, ManifestOf } from "../manifests/manifest.js";
import {
  resolveSecret,
  type SecretField,
  type SecretRef,
  type SecretSources,
  secretFields,
} from "../manifests/secrets.js";
import { oncePer } from "../once-per.js";
import { hashSecret, Secret } from "../plan/secret.js";
import type { Specs } from "../plan/types.js";
import { setAt } from "../plan/values.js";

/**
 * The desired spec of a manifest: every `{fromEnv}` / `{fromFile}` reference resolved into a Secret
 * leaf that carries its hash (HMAC keyed by `key`). Resolved at each pass, so a rotated secret is picked up (and sent
 * again because its hash changed). Throws ConfigError naming the reference when one cannot be read.
 */
export function resolveDesired<K extends Kind>(
  manifest: ManifestOf<K>,
  sources: SecretSources,
  key: string,
): Specs[K] | Promise<Specs[K]> {
  const fields = fieldsOf(manifest);
  // Most specs hold no secret: answered synchronously, which a pass over 10,000 resources notices.
  if (fields.length === 0) return withLeaves(manifest, fields, () => undefined);
  return Promise.all(fields.map((field) => resolveSecret(field.ref, sources))).then((values) =>
    withLeaves(manifest, fields, (index) => {
      const value = values[index] ?? "";
      return new Secret(value, hashSecret(value, key));
    }),
  );
}

/**
 * The desired spec of a manifest with each secret reference replaced by `leaf(ref, path)`, for plans
 * made without the secret values (a Secret whose hash stands for what can be compared).
 */
export function desiredWith<K extends Kind>(
  manifest: ManifestOf<K>,
  leaf: (ref: SecretRef, path: readonly (string | number)[]) => Secret,
): Specs[K] {
  const fields = fieldsOf(manifest);
  return withLeaves(manifest, fields, (index) => {
    const field = fields[index];
    return field ? leaf(field.ref, field.path) : undefined;
  });
}

/** The secret references of a manifest's spec, found once per spec object. */
const fieldsOf = (manifest: ManifestOf<Kind>): readonly SecretField[] => fieldsOfSpec(manifest.spec);
const fieldsOfSpec = oncePer((spec: object): readonly SecretField[] => secretFields(spec, []));

/**
 * The spec with the leaf of each field in place of its reference; the spec itself when it has none.
 * The one place a spec's type changes: the walk replaces exactly the references, which is what Specs[K]
 * says of the manifest's spec type.
 */
function withLeaves<K extends Kind>(
  manifest: ManifestOf<K>,
  fields: readonly SecretField[],
  leaf: (index: number) => Secret | undefined,
): Specs[K] {
  if (fields.length === 0) return manifest.spec as Specs[K];
  const desired: object = structuredClone(manifest.spec);
  fields.forEach((field, index) => {
    setAt(desired, field.path, leaf(index));
  });
  return desired as Specs[K];
}

/** A secret that is not read: never revealed, never compared (a read's comparison skips secrets). */
const NOT_READ = new Secret("", "(not read)");

/** The desired spec without reading any secret, for what never compares one: drift. */
export function unreadSecrets<K extends Kind>(manifest: ManifestOf<K>): Specs[K] {
  return desiredWith(manifest, () => NOT_READ);
}
