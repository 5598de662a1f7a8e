import { isSecret } from "./secret.js";
import type { Change, ResourcePlan } from "./types.js";
import { hasSecret, isPlainObject, masked, member, same } from "./values.js";

export type PatchOptions = {
  /**
   * Dotted paths of objects sent whole when any member changes: a credentials object carries its
   * username and password together, since the platform may not accept half of one.
   */
  atomic?: readonly string[];
  /** Re-send unchanged fields too; a secret only when it changed (never re-sent on its own). */
  reassert: boolean;
};

export type Patch = { body: Record<string, unknown>; changes: Change[] };

/**
 * The smallest PATCH body that takes the last applied state to the desired one: nested objects are
 * descended into, anything else (scalars, lists, secrets, atomic objects) is sent whole when it differs.
 * A field that left the manifest stops being managed: nothing is sent for it, since a PATCH cannot
 * unset a field.
 */
export function diffPatch(desired: Record<string, unknown>, applied: unknown, options: PatchOptions): Patch {
  return diffAt(desired, applied, options, "");
}

function diffAt(
  desired: Record<string, unknown>,
  applied: unknown,
  options: PatchOptions,
  path: string,
): Patch {
  const body: Record<string, unknown> = {};
  const changes: Change[] = [];
  for (const [key, want] of Object.entries(desired)) {
    if (want === undefined) continue;
    const at = path ? `${path}.${key}` : key;
    const had = member(applied, key);
    const atomic = options.atomic?.includes(at) ?? false;
    if (isPlainObject(want) && !atomic) {
      const inner = diffAt(want, had, options, at);
      if (Object.keys(inner.body).length > 0) body[key] = inner.body;
      changes.push(...inner.changes);
      continue;
    }
    const changed = !same(want, had);
    if (!changed && !(options.reassert && !hasSecret(want))) continue;
    body[key] = want;
    if (!changed) continue;
    changes.push(...describe(want, had, at, atomic));
  }
  return { body, changes };
}

/** The diff lines of one sent value: an atomic object member by member, a secret masked. */
function describe(want: unknown, had: unknown, path: string, atomic: boolean): Change[] {
  if (atomic && isPlainObject(want)) {
    return Object.entries(want).flatMap(([key, value]): Change[] => {
      const before = member(had, key);
      if (isSecret(value)) return [{ path: `${path}.${key}`, to: masked(value, before), op: "set" }];
      if (same(value, before)) return [];
      return [
        { path: `${path}.${key}`, ...(before === undefined ? {} : { from: before }), to: value, op: "set" },
      ];
    });
  }
  if (hasSecret(want)) return [{ path, to: masked(want, had), op: "set" }];
  return [{ path, ...(had === undefined ? {} : { from: had }), to: want, op: "set" }];
}

/**
 * The plan of a management PATCH of `patch.body` to `route`: `none` (in sync) when the body is empty,
 * else `send`. `followUp` says the request first learns a live list (first contact).
 */
export function patchPlan(
  resource: { kind: string; name: string },
  route: string,
  params: Record<string, string>,
  patch: Patch,
  followUp?: string,
): ResourcePlan {
  const { kind, name } = resource;
  const { body, changes } = patch;
  if (Object.keys(body).length === 0) return { kind, name, outcome: "none", reason: "in sync", changes };
  return {
    kind,
    name,
    outcome: "send",
    reason: followUp ? "first contact" : `${changes.length} change(s)`,
    request: { api: "management", method: "PATCH", route, params, body },
    changes,
    ...(followUp ? { followUp } : {}),
  };
}
