import { resolveSecret, type SecretSources, secretFields } from "../manifests/secrets.js";
import { hashSecret, Secret } from "../plan/secret.js";

/**
 * The desired spec of a manifest: every `{fromEnv}` / `{fromFile}` reference resolved into a Secret
 * leaf that carries its salted hash. Resolved at each pass, so a rotated secret is picked up (and sent
 * again because its hash changed). Throws ConfigError naming the reference when one cannot be read.
 */
export async function resolveDesired(
  spec: Record<string, unknown>,
  sources: SecretSources,
  salt: string,
): Promise<Record<string, unknown>> {
  const fields = secretFields(spec, []);
  if (fields.length === 0) return spec;
  const desired = structuredClone(spec);
  for (const { path, ref } of fields) {
    const value = await resolveSecret(ref, sources);
    setAt(desired, path, new Secret(value, hashSecret(value, salt)));
  }
  return desired;
}

function setAt(target: Record<string, unknown>, path: (string | number)[], value: unknown): void {
  let node: Record<string | number, unknown> = target;
  for (const step of path.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
  const last = path.at(-1);
  if (last !== undefined) node[last] = value;
}
