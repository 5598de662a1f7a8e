import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../config.js";
import { type Credential, readCredential } from "../credentials.js";
import { ConfigError } from "../errors.js";
import { basicAuthorization } from "../platform/management.js";
import { SETTINGS } from "../settings.js";

/**
 * Which management key a request for an organization goes with. A key acts on its own organization
 * only, so a daemon that serves several organizations holds one key per organization: the files
 * `<organizationId>.key-id` and `<organizationId>.key-secret` in DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR
 * (one Kubernetes Secret mounts as exactly this), else the single key of DRIFTLESS_MANAGEMENT_KEY_ID /
 * _SECRET. Files are read at every use, so a rotated key, or an organization added to the Secret,
 * applies without a restart.
 */

export type ManagementKey = {
  /**
   * Where the key comes from (`<dir>/<organizationId>.key-*`, or the single key's variable): the
   * identity of the credential, so each gets one HTTP client and one rate budget. Never the secret.
   */
  source: string;
  /** The key id, read now; for the lock-out guard. */
  id(): string;
  /** The Authorization header, read now. */
  authorization(): string;
};

export interface ManagementKeys {
  /** True when organizations may have keys of their own (the folder is set); false: one key for all. */
  perOrganization: boolean;
  /** The key of `organizationId`. Throws ConfigError naming what to add when it has none. */
  of(organizationId: string): ManagementKey;
  /** Throws ConfigError when the configured credentials cannot serve anything (checked at start). */
  check(): void;
}

/** The built-in simulator's key, used for every organization when no management URL is set. */
export type FixedKey = { id: string; secret: string };

/** The management keys of `config`; `fixed` replaces them all (the built-in simulator). */
export function managementKeys(config: Config, fixed?: FixedKey): ManagementKeys {
  if (fixed) {
    const key: ManagementKey = {
      source: "built-in simulator",
      id: () => fixed.id,
      authorization: () => basicAuthorization(fixed.id, fixed.secret),
    };
    return { perOrganization: false, of: () => key, check: () => {} };
  }
  const single = singleKey(config);
  const dir = config.managementCredentialsDir;
  if (!dir) {
    return {
      perOrganization: false,
      of: () => single ?? missingSingle(),
      check: () => {
        single?.authorization();
        if (!single) missingSingle();
      },
    };
  }
  return {
    perOrganization: true,
    of: (organizationId) => fileKey(dir, organizationId) ?? single ?? missingFor(dir, organizationId),
    check: () => {
      single?.authorization();
      readable(dir);
    },
  };
}

/** The single key, or undefined when neither of its variables is set. */
function singleKey(config: Config): ManagementKey | undefined {
  const { managementKeyId: id, managementKeySecret: secret } = config;
  if (!id && !secret) return undefined;
  const source = SETTINGS.managementKeyId.env;
  return keyFrom(source, id, secret, () =>
    missing(
      `${SETTINGS.managementKeyId.env} and ${SETTINGS.managementKeySecret.env} (or their _FILE twins) are both needed`,
    ),
  );
}

/** The key of `organizationId` in `dir`, or undefined when neither of its files is there. */
function fileKey(dir: string, organizationId: string): ManagementKey | undefined {
  // The id names a file: anything that could step out of the folder is no organization of ours.
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(organizationId)) return undefined;
  const id = join(dir, `${organizationId}.key-id`);
  const secret = join(dir, `${organizationId}.key-secret`);
  const has = [existsSync(id), existsSync(secret)];
  if (!has[0] && !has[1]) return undefined;
  return keyFrom(`${join(dir, organizationId)}.key-*`, { file: id }, { file: secret }, () =>
    missing(
      `organization ${organizationId} needs both ${organizationId}.key-id and ${organizationId}.key-secret in ${dir} (${SETTINGS.managementCredentialsDir.env}); one of them is missing or empty`,
    ),
  );
}

function keyFrom(
  source: string,
  id: Credential | undefined,
  secret: Credential | undefined,
  incomplete: () => never,
): ManagementKey {
  const read = () => {
    const values = [readCredential(id), readCredential(secret)];
    if (!values[0] || !values[1]) incomplete();
    return values as [string, string];
  };
  return {
    source,
    id: () => read()[0],
    authorization: () => basicAuthorization(...read()),
  };
}

function missingSingle(): never {
  return missing(
    `${SETTINGS.managementKeyId.env} and ${SETTINGS.managementKeySecret.env} (or their _FILE twins) are required with ${SETTINGS.managementUrl.env}, unless ${SETTINGS.managementCredentialsDir.env} holds a key per organization`,
  );
}

function missingFor(dir: string, organizationId: string): never {
  return missing(
    `no management key for organization ${organizationId}: add ${organizationId}.key-id and ${organizationId}.key-secret to ${dir} (${SETTINGS.managementCredentialsDir.env}), or set the single key ${SETTINGS.managementKeyId.env} / ${SETTINGS.managementKeySecret.env}; nothing was sent`,
  );
}

function missing(message: string): never {
  throw new ConfigError(message);
}

function readable(dir: string): void {
  try {
    readdirSync(dir);
  } catch (error) {
    throw new ConfigError(`cannot read ${SETTINGS.managementCredentialsDir.env} ${dir}`, { cause: error });
  }
}
