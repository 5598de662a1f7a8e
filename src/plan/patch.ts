import type { Kind } from "../manifests/manifest.js";
import type { RouteName } from "../platform/routes.js";
import { isSecret } from "./secret.js";
import type { Change, ResourcePlan, Write } from "./types.js";
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

export type Patch<T> = { body: Partial<T>; changes: Change[] };

/**
 * The smallest PATCH body that takes the last applied state to the desired one: nested objects are
 * descended into, anything else (scalars, lists, secrets, atomic objects) is sent whole when it differs.
 * A field that left the manifest stops being managed: nothing is sent for it, since a PATCH cannot
 * unset a field.
 *
 * The body is typed `Partial<T>`; its nested objects are partial too, which the request types allow
 * (their nested fields are optional, and the atomic objects are sent whole).
 */
export function diffPatch<T extends object>(desired: T, applied: unknown, options: PatchOptions): Patch<T> {
  return diffAt(desired, applied, options, "") as Patch<T>;
}

function diffAt(
  desired: object,
  applied: unknown,
  options: PatchOptions,
  path: string,
): { body: Record<string, unknown>; changes: Change[] } {
  const body: Record<string, unknown> = {};
  const changes: Change[] = [];
  // Runs for every field of every resource of every pass: no entry arrays, and a field's path only
  // made when it is needed.
  for (const key in desired) {
    const want: unknown = Reflect.get(desired, key);
    if (want === undefined) continue;
    const had = member(applied, key);
    const atomic = options.atomic?.includes(pathOf(path, key)) ?? false;
    if (isPlainObject(want) && !atomic) {
      const inner = diffAt(want, had, options, pathOf(path, key));
      if (!isEmpty(inner.body)) body[key] = inner.body;
      for (const change of inner.changes) changes.push(change);
      continue;
    }
    const changed = !same(want, had);
    if (!changed && !(options.reassert && !hasSecret(want))) continue;
    body[key] = want;
    if (!changed) continue;
    changes.push(...describe(want, had, pathOf(path, key), atomic));
  }
  return { body, changes };
}

const pathOf = (path: string, key: string) => (path ? `${path}.${key}` : key);

function isEmpty(value: object): boolean {
  for (const _ in value) return false;
  return true;
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
 * The plan of a management PATCH: `none` (in sync) when its body is empty, else `send`. `followUp`
 * says a second request follows (by default: the request first learns a live list, a first contact);
 * it is sent even with an empty body. `reason` replaces the plan's reason.
 */
export function patchPlan<R extends RouteName>(
  resource: { kind: Kind; name: string },
  changes: Change[],
  write: Write<R>,
  followUp?: string,
  reason?: string,
): ResourcePlan {
  const { kind, name } = resource;
  if (Object.keys(write.request.body ?? {}).length === 0 && !followUp) {
    return { kind, name, outcome: "none", reason: "in sync", changes };
  }
  return {
    kind,
    name,
    outcome: "send",
    reason: reason ?? (followUp ? "first contact" : `${changes.length} change(s)`),
    write,
    changes,
    ...(followUp ? { followUp } : {}),
  };
}

/**
 * The body of a first-contact PATCH that has nothing else to send: the manifest's `name` again when
 * it states one (a field the platform surely takes), else nothing: an empty PATCH, which changes
 * nothing and still answers with the live lists (docs/platform-apis.md#first-contact).
 */
export function resendName(body: { name?: string }, name: string | undefined): void {
  if (Object.keys(body).length === 0 && name !== undefined) body.name = name;
}
