import { createOf } from "../kinds/index.js";
import { isNone } from "../kinds/kind.js";
import { DRIFTLESS_ANNOTATIONS } from "../manifests/fields.js";
import { manifestObject } from "../manifests/identity.js";
import type { Manifest } from "../manifests/manifest.js";
import { deletionPolicyOf } from "../reconcile/records.js";
import { resourceId } from "../resources.js";

/**
 * Renames in a `plan --base`: a manifest of DIR with a new `metadata.name` that addresses the same API
 * object as a manifest of the base that is gone. The record follows a rename, except that of an object
 * driftless created when the manifest names neither its id nor its old name: worth saying either way.
 */

export type Renames = {
  /** Head `Kind/name` → the base manifest it renames. */
  byHead: Map<string, Manifest>;
  /** Base `Kind/name` of every renamed manifest. */
  byBase: Set<string>;
};

/** JSON with sorted keys: two specs that differ only in key order give the same text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, child]) => child !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, child]) => `${JSON.stringify(key)}:${canonical(child)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The API object a manifest addresses; an endpoint (no id before it is created) by its fields. */
function objectOf(m: Manifest): string {
  return manifestObject(m) ?? `${m.kind} ${canonical(m.spec)}`;
}

export function renamesOf(base: readonly Manifest[], head: readonly Manifest[]): Renames {
  const headIds = new Set(head.map(resourceId));
  const baseIds = new Set(base.map(resourceId));
  const gone = new Map<string, Manifest>();
  for (const m of base) if (!headIds.has(resourceId(m))) gone.set(objectOf(m), m);
  const renames: Renames = { byHead: new Map(), byBase: new Set() };
  for (const m of head) {
    if (baseIds.has(resourceId(m))) continue;
    const from = gone.get(objectOf(m));
    if (!from) continue;
    gone.delete(objectOf(m));
    renames.byHead.set(resourceId(m), from);
    renames.byBase.add(resourceId(from));
  }
  return renames;
}

/** Whether the daemon moves the record of `from` to `to` (see reconcile/records.ts). */
export function followsRename(from: Manifest, to: Manifest): boolean {
  return manifestObject(to) !== undefined || to.annotations[DRIFTLESS_ANNOTATIONS.previousName] === from.name;
}

/**
 * What a rename costs, as notes on the renamed resource's plan. The daemon moves a record to the new
 * name when both address the same API object (or the new one names the old in driftless/previous-name),
 * so only an object driftless created, whose id the manifest does not name, can lose its record: the
 * new name creates a second one, and the old one goes by its deletion policy.
 */
export function renameCosts(from: Manifest, to: Manifest): string[] {
  if (followsRename(from, to)) {
    return [
      `renamed from ${resourceId(from)}: its record (server ids, tile ids, the list entries driftless added) follows it to ${resourceId(to)}`,
    ];
  }
  const create = createOf(to.kind);
  const [noun, idField] = isNone(create) ? ["object", "id"] : [create.noun, create.idField];
  const old =
    deletionPolicyOf(from) === "delete"
      ? "the old one is deleted (its deletion policy is delete)"
      : "the old one is kept but no longer managed";
  return [
    `renamed from ${resourceId(from)}: a created ${noun} is known by the id the platform gave it, which this manifest does not name, so ${resourceId(to)} is a first contact`,
    `a second ${noun} is created, and ${old}; to keep the old one, add the annotation ${DRIFTLESS_ANNOTATIONS.previousName}: ${from.name} (or set spec.${idField} to its id)`,
  ];
}
