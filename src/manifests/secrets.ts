import { readFile, realpath } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";
import { z } from "zod";
import { ConfigError } from "../errors.js";
import { SETTINGS } from "../settings.js";

/** The setting that names the secrets folder: its errors say which to set. */
const SECRETS_DIR = SETTINGS.secretsDir;

/**
 * Secret references. A manifest comes from git and is trusted less than the pod, so a credential is
 * never written in it: it names an environment variable (not the daemon's own DRIFTLESS_*) or a file
 * inside DRIFTLESS_SECRETS_DIR.
 */

const PLAIN_TEXT =
  "is a secret: write {fromEnv: NAME} or {fromFile: PATH} (relative to DRIFTLESS_SECRETS_DIR), never the value";

const FromEnv = z.strictObject({
  fromEnv: z
    .string({ error: "must be the name of an environment variable" })
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "must be the name of an environment variable" })
    .refine((name) => !name.toUpperCase().startsWith("DRIFTLESS_"), {
      error: "may not read DRIFTLESS_* variables: those are driftless's own credentials",
    }),
});

const FromFile = z.strictObject({
  fromFile: z
    .string({ error: "must be a path relative to DRIFTLESS_SECRETS_DIR" })
    .min(1, { error: "must be a path relative to DRIFTLESS_SECRETS_DIR" })
    .refine((path) => !isAbsolute(path) && !path.startsWith("/"), {
      error: "must be a path relative to DRIFTLESS_SECRETS_DIR, not an absolute path",
    })
    .refine((path) => !path.split(/[\\/]/).includes(".."), {
      error: "may not contain '..': secrets are read only inside DRIFTLESS_SECRETS_DIR",
    }),
});

const NOT_ONE_SOURCE = "must be either {fromEnv: NAME} or {fromFile: PATH}, not both and nothing else";

export const SecretRef = z
  .union([FromEnv, FromFile], {
    // A mapping is a reference gone wrong; anything else is a value written in plain text.
    error: (issue) => {
      if (issue.code !== "invalid_union") return undefined;
      return typeof issue.input === "object" && issue.input !== null ? NOT_ONE_SOURCE : PLAIN_TEXT;
    },
  })
  .meta({ description: "{fromEnv: NAME} or {fromFile: PATH relative to DRIFTLESS_SECRETS_DIR}" });
export type SecretRef = z.infer<typeof SecretRef>;

/** Where secrets may come from: the process environment and the one folder files may be read in. */
export type SecretSources = {
  env: Readonly<Record<string, string | undefined>>;
  secretsDir: string;
};

/**
 * The value a reference names. A file's value has its trailing newline removed (files written by
 * `echo` or Kubernetes Secrets usually end with one). Throws ConfigError when the variable is unset or
 * empty, the file is missing, or the file's real path (symlinks followed) leaves `secretsDir`.
 */
export async function resolveSecret(ref: SecretRef, sources: SecretSources): Promise<string> {
  if ("fromEnv" in ref) {
    // The schema already refuses these; checked again because a ref may be built by hand.
    if (ref.fromEnv.toUpperCase().startsWith("DRIFTLESS_")) {
      throw new ConfigError(`secret fromEnv ${ref.fromEnv}: DRIFTLESS_* variables may not be read`);
    }
    const value = sources.env[ref.fromEnv];
    if (!value) throw new ConfigError(`secret fromEnv ${ref.fromEnv}: the variable is not set or empty`);
    return value;
  }
  const path = ref.fromFile;
  if (isAbsolute(path) || path.split(/[\\/]/).includes("..")) {
    throw new ConfigError(`secret fromFile ${path}: must be a path inside the secrets folder, without '..'`);
  }
  let root: string;
  try {
    root = await realpath(sources.secretsDir);
  } catch (error) {
    throw new ConfigError(
      `secret fromFile ${path}: the secrets folder ${sources.secretsDir} cannot be read: set ${SECRETS_DIR.env} (${SECRETS_DIR.flag.split(" ")[0]}) to the folder that holds the secret files`,
      { cause: error },
    );
  }
  let real: string;
  try {
    real = await realpath(join(root, path));
  } catch (error) {
    throw new ConfigError(
      `secret fromFile ${path}: no such file in the secrets folder ${sources.secretsDir} (${SECRETS_DIR.env})`,
      { cause: error },
    );
  }
  const inside = relative(root, real);
  if (inside === "") {
    throw new ConfigError(`secret fromFile ${path}: names the secrets folder itself, not a file in it`);
  }
  if (inside.startsWith(`..${sep}`) || inside === ".." || isAbsolute(inside)) {
    throw new ConfigError(
      `secret fromFile ${path}: a symlink leads outside the secrets folder ${sources.secretsDir} (${SECRETS_DIR.env})`,
    );
  }
  try {
    return (await readFile(real, "utf8")).replace(/\r?\n$/, "");
  } catch (error) {
    throw new ConfigError(`secret fromFile ${path}: the file cannot be read`, { cause: error });
  }
}

/** One secret reference inside a spec, with its field path from the document root (`spec`, ...). */
export type SecretField = { path: (string | number)[]; ref: SecretRef };

/**
 * A reference by its shape: one member, fromEnv or fromFile, a string. Enough inside a validated spec
 * (the schemas allow these objects only where a credential is), and far cheaper than a schema check
 * per object, which a pass over 10,000 manifests notices.
 */
function isReferenceShaped(value: object): value is SecretRef {
  let keys = 0;
  for (const _ in value) if (++keys > 1) return false;
  const ref = value as { fromEnv?: unknown; fromFile?: unknown };
  return keys === 1 && (typeof ref.fromEnv === "string" || typeof ref.fromFile === "string");
}

/**
 * Every secret reference in a (validated) spec, depth first, in document order, with its field path
 * from `base` (default the document root, so paths start with `spec`).
 */
export function secretFields(spec: unknown, base: (string | number)[] = ["spec"]): SecretField[] {
  const found: SecretField[] = [];
  // One path, grown and shrunk as the walk goes, copied only for a reference found: a pass walks every
  // spec, and most hold no secret.
  const path = [...base];
  const visit = (value: unknown) => {
    if (value === null || typeof value !== "object") return;
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        path.push(index);
        visit(value[index]);
        path.pop();
      }
      return;
    }
    if (isReferenceShaped(value)) {
      found.push({ path: [...path], ref: value });
      return;
    }
    for (const key in value) {
      path.push(key);
      visit((value as Record<string, unknown>)[key]);
      path.pop();
    }
  };
  visit(spec);
  return found;
}
