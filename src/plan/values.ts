import { isSecret, type Secret } from "./secret.js";

/**
 * Helpers over plain JSON-like values that may hold Secret leaves: the stored form (secrets as hashes),
 * the wire form (secrets revealed), the printed form (secrets masked) and deep equality.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) && !isSecret(value);

function mapLeaves(value: unknown, secret: (s: Secret) => unknown): unknown {
  if (isSecret(value)) return secret(value);
  if (Array.isArray(value)) return value.map((item) => mapLeaves(item, secret));
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      if (child !== undefined) out[key] = mapLeaves(child, secret);
    }
    return out;
  }
  return value;
}

/** What the state keeps: secrets replaced by their salted hashes. */
export function stored(value: object): Record<string, unknown>;
export function stored(value: unknown): unknown;
export function stored(value: unknown): unknown {
  return mapLeaves(value, (s) => s.hash);
}

/** The stored form without the secrets at all: what a record holds of a value whose secrets were never sent. */
export function withoutSecretLeaves(value: object): Record<string, unknown>;
export function withoutSecretLeaves(value: unknown): unknown {
  return stored(mapLeaves(value, () => undefined));
}

/**
 * What goes on the wire: secrets revealed. Only the request sender calls this. The type is kept: a
 * request type holds its credentials as `Sensitive`, a string or a Secret.
 */
export function revealed<T>(value: T): T;
export function revealed(value: unknown): unknown {
  return mapLeaves(value, (s) => s.reveal());
}

/**
 * What a person sees: each secret as `(changed)` or `(unchanged)` against the hash last applied at the
 * same path, never its value.
 */
export function masked(value: unknown, applied?: unknown): unknown {
  if (isSecret(value)) return applied === value.hash ? "(unchanged)" : "(changed)";
  if (Array.isArray(value)) {
    return value.map((item, index) => masked(item, Array.isArray(applied) ? applied[index] : undefined));
  }
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      if (child !== undefined) out[key] = masked(child, isPlainObject(applied) ? applied[key] : undefined);
    }
    return out;
  }
  return value;
}

/** True when the value holds a secret anywhere. */
export function hasSecret(value: unknown): boolean {
  if (isSecret(value)) return true;
  if (Array.isArray(value)) return value.some(hasSecret);
  if (isPlainObject(value)) return Object.values(value).some(hasSecret);
  return false;
}

/** Deep equality of stored forms (a Secret compares by its hash); undefined object members are ignored. */
export function same(a: unknown, b: unknown): boolean {
  const left = isSecret(a) ? a.hash : a;
  const right = isSecret(b) ? b.hash : b;
  if (left === right) return true;
  if (Array.isArray(left)) {
    return (
      Array.isArray(right) && left.length === right.length && left.every((item, i) => same(item, right[i]))
    );
  }
  if (isPlainObject(left) && isPlainObject(right)) {
    // No key set is built: this runs for every field of every resource of every pass.
    for (const key in left) if (!same(left[key], right[key])) return false;
    for (const key in right) if (!(key in left) && right[key] !== undefined) return false;
    return true;
  }
  return false;
}

/** The member `key` of `value` when it is an object. */
export const member = (value: unknown, key: string): unknown =>
  isPlainObject(value) ? value[key] : undefined;

/** `T` without the members `K`, member by member of a union (Omit would merge a union's members). */
export type Without<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** `value` without the listed members; undefined members dropped. */
export function omit<T extends object, K extends keyof T>(value: T, keys: readonly K[]): Without<T, K>;
export function omit(value: object, keys: readonly PropertyKey[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in value) {
    const child: unknown = Reflect.get(value, key);
    if (child !== undefined && !keys.includes(key)) out[key] = child;
  }
  return out;
}

/** Sets the member at `path` of `target`, whose objects and lists on the way exist (a spec's walk). */
export function setAt(target: object, path: readonly (string | number)[], value: unknown): void {
  let node: unknown = target;
  for (const step of path.slice(0, -1))
    node = typeof node === "object" && node !== null ? Reflect.get(node, step) : undefined;
  const last = path.at(-1);
  if (last !== undefined && typeof node === "object" && node !== null) Reflect.set(node, last, value);
}
