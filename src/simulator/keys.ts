import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { Contract } from "../platform/routes.js";
import { badRequest, sameSecret } from "./http.js";
import type { ApiKey, PlatformState } from "./model.js";

/**
 * API keys as the platform keeps them: a fixture's key authenticates with its `id` and `secret`; a
 * created key with an id and secret of its own, of which the platform keeps only hashes
 * (docs/platform-apis.md#create-an-api-key), so the state file can hold it without a credential.
 */

/** The base64 of the raw SHA-256 digest: the hashing recipe of the published key create. */
const digest = (value: string) => createHash("sha256").update(value, "utf8").digest("base64");

/**
 * The key that `Authorization: Basic base64(id:secret)` proves: enabled, unexpired, secret matching.
 * Marks it used.
 */
export function authenticateKey(state: PlatformState, authorization: string | undefined): ApiKey | undefined {
  const match = /^Basic\s+(\S+)$/i.exec(authorization ?? "");
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return undefined;
  const key = keyProven(state, decoded.slice(0, colon), decoded.slice(colon + 1));
  if (key?.state !== "enabled") return undefined;
  if (key.expireAt && Date.parse(key.expireAt) <= Date.now()) return undefined;
  key.usedAt = new Date().toISOString();
  return key;
}

function keyProven(state: PlatformState, id: string, secret: string): ApiKey | undefined {
  const given = state.keys.find((k) => k.secret !== undefined && k.id === id);
  if (given?.secret !== undefined) return sameSecret(secret, given.secret) ? given : undefined;
  const idHash = digest(id);
  const made = state.keys.find((k) => k.keyIdHash !== undefined && sameSecret(idHash, k.keyIdHash));
  if (made?.keySecretHash === undefined) return undefined;
  return sameSecret(digest(secret), made.keySecretHash) ? made : undefined;
}

/** A key as results show it: without its organization, its secret or its hashes. */
export function publicKey(key: ApiKey) {
  const {
    organizationId: _organization,
    secret: _secret,
    keyIdHash: _idHash,
    keySecretHash: _secretHash,
    ...shown
  } = key;
  return shown;
}

/** A key as answered: the published contract gives usedAt only once used, and its assigned roles. */
export function keyAnswer(key: ApiKey, contract: Contract) {
  const shown = publicKey(key);
  if (contract === "minimal") return shown;
  const { usedAt, ...rest } = shown;
  return { ...rest, ...(usedAt ? { usedAt } : {}), assignedRoles: [] };
}

/** A key create's body, as the contract check accepted it (nulls dropped). */
export type KeyCreate = {
  name?: string;
  expireAt?: string;
  state?: ApiKey["state"];
  hashData?: { keyIdHash?: string; keyIdSuffix?: string; keySecretHash?: string };
  roles?: ApiKey["roles"];
  ipAccessList?: { source: string; description?: string }[];
};

/**
 * Makes a key of `organizationId`. With hashData it keeps the hashes the caller made and answers no
 * credential; without, it makes an id and a secret, keeps their hashes and answers both, once. Throws a
 * 400 Rejection: no role (the simulator models `roles`, not `assignedRoleIds`), hashData missing one of
 * its three fields, or a key id already in use.
 */
export function createKey(state: PlatformState, organizationId: string, body: KeyCreate) {
  if (!body.roles?.length) throw badRequest("roles: a key needs at least one role");
  const made = body.hashData
    ? undefined
    : { keyId: newKeyId(), keySecret: randomBytes(30).toString("base64url") };
  const hashes = made ? hashesOf(made.keyId, made.keySecret) : givenHashes(body.hashData);
  if (state.keys.some((k) => k.keyIdHash === hashes.keyIdHash)) {
    throw badRequest("hashData.keyIdHash: a key with this key id exists");
  }
  const now = new Date().toISOString();
  const key: ApiKey = {
    id: randomUUID(),
    organizationId,
    name: body.name ?? "",
    roles: body.roles,
    keySuffix: hashes.keyIdSuffix,
    createdAt: now,
    expireAt: body.expireAt ?? null,
    usedAt: null,
    ipAccessList: (body.ipAccessList ?? []).map((e) => ({
      source: e.source,
      description: e.description ?? "",
    })),
    state: body.state ?? "enabled",
    keyIdHash: hashes.keyIdHash,
    keySecretHash: hashes.keySecretHash,
  };
  state.keys.push(key);
  return { key, ...made };
}

type Hashes = { keyIdHash: string; keyIdSuffix: string; keySecretHash: string };

const hashesOf = (keyId: string, keySecret: string): Hashes => ({
  keyIdHash: digest(keyId),
  keyIdSuffix: keyId.slice(-4),
  keySecretHash: digest(keySecret),
});

function givenHashes(hashData: KeyCreate["hashData"] = {}): Hashes {
  const { keyIdHash, keyIdSuffix, keySecretHash } = hashData;
  if (keyIdHash === undefined || keyIdSuffix === undefined || keySecretHash === undefined) {
    throw badRequest("hashData: keyIdHash, keyIdSuffix and keySecretHash go together");
  }
  return { keyIdHash, keyIdSuffix, keySecretHash };
}

/** An authentication id as the platform makes them: 20 capital letters and digits. */
const newKeyId = () => randomBytes(10).toString("hex").toUpperCase();
