import { walk } from "../drift/compare.js";
import { sameId } from "../manifests/identity.js";
import { diffPatch, patchPlan } from "../plan/patch.js";
import { appliedRecord } from "../plan/record.js";
import type { SpecOf } from "../plan/types.js";
import { omit } from "../plan/values.js";
import type { UpdateApiKeyBody } from "../platform/management.js";
import { type Complete, none, type PlanInput } from "./kind.js";
import { foldLive, specPathOf } from "./shared.js";

/**
 * An API key, adopted by its `keyId`: PATCHed with the changed fields, unless they would lock driftless
 * out of the management API; read with its GET.
 */

type Spec = SpecOf<"ApiKey">;

/** An expiry sooner than this from now counts as expiring driftless's own key (it would lock itself out). */
export const LOCKOUT_EXPIRY_MARGIN_MS = 24 * 60 * 60 * 1000;

/**
 * The key as the manifest wants it, in the platform's terms: what the update sends and drift compares.
 * "Never expires" (`expireAt: ""`) is null there, the form both contracts take.
 */
function desired(spec: Spec) {
  const { expireAt, ...fields } = omit(spec, ["organizationId", "keyId", "allowLockout"]);
  return expireAt === undefined ? fields : { ...fields, expireAt: expireAt || null };
}

/** The update's fields: the desired key, each ipAccessList entry with the description the request requires. */
function requestFields(spec: Spec): UpdateApiKeyBody {
  const { ipAccessList, ...body } = desired(spec);
  if (!ipAccessList) return body;
  return {
    ...body,
    ipAccessList: ipAccessList.map((e) => ({ source: e.source, description: e.description ?? "" })),
  };
}

/**
 * What of `body` would lock driftless out of the management API, when the key is its own: an expiry
 * within LOCKOUT_EXPIRY_MARGIN_MS, roles without admin, an empty ipAccessList, state disabled.
 */
export function lockoutReasons(body: UpdateApiKeyBody, now: Date): string[] {
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

function plan(input: PlanInput<"ApiKey">) {
  const { kind, name, spec, record, context } = input;
  const fields = requestFields(spec);
  const { body, changes } = diffPatch(fields, record?.applied, { reassert: context.reassert });
  if (Object.keys(body).length === 0)
    return { kind, name, outcome: "none" as const, reason: "in sync", changes };
  const own = context.managementKeyId !== undefined && sameId(context.managementKeyId.trim(), spec.keyId);
  const reasons = own && spec.allowLockout !== true ? lockoutReasons(body, context.now) : [];
  if (reasons.length > 0) {
    return {
      kind,
      name,
      outcome: "refuse" as const,
      reason: `refused: this is the key driftless authenticates with, and the change ${reasons.join(", ")}, which would lock driftless out; set spec.allowLockout: true to send it anyway`,
      changes,
    };
  }
  const params = { organizationId: spec.organizationId, keyId: spec.keyId };
  return patchPlan({ kind, name }, changes, {
    request: { route: "updateApiKey", params, body },
    record: (answer, at) => appliedRecord(input, fields, at, answer),
  });
}

export const apiKey: Complete<"ApiKey"> = {
  kind: "ApiKey",
  phase: "dependents",
  create: none("an API key is adopted by the keyId its manifest names"),
  update: { plan, learn: none("the key's PATCH sends whole lists: nothing live is needed to plan it") },
  observe: {
    read: ({ spec: { organizationId, keyId } }) => ({
      request: { route: "getApiKey", params: { organizationId, keyId }, body: undefined },
      live: (answer) => answer,
    }),
    // A PATCH sends the whole ipAccessList: an entry added in the console is drift.
    drift: ({ spec }, live) =>
      walk(desired(spec), live, { roles: { kind: "set" }, ipAccessList: { kind: "set" } }),
    fold: (record, fields, live) => foldLive(record, fields, live),
  },
  poll: none("an API key is written, not watched"),
  specPath: specPathOf(),
};
