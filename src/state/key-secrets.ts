import { randomBytes } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import type { KeyPair } from "../credentials.js";
import { ConfigError, errnoOf, StateError } from "../errors.js";
import type { SecretsApi, StoredSecret } from "../kubernetes/key-secrets-api.js";
import type { SecretTarget } from "../manifests/specs/api-key.js";
import { writeFileAtomic } from "./durable-write.js";

/**
 * Where the id and secret of an API key driftless creates are kept for whoever uses the key: a file
 * under DRIFTLESS_KEY_SECRETS_DIR (JSON `{keyId, keySecret}`, mode 0600) or a Kubernetes Secret in
 * driftless's namespace (keys `keyId` and `keySecret`). The pair is written before the create is sent,
 * so that no crash can leave a key whose secret nobody has; a target that already holds a pair is never
 * overwritten, unless it is the pair of this very key's create (sent again after an unknown outcome). A
 * Secret that exists with no data holds no pair: an installation creates it empty ahead, so that
 * driftless's Role needs no `create`.
 */

/** Reads and writes the key pairs of secret targets. Throws StateError (an I/O or API failure). */
export interface KeySecrets {
  /** The pair `target` holds; undefined when it holds none. */
  read(target: SecretTarget): Promise<KeyPair | undefined>;
  /** Writes `pair` to `target` (made, or replaced). */
  write(target: SecretTarget, pair: KeyPair): Promise<void>;
}

/** A new key id (20 upper-case hex characters) and secret (40 URL-safe base64 characters). */
export function newKeyPair(random: (bytes: number) => Buffer = randomBytes): KeyPair {
  return {
    keyId: random(10).toString("hex").toUpperCase(),
    keySecret: random(30).toString("base64url"),
  };
}

const StoredPair = z.object({ keyId: z.string().min(1), keySecret: z.string().min(1) });

/** What a target is called in messages. */
export const targetName = (target: SecretTarget): string =>
  "file" in target ? `file ${target.file}` : `Secret ${target.kubernetesSecret}`;

export type KeySecretsOptions = {
  /** DRIFTLESS_KEY_SECRETS_DIR: the folder of `{file: NAME}` targets. */
  dir: string;
  /** The Secrets of driftless's namespace, for `{kubernetesSecret: NAME}` targets; made when first used. */
  kubernetes?: () => Promise<SecretsApi>;
};

export function createKeySecrets(options: KeySecretsOptions): KeySecrets {
  return {
    read: (target) =>
      "file" in target ? readFileTarget(options.dir, target.file) : readSecret(options, target),
    write: (target, pair) =>
      "file" in target ? writeFileTarget(options.dir, target.file, pair) : writeSecret(options, target, pair),
  };
}

async function readFileTarget(dir: string, name: string): Promise<KeyPair | undefined> {
  const path = join(dir, name);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw new StateError(`cannot read the key secret file ${path}: ${String(errnoOf(error) ?? error)}`, {
      cause: error,
    });
  }
  const parsed = StoredPair.safeParse(safeJson(text));
  if (!parsed.success)
    throw new StateError(
      `the key secret file ${path} holds no {keyId, keySecret}: driftless writes no key's secret over a file it cannot read; move it away`,
    );
  return parsed.data;
}

async function writeFileTarget(dir: string, name: string, pair: KeyPair): Promise<void> {
  const path = join(dir, name);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(path, `${JSON.stringify(pair)}\n`, 0o600);
  } catch (error) {
    throw new StateError(`cannot write the key secret file ${path}: ${String(errnoOf(error) ?? error)}`, {
      cause: error,
    });
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function kubernetesOf(options: KeySecretsOptions): Promise<SecretsApi> {
  if (!options.kubernetes)
    throw new ConfigError(
      "a key's secretTarget names a Kubernetes Secret, but driftless has no Kubernetes API here: run it in a cluster (or with KUBECONFIG), or use secretTarget: {file: NAME}",
    );
  return options.kubernetes();
}

async function readSecret(
  options: KeySecretsOptions,
  { kubernetesSecret: name }: { kubernetesSecret: string },
): Promise<KeyPair | undefined> {
  const secrets = await kubernetesOf(options);
  return pairIn(secrets.namespace, name, await secrets.read(name));
}

/**
 * Writes `pair` to Secret `name`, read first: filled when it is empty (an installation created it ahead,
 * so that driftless's Role needs no `create`), created when it is missing, left when it already holds
 * this pair. Another key's pair, or anything else, is never written over, even when it appeared since
 * the create read the target.
 */
async function writeSecret(
  options: KeySecretsOptions,
  { kubernetesSecret: name }: { kubernetesSecret: string },
  pair: KeyPair,
): Promise<void> {
  const secrets = await kubernetesOf(options);
  const current = await secrets.read(name);
  const held = pairIn(secrets.namespace, name, current);
  if (held?.keyId === pair.keyId && held.keySecret === pair.keySecret) return;
  if (held)
    throw new StateError(
      `the Secret ${secrets.namespace}/${name} now holds the id and secret of another key (its id ends ${held.keyId.slice(-4)}): driftless writes no key's secret over it`,
    );
  await secrets.write(name, { keyId: pair.keyId, keySecret: pair.keySecret }, current);
}

/**
 * The pair a Secret holds: none when it is missing or empty (created ahead by the installation). Throws
 * StateError when it holds something else, which driftless never writes over.
 */
function pairIn(namespace: string, name: string, secret: StoredSecret | undefined): KeyPair | undefined {
  if (secret === undefined || Object.keys(secret.data).length === 0) return undefined;
  const parsed = StoredPair.safeParse(secret.data);
  if (!parsed.success)
    throw new StateError(
      `the Secret ${namespace}/${name} exists but holds no keyId and keySecret: driftless writes no key's secret over it; choose another secretTarget or delete it`,
    );
  return parsed.data;
}
