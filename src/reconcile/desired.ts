import type { Kind, ManifestOf } from "../manifests/manifest.js";
import { resolveSecret, type SecretField, type SecretSources, secretFields } from "../manifests/secrets.js";
import { hashSecret, Secret } from "../plan/secret.js";
import type { Specs } from "../plan/types.js";

/**
 * The desired spec of a manifest: every `{fromEnv}` / `{fromFile}` reference resolved into a Secret
 * leaf that carries its salted hash. Resolved at each pass, so a rotated secret is picked up (and sent
 * again because its hash changed). Throws ConfigError naming the reference when one cannot be read.
 */
export function resolveDesired<K extends Kind>(
  manifest: ManifestOf<K>,
  sources: SecretSources,
  salt: string,
): Specs[K] | Promise<Specs[K]> {
  const fields = secretFields(manifest.spec, []);
  // The walk replaces exactly the references, which is what Specs[K] says of the manifest's spec type.
  // Most specs hold no secret: answered synchronously, which a pass over 10,000 resources notices.
  if (fields.length === 0) return manifest.spec as Specs[K];
  return resolveFields(manifest.spec, fields, sources, salt) as Promise<Specs[K]>;
}

async function resolveFields(
  spec: object,
  fields: SecretField[],
  sources: SecretSources,
  salt: string,
): Promise<object> {
  const desired = structuredClone(spec);
  for (const { path, ref } of fields) {
    const value = await resolveSecret(ref, sources);
    setAt(desired, path, new Secret(value, hashSecret(value, salt)));
  }
  return desired;
}

function setAt(target: object, path: readonly (string | number)[], value: unknown): void {
  let node: unknown = target;
  for (const step of path.slice(0, -1)) node = (node as Record<string | number, unknown>)[step];
  const last = path.at(-1);
  if (last !== undefined) (node as Record<string | number, unknown>)[last] = value;
}
