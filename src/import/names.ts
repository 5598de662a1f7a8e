/**
 * Names `driftless import` makes: a manifest's name and a tile's key from the object's own name, in the
 * form both take (lower-case letters, digits and '-', starting and ending with a letter or digit),
 * unique among those already used.
 */

/** The longest name made: room for a `-NN` suffix within a manifest name's 253 characters. */
const LONGEST = 200;

/** `title` as a name (`Service 0` → `service-0`); `fallback` when nothing of it is left. */
export function slugOf(title: string, fallback: string): string {
  const slug = title
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .slice(0, LONGEST)
    .replace(/^-+|-+$/g, "");
  return slug || fallback;
}

/** `base`, or `base-2`, `base-3`, ... : the first that `used` does not hold. */
export function uniqueName(base: string, used: ReadonlySet<string>): string {
  if (!used.has(base)) return base;
  for (let n = 2; ; n++) if (!used.has(`${base}-${n}`)) return `${base}-${n}`;
}
