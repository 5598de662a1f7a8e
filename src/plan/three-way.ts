import type { Change } from "./types.js";
import { isPlainObject, same } from "./values.js";

/** True when `live` has every field `wanted` states (fields the manifest leaves out are the platform's). */
function covers(wanted: unknown, live: unknown): boolean {
  if (!isPlainObject(wanted) || !isPlainObject(live)) return same(wanted, live);
  return Object.entries(wanted).every(([key, value]) => value === undefined || same(value, live[key]));
}

/**
 * Three-way lists (organization privateEndpoints, postgres tableMappings): the manifest states the
 * desired list, the platform has a live list (the last answer: there is no GET), and the state keeps
 * the keys of the entries driftless itself added. Only those are ever removed, so an entry someone
 * added in the console survives any manifest.
 *
 * "Added by driftless" means: sent in an add set while the live list (as last seen) had no entry with
 * that key. An entry that was already live when driftless first saw the list is never owned, even if
 * the manifest lists it too; driftless learns the live list (a first PATCH without the list) before it
 * computes any set, so first contact cannot claim what was already there.
 */
export type ListSets<T> = { add: T[]; remove: T[]; changes: Change[] };

export function threeWay<T>(
  desired: readonly T[],
  live: readonly T[],
  owned: readonly string[],
  keyOf: (entry: T) => string,
  path: string,
): ListSets<T> {
  const desiredKeys = new Set(desired.map(keyOf));
  const liveByKey = new Map(live.map((entry) => [keyOf(entry), entry]));
  const ownedKeys = new Set(owned);
  const add = desired.filter((entry) => {
    const current = liveByKey.get(keyOf(entry));
    return current === undefined || !covers(entry, current);
  });
  const remove = live.filter((entry) => ownedKeys.has(keyOf(entry)) && !desiredKeys.has(keyOf(entry)));
  const changes: Change[] = [
    ...add.map((entry): Change => {
      const current = liveByKey.get(keyOf(entry));
      return { path, op: "add", ...(current === undefined ? {} : { from: current }), to: entry };
    }),
    ...remove.map((entry): Change => ({ path, op: "remove", from: entry })),
  ];
  return { add, remove, changes };
}

/**
 * The owned keys after `add` was sent against `live`: what was owned or newly added, and is still
 * desired (anything owned but no longer desired was just removed, or was already gone).
 */
export function ownedAfter<T>(
  desired: readonly T[],
  live: readonly T[],
  owned: readonly string[],
  added: readonly T[],
  keyOf: (entry: T) => string,
): string[] {
  const liveKeys = new Set(live.map(keyOf));
  const desiredKeys = new Set(desired.map(keyOf));
  const next = new Set(owned);
  for (const entry of added) if (!liveKeys.has(keyOf(entry))) next.add(keyOf(entry));
  return [...next].filter((key) => desiredKeys.has(key)).sort();
}

/**
 * The live list once `remove` and then `add` took effect: what driftless assumes when the platform's
 * answer leaves the list out (or gives null), so that a pass converges instead of learning it again.
 */
export function liveAfter<T extends R, R>(
  live: readonly T[],
  add: readonly T[],
  remove: readonly R[],
  keyOf: (entry: R) => string,
): T[] {
  const gone = new Set([...remove, ...add].map(keyOf));
  return [...live.filter((entry) => !gone.has(keyOf(entry))), ...add];
}
