import type { z } from "zod";

/**
 * "Did you mean": the field names a schema takes where an unknown one was written, and the nearest of
 * them to a typo. Pure; walks the zod schema itself, so it never lags behind the kinds' schemas.
 */

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  options?: readonly z.ZodType[];
  element?: z.ZodType;
  valueType?: z.ZodType;
  left?: z.ZodType;
  right?: z.ZodType;
  getter?: () => z.ZodType;
};

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The schemas a value of `schema` may be checked by once wrappers (optional, default, pipe...) are off. */
function unwrapped(schema: z.ZodType, depth = 0): z.ZodType[] {
  if (depth > 32) return [];
  const def = defOf(schema);
  const inner =
    def.type === "lazy" && def.getter
      ? [def.getter()]
      : def.type === "pipe"
        ? [def.in, def.out]
        : def.type === "union"
          ? [...(def.options ?? [])]
          : def.type === "intersection"
            ? [def.left, def.right]
            : def.innerType
              ? [def.innerType]
              : undefined;
  if (!inner) return [schema];
  return inner.flatMap((s) => (s ? unwrapped(s, depth + 1) : []));
}

/** The field names an object at `path` of `schema` takes (of every union member that has the path). */
export function fieldsAt(schema: z.ZodType, path: readonly (string | number)[]): string[] {
  let level = unwrapped(schema);
  for (const step of path) {
    level = level.flatMap((s) => {
      const def = defOf(s);
      if (def.type === "object" && typeof step === "string" && def.shape?.[step]) return [def.shape[step]];
      if (def.type === "array" && typeof step === "number" && def.element) return [def.element];
      if (def.type === "record" && def.valueType) return [def.valueType];
      return [];
    });
    level = level.flatMap((s) => unwrapped(s));
  }
  const fields = level.flatMap((s) => {
    const def = defOf(s);
    return def.type === "object" && def.shape ? Object.keys(def.shape) : [];
  });
  return [...new Set(fields)];
}

/**
 * The known field nearest to `typo`, when it is near enough to be a typo of it: a different case, or
 * at most one edit (two for names of 8 letters or more; a swap of neighbours is one edit).
 */
export function nearest(typo: string, known: readonly string[]): string | undefined {
  const allowed = typo.length >= 8 ? 2 : 1;
  let best: { field: string; distance: number } | undefined;
  for (const field of known) {
    if (field === typo) continue;
    const distance = field.toLowerCase() === typo.toLowerCase() ? 0 : editDistance(typo, field);
    if (distance <= allowed && (!best || distance < best.distance)) best = { field, distance };
  }
  return best?.field;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  // One flat table of (a.length + 1) × (b.length + 1) cells; at(i, j) reads a cell, 0 outside it.
  const width = b.length + 1;
  const cells = new Uint16Array((a.length + 1) * width);
  const at = (i: number, j: number) => cells[i * width + j] ?? 0;
  for (let i = 0; i <= a.length; i++) cells[i * width] = i;
  for (let j = 0; j <= b.length; j++) cells[j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        distance = Math.min(distance, at(i - 2, j - 2) + 1);
      }
      cells[i * width + j] = distance;
    }
  }
  return at(a.length, b.length);
}
