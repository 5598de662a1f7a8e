import { MANAGEMENT_ROUTES } from "../platform/management.js";
import type { ResourceRecord } from "../state/store.js";
import { diffPatch, patchPlan } from "./patch.js";
import type { KindPlanner, PlanInput, ResourcePlan } from "./types.js";
import { isPlainObject, member, omit, stored } from "./values.js";

/** PATCH /v1/organizations/{organizationId}/keys/{keyId}: the changed fields. */
export const API_KEY_ROUTE = MANAGEMENT_ROUTES.apiKey;

/** An expiry sooner than this from now counts as expiring driftless's own key (it would lock itself out). */
export const LOCKOUT_EXPIRY_MARGIN_MS = 24 * 60 * 60 * 1000;

/** The fields the request takes; a missing ipAccessList description is sent as "" (the request requires it). */
function requestFields(spec: Record<string, unknown>): Record<string, unknown> {
  const fields = omit(spec, ["organizationId", "keyId", "allowLockout"]);
  if (Array.isArray(fields.ipAccessList)) {
    fields.ipAccessList = fields.ipAccessList.map((e) => ({
      source: member(e, "source"),
      description: member(e, "description") ?? "",
    }));
  }
  return fields;
}

/**
 * What of `body` would lock driftless out of the management API, when the key is its own: an expiry
 * within LOCKOUT_EXPIRY_MARGIN_MS, roles without admin, an empty ipAccessList.
 */
export function lockoutReasons(body: Record<string, unknown>, now: Date): string[] {
  const reasons: string[] = [];
  const expireAt = body.expireAt;
  if (typeof expireAt === "string" && expireAt !== "") {
    const at = Date.parse(expireAt);
    if (!(at > now.getTime() + LOCKOUT_EXPIRY_MARGIN_MS)) reasons.push(`expires it (expireAt ${expireAt})`);
  }
  if (Array.isArray(body.roles) && !body.roles.includes("admin")) reasons.push("drops its admin role");
  if (Array.isArray(body.ipAccessList) && body.ipAccessList.length === 0)
    reasons.push("empties its ipAccessList");
  return reasons;
}

export const apiKeyPlanner: KindPlanner = {
  plan({ kind, name, spec, record, context }: PlanInput): ResourcePlan {
    const { body, changes } = diffPatch(requestFields(spec), record?.applied, { reassert: context.reassert });
    if (Object.keys(body).length === 0) return { kind, name, outcome: "none", reason: "in sync", changes };
    // UUIDs name the same key in either case.
    const own =
      context.managementKeyId !== undefined &&
      context.managementKeyId.trim().toLowerCase() === String(spec.keyId).toLowerCase();
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
    const params = { organizationId: String(spec.organizationId), keyId: String(spec.keyId) };
    return patchPlan({ kind, name }, API_KEY_ROUTE, params, { body, changes });
  },

  record({ kind, name, spec, record }, _plan, result, at): ResourceRecord {
    return {
      ...record,
      kind,
      name,
      applied: stored(requestFields(spec)) as Record<string, unknown>,
      appliedAt: at,
      observed: isPlainObject(result) ? result : undefined,
    };
  },
};
