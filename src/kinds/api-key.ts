import type { KeyPair } from "../credentials.js";
import { walk } from "../drift/compare.js";
import { sameId } from "../manifests/identity.js";
import { diffPatch, patchPlan } from "../plan/patch.js";
import { appliedRecord } from "../plan/record.js";
import type { Change, ResourcePlan, SpecOf, Write } from "../plan/types.js";
import { omit } from "../plan/values.js";
import {
  type ApiKeyAnswer,
  type ApiKeyCreate,
  type ApiKeyUpdate,
  type KeyHashes,
  keyHashes,
} from "../platform/management.js";
import type { ResourceRecord } from "../state/store.js";
import type { LiveRead, Subject } from "./kind.js";
import { type Complete, none, type PlanInput } from "./kind.js";
import { baselineRecord, foldLive, specPathOf } from "./shared.js";

/**
 * An API key: adopted by its `keyId`, or created when the manifest names none. A created key's id and
 * secret are made by driftless and written where `secretTarget` says before the create is sent, which
 * carries only their hashes; the platform answers the key's path id, kept as its server id. PATCHed
 * with the changed fields, unless they would lock driftless out of the management API; read with its
 * GET; deleted with its DELETE (never the key driftless authenticates with).
 */

type Spec = SpecOf<"ApiKey">;
type Key = Subject<"ApiKey">;

/** An expiry sooner than this from now counts as expiring driftless's own key (it would lock itself out). */
export const LOCKOUT_EXPIRY_MARGIN_MS = 24 * 60 * 60 * 1000;

/**
 * The key as the manifest wants it, in the platform's terms: what the update sends and drift compares.
 * "Never expires" (`expireAt: ""`) is null there, the form both contracts take.
 */
function desired(spec: Spec) {
  const { expireAt, ...fields } = omit(spec, ["organizationId", "keyId", "allowLockout", "secretTarget"]);
  return expireAt === undefined ? fields : { ...fields, expireAt: expireAt || null };
}

/** The update's fields: the desired key, each ipAccessList entry with the description the request requires. */
function requestFields(spec: Spec): ApiKeyUpdate {
  const { ipAccessList, ...body } = desired(spec);
  if (!ipAccessList) return body;
  return {
    ...body,
    ipAccessList: ipAccessList.map((e) => ({ source: e.source, description: e.description ?? "" })),
  };
}

/** The key's path id: the one the manifest names, or the one the platform answered its create with. */
const keyIdOf = ({ spec, record }: Key): string | undefined => spec.keyId ?? record?.serverId;

/**
 * What of `body` would lock driftless out of the management API, when the key is its own: an expiry
 * within LOCKOUT_EXPIRY_MARGIN_MS, roles without admin, an empty ipAccessList, state disabled.
 */
export function lockoutReasons(body: ApiKeyUpdate, now: Date): string[] {
  const reasons: string[] = [];
  const expireAt = body.expireAt;
  if (typeof expireAt === "string" && expireAt !== "") {
    const at = Date.parse(expireAt);
    if (!(at > now.getTime() + LOCKOUT_EXPIRY_MARGIN_MS)) reasons.push(`expires it (expireAt ${expireAt})`);
  }
  if (Array.isArray(body.roles) && !body.roles.includes("admin")) reasons.push("drops its admin role");
  if (Array.isArray(body.ipAccessList) && body.ipAccessList.length === 0)
    reasons.push("empties its ipAccessList");
  if (body.state === "disabled") reasons.push("disables it");
  return reasons;
}

function plan(input: PlanInput<"ApiKey">): ResourcePlan {
  const { kind, name, spec, record, context } = input;
  const keyId = keyIdOf(input) ?? "";
  const fields = requestFields(spec);
  const { body, changes } = diffPatch(fields, record?.applied, { reassert: context.reassert });
  if (Object.keys(body).length === 0) return { kind, name, outcome: "none", reason: "in sync", changes };
  const own = context.managementKeyId !== undefined && sameId(context.managementKeyId.trim(), keyId);
  const reasons = own && spec.allowLockout !== true ? lockoutReasons(body, context.now) : [];
  if (reasons.length > 0) {
    return {
      kind,
      name,
      outcome: "refuse",
      reason: `refused: this is the key driftless authenticates with, and the change ${reasons.join(", ")}, which would lock driftless out; set spec.allowLockout: true to send it anyway`,
      changes,
    };
  }
  const params = { organizationId: spec.organizationId, keyId };
  return patchPlan({ kind, name }, changes, {
    request: { route: "updateApiKey", params, body },
    record: (answer, at) => appliedRecord(input, fields, at, answer),
  });
}

/** What a plan shows of the hashes a create sends: they are made when the key is. */
const SHOWN: KeyHashes = {
  keyIdHash: "(made when the key is created)",
  keyIdSuffix: "(made when the key is created)",
  keySecretHash: "(made when the key is created)",
};

/**
 * The key's POST: every field the manifest states, with the hashes of an id and secret driftless makes
 * and writes to the secret target first (the engine does both, with `credential`).
 */
function createPlan(input: PlanInput<"ApiKey">): ResourcePlan {
  const { kind, name, spec } = input;
  const { ipAccessList, ...fields } = requestFields(spec);
  const params = { organizationId: spec.organizationId };
  const write = (hashData: KeyHashes) =>
    ({
      request: {
        route: "createApiKey",
        params,
        body: { ...fields, ...(ipAccessList ? { ipAccessList } : {}), name: spec.name ?? name, hashData },
      },
      record: (answer, at) => created(input, answer.key.id, answer.key, at),
    }) satisfies Write<"createApiKey">;
  const shown: ApiKeyCreate = write(SHOWN).request.body;
  const changes = Object.entries(shown).map(([path, to]): Change => ({ path, to, op: "set" }));
  const target = spec.secretTarget ?? { file: name };
  return {
    kind,
    name,
    outcome: "send",
    reason: "not created yet",
    write: write(SHOWN),
    changes,
    credential: { target, write: (pair: KeyPair) => write(keyHashes(pair.keyId, pair.keySecret)) },
  };
}

/** The record of a key known to be `id` (created, or found by a list): its path id is its server id. */
function created({ kind, name, spec, record }: Key, id: string, live: object | undefined, at: string) {
  const { intent: _done, ...rest } = record ?? { kind, name };
  return appliedRecord({ kind, name, record: rest }, requestFields(spec), at, live, { serverId: id });
}

/** A listed key is the one a lost create made: its name, and the suffix of the id driftless made for it. */
function matches({ spec, record, name }: Key, listed: Record<string, unknown>): boolean {
  const keyId = record?.intent?.keyId;
  const suffix = typeof keyId === "string" ? keyId.slice(-4) : undefined;
  return listed.name === (spec.name ?? name) && suffix !== undefined && listed.keySuffix === suffix;
}

const OWN_KEY =
  "it is the key driftless authenticates with: never deleted, whatever its deletion policy (left as it is, no longer managed)";

/**
 * Whether a key's record is of the key driftless authenticates with: its path id is that key id (where
 * the platform uses one id for both), or the last four characters the platform answers of the id that
 * authenticates it are that key id's (the published contract's keySuffix).
 */
function isOwn(record: ResourceRecord, managementKeyId: string | undefined): boolean {
  const own = managementKeyId?.trim();
  if (!own) return false;
  const keyId = record.address?.keyId ?? record.serverId;
  if (keyId !== undefined && sameId(keyId, own)) return true;
  const suffix = record.observed?.keySuffix;
  return typeof suffix === "string" && suffix.length > 0 && own.endsWith(suffix);
}

export const apiKey: Complete<"ApiKey"> = {
  kind: "ApiKey",
  phase: "dependents",
  references: () => [],
  address: (spec, record) => {
    const keyId = spec.keyId ?? record?.serverId;
    return keyId === undefined ? undefined : { organizationId: spec.organizationId, keyId };
  },
  create: {
    noun: "key",
    within: "of the organization",
    idField: "keyId",
    idOf: (spec) => spec.keyId,
    plan: createPlan,
    list: ({ organizationId }) =>
      ({
        request: { route: "listApiKeys", params: { organizationId }, body: undefined },
        live: (answer) => answer,
      }) satisfies LiveRead<"listApiKeys">,
    matches,
    adopted: created,
    unusable: () => undefined,
  },
  update: { plan, learn: none("the key's PATCH sends whole lists: nothing live is needed to plan it") },
  delete: {
    request: ({ organizationId, keyId }) =>
      organizationId && keyId
        ? { route: "deleteApiKey", params: { organizationId, keyId }, body: undefined }
        : undefined,
    kept: (record, managementKeyId) => (isOwn(record, managementKeyId) ? OWN_KEY : undefined),
  },
  observe: {
    read: (key) => {
      const keyId = keyIdOf(key);
      if (keyId === undefined) return undefined;
      const { organizationId } = key.spec;
      return {
        request: { route: "getApiKey", params: { organizationId, keyId }, body: undefined },
        live: (answer: ApiKeyAnswer) => answer,
      } satisfies LiveRead<"getApiKey">;
    },
    // A PATCH sends the whole ipAccessList: an entry added in the console is drift.
    drift: ({ spec }, live) =>
      walk(desired(spec), live, { roles: { kind: "set" }, ipAccessList: { kind: "set" } }),
    fold: (record, fields, live) => foldLive(record, fields, live),
    baseline: (input, live, fields) =>
      foldLive(baselineRecord(input, requestFields(input.spec), live), fields, live),
    listed: (key) => {
      const keyId = keyIdOf(key);
      if (keyId === undefined) return undefined;
      return {
        request: {
          route: "listApiKeys",
          params: { organizationId: key.spec.organizationId },
          body: undefined,
        },
        live: (answer) => answer.find((listed) => sameId(listed.id, keyId)),
      } satisfies LiveRead<"listApiKeys">;
    },
  },
  poll: none("an API key is written, not watched"),
  specPath: specPathOf(),
};
