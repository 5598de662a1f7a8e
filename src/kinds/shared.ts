import type { DriftField } from "../drift/compare.js";
import type { FieldPath } from "../manifests/manifest.js";
import { appliedRecord } from "../plan/record.js";
import { isPlainObject, member, withoutSecretLeaves } from "../plan/values.js";
import type { ResourceRecord } from "../state/store.js";
import type { PlanInput } from "./kind.js";

/** What several kinds' modules share: where a request's field comes from, and folding drift. */

/**
 * A request path as the manifest field it comes from: path parameters name the spec's ids (the
 * observability APIs' `id` is the spec's `idField`), body fields have the spec's own paths.
 */
export const specPathOf =
  (idField = "id") =>
  (path: FieldPath): FieldPath =>
    path[0] === "params" ? (path[1] === "id" ? [idField] : path.slice(1)) : [...path];

/** The dotted path of a field up to its first list entry: the member a request sends whole. */
const memberPath = (path: string) => path.split("[")[0] ?? path;

/** `value` with `path` set to `to`; objects on the way copied, made where missing. */
export function withAt(value: unknown, path: readonly string[], to: unknown): Record<string, unknown> {
  const base = isPlainObject(value) ? { ...value } : {};
  const [head, ...rest] = path;
  if (head === undefined) return base;
  base[head] = rest.length === 0 ? to : withAt(base[head], rest, to);
  return base;
}

/**
 * The record as if driftless had last sent the live values of the drifted `fields`: each member takes
 * its live value in `applied`, except the three-way lists in `observedLists`, whose live list goes to
 * `observed` (the plan computes its add and remove sets from it). A whole object found of another type
 * is left as it is.
 */
export function foldLive(
  record: ResourceRecord,
  fields: readonly DriftField[],
  live: unknown,
  observedLists: readonly string[] = [],
): ResourceRecord {
  let next = record;
  for (const field of fields) {
    const path = memberPath(field.path);
    if (path === "(object)") continue;
    const at = path.split(".");
    const liveValue = at.reduce<unknown>((node, key) => member(node, key), live);
    next = observedLists.includes(path)
      ? { ...next, observed: withAt(next.observed, at, liveValue) }
      : { ...next, applied: withAt(next.applied, at, liveValue) };
  }
  return next;
}

/**
 * The record of a first contact (Observe.baseline) before its drift is folded in: as if `sent` had just
 * been applied (at the pass's time) and answered `live`. Secrets are left out of `applied`: a live
 * credential cannot be read, so the first write sends git's.
 */
export function baselineRecord(
  { kind, name, record, context }: PlanInput,
  sent: object,
  live: object,
  fields: Partial<ResourceRecord> = {},
): ResourceRecord {
  return appliedRecord(
    { kind, name, record },
    withoutSecretLeaves(sent),
    context.now.toISOString(),
    live,
    fields,
  );
}
