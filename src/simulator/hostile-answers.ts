/**
 * The hostile answers of the fault book (faults.ts): the JSON text of a 2xx answer rewritten so that
 * it stays valid JSON but is deep, huge, reordered or wrong-typed where the fault says. The rewritten
 * objects are the answered ones: a management answer's `result`, an observability answer's `data`
 * (each entry of a list), else the body itself.
 */

/** The hostile answers' kinds. */
export const HOSTILE_SHAPES = ["deep", "huge", "reordered", "wrong-type"] as const;
export type HostileShape = (typeof HOSTILE_SHAPES)[number];

/** What of a fault (faults.ts) a hostile answer reads. */
export type HostileFault = { kind: HostileShape; field?: string; size?: number };

/** What stands for the deep value until the text is written: JSON.stringify cannot write 6,000 levels. */
const DEEP_MARK = "\u0000simulator: deep value\u0000";

/** The JSON text of `body` as `fault` rewrites it, the `hit`th answer it rewrites (from 1). */
export function hostileText(body: unknown, fault: HostileFault, hit: number): string {
  const copy = structuredClone(body);
  for (const target of answeredObjects(copy)) rewrite(target, fault, hit);
  const text = JSON.stringify(copy);
  if (fault.kind !== "deep") return text;
  const levels = fault.size ?? 6_000;
  return text.replaceAll(JSON.stringify(DEEP_MARK), `${'{"a":'.repeat(levels)}"bottom"${"}".repeat(levels)}`);
}

function answeredObjects(body: unknown): Record<string, unknown>[] {
  const inner = isObject(body) ? (body.result ?? body.data ?? body) : body;
  return (Array.isArray(inner) ? inner : [inner]).filter(isObject);
}

function rewrite(target: Record<string, unknown>, fault: HostileFault, hit: number): void {
  if (fault.kind === "reordered") return void reorder(target, hit);
  const path = (fault.field ?? "").split(".");
  const last = path.pop() as string;
  let parent = target;
  for (const step of path) {
    const next = parent[step];
    if (!isObject(next)) parent[step] = {};
    parent = parent[step] as Record<string, unknown>;
  }
  const current = parent[last];
  if (fault.kind === "deep") parent[last] = DEEP_MARK;
  else if (fault.kind === "huge") parent[last] = hugeList(current, fault.size ?? 20_000, last);
  else parent[last] = wrongType(current);
}

/** Every object's members, at any depth, rotated `places` places (in place). */
function reorder(value: unknown, places: number): void {
  if (Array.isArray(value)) {
    for (const entry of value) reorder(entry, places);
    return;
  }
  if (!isObject(value)) return;
  const entries = Object.entries(value);
  const by = places % Math.max(1, entries.length);
  const rotated = [...entries.slice(by), ...entries.slice(0, by)];
  for (const [key] of entries) delete value[key];
  for (const [key, member] of rotated) {
    reorder(member, places);
    value[key] = member;
  }
}

/** A list of `size` entries, each a variant of one of the list's own (strings numbered), or of `name`. */
function hugeList(current: unknown, size: number, name: string): unknown[] {
  const seeds = Array.isArray(current) && current.length > 0 ? current : [name];
  return Array.from({ length: size }, (_, i) => variant(seeds[i % seeds.length], i));
}

function variant(value: unknown, i: number): unknown {
  if (typeof value === "string") return `${value} #${i}`;
  if (typeof value === "number") return value + i;
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, variant(member, i)]));
}

/** A value of another type than `value`'s: what a schema that checks the type refuses. */
function wrongType(value: unknown): unknown {
  if (Array.isArray(value)) return { unexpected: "an object where a list belongs" };
  if (isObject(value)) return ["a list where an object belongs"];
  if (typeof value === "string") return 42;
  if (typeof value === "number" || typeof value === "boolean")
    return `a string where a ${typeof value} belongs`;
  return { unexpected: "an object where nothing was" };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
