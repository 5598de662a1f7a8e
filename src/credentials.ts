import { readFileSync } from "node:fs";
import { ConfigError } from "./errors.js";

/**
 * Credentials, in one place: the daemon's own (a platform key, a token, a webhook secret), given as a
 * value or as a file re-read at each use, and the credential fields of the manifests and requests.
 */

/**
 * A credential of the daemon's, given directly or as a file to read. Files are re-read on every use,
 * so a rotated credential is picked up without a restart.
 */
export type Credential = { value: string } | { file: string };

/** The current value of a credential; throws ConfigError when its file cannot be read. */
export function readCredential(credential: Credential | undefined): string | undefined {
  if (!credential) return undefined;
  if ("value" in credential) return credential.value;
  try {
    return readFileSync(credential.file, "utf8").trim();
  } catch (error) {
    throw new ConfigError(`cannot read credential file ${credential.file}`, { cause: error });
  }
}

/**
 * The credential fields of the manifests and requests. In a manifest they are secret references, never
 * plain text; in an answer they are never kept; in a log line they are redacted.
 */
export const CREDENTIAL_FIELDS = ["password", "secretKey", "accessKeyId", "connectionString"] as const;

/**
 * The id and secret of an API key driftless creates: made by driftless, written where the manifest's
 * `secretTarget` says before the create is sent, and sent only as hashes. Never logged nor stored in
 * the state.
 */
export type KeyPair = { keyId: string; keySecret: string };
