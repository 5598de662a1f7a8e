import { resolveSecret, type SecretRef, type SecretSources } from "../manifests/secrets.js";
import { hashSecret, Secret } from "../plan/secret.js";

/**
 * The desired spec of a manifest: every `{fromEnv}` / `{fromFile}` reference resolved into a Secret
 * leaf that carries its salted hash. Resolved at each pass, so a rotated secret is picked up (and sent
 * again because its hash changed). Throws ConfigError naming the reference when one cannot be read.
 */
export function resolveDesired(
  spec: Record<string, unknown>,
  sources: SecretSources,
  salt: string,
): Record<string, unknown> | Promise<Record<string, unknown>> {
  const fields = secretRefs(spec, []);
  // Most specs hold no secret: answered synchronously, which a pass over 10,000 resources notices.
  if (fields.length === 0) return spec;
  return resolveFields(spec, fields, sources, salt);
}

async function resolveFields(
  spec: Record<string, unknown>,
  fields: { path: (string | number)[]; ref: SecretRef }[],
  sources: SecretSources,
  salt: string,
): Promise<Record<string, unknown>> {
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

/**
 * Where the spec holds secret references. The schema already allows them only where credentials are,
 * so the shape (one member, fromEnv or fromFile, a string) is enough; cheaper than a schema check per
 * object, which matters at 10,000 manifests a pass.
 */
function secretRefs(
  value: unknown,
  path: (string | number)[],
): { path: (string | number)[]; ref: SecretRef }[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => secretRefs(item, [...path, index]));
  if (value === null || typeof value !== "object") return [];
  const entries = Object.entries(value);
  const [only] = entries;
  if (
    entries.length === 1 &&
    only &&
    (only[0] === "fromEnv" || only[0] === "fromFile") &&
    typeof only[1] === "string"
  ) {
    return [{ path, ref: value as SecretRef }];
  }
  return entries.flatMap(([key, child]) => secretRefs(child, [...path, key]));
}
