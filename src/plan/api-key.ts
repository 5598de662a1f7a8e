import { sameId } from "../manifests/identity.js";
import type { UpdateApiKeyBody } from "../platform/management.js";
import { diffPatch, patchPlan } from "./patch.js";
import { appliedRecord } from "./record.js";
import type { KindPlanner, SpecOf } from "./types.js";
import { omit } from "./values.js";

/** The `updateApiKey` route: the changed fields, unless they would lock driftless out. */

/** An expiry sooner than this from now counts as expiring driftless's own key (it would lock itself out). */
export const LOCKOUT_EXPIRY_MARGIN_MS = 24 * 60 * 60 * 1000;

/**
 * The fields the request takes. A missing ipAccessList description is sent as "" (the request requires
 * it); "never expires" (`expireAt: ""`) is sent as null, the form both contracts take.
 */
export function requestFields(spec: SpecOf<"ApiKey">): UpdateApiKeyBody {
  const { ipAccessList, expireAt, ...fields } = omit(spec, ["organizationId", "keyId", "allowLockout"]);
  const body: UpdateApiKeyBody = expireAt === undefined ? fields : { ...fields, expireAt: expireAt || null };
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

export const apiKeyPlanner: KindPlanner<"ApiKey"> = {
  phase: "dependents",

  plan({ kind, name, spec, record, context }) {
    const { body, changes } = diffPatch(requestFields(spec), record?.applied, { reassert: context.reassert });
    if (Object.keys(body).length === 0) return { kind, name, outcome: "none", reason: "in sync", changes };
    const own = context.managementKeyId !== undefined && sameId(context.managementKeyId.trim(), spec.keyId);
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
    const params = { organizationId: spec.organizationId, keyId: spec.keyId };
    return patchPlan({ kind, name }, { route: "updateApiKey", params, body }, changes);
  },

  record(input, _plan, result, at) {
    return appliedRecord(input, requestFields(input.spec), at, result);
  },
};
