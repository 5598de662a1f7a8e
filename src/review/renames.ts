import type { Manifest } from "../manifests/manifest.js";
import { resourceId } from "../resources.js";
import type { ResourceRecord } from "../state/store.js";

/**
 * Renames in a `plan --base`: a manifest of DIR with a new `metadata.name` that addresses the same API
 * object as a manifest of the base that is gone. driftless keys its records by name, so a rename is a
 * first contact under the new name: worth saying, with what it costs.
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
  const spec = m.spec as Record<string, unknown>;
  const ids: Record<string, string[]> = {
    Organization: ["organizationId"],
    ApiKey: ["organizationId", "keyId"],
    DataPipe: ["organizationId", "serviceId", "dataPipeId"],
    Dashboard: ["dashboardId"],
    AlertWatch: ["alertId"],
    BackupWatch: ["organizationId", "serviceId"],
  };
  const fields = ids[m.kind];
  if (fields) return `${m.kind} ${fields.map((f) => String(spec[f]).toLowerCase()).join("/")}`;
  if (typeof spec.id === "string") return `${m.kind} ${spec.id.toLowerCase()}`;
  return `${m.kind} ${canonical(spec)}`;
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

/** What a rename costs, as notes on the renamed resource's plan. */
export function renameCosts(from: Manifest, to: Manifest, record: ResourceRecord | undefined): string[] {
  const notes = [
    `renamed from ${resourceId(from)}: driftless keeps its records by name, so ${resourceId(to)} is a first contact and the old record is no longer used`,
  ];
  if (to.kind === "ReversePrivateEndpoint" && typeof (to.spec as { id?: unknown }).id !== "string") {
    notes.push(
      "a second endpoint is created, and the old one is kept but no longer managed; to keep the old one, set spec.id to its id instead",
    );
  }
  if (to.kind === "Dashboard") notes.push(tileCost(to));
  for (const [list, entries] of Object.entries(record?.owned ?? {})) {
    if (entries.length === 0) continue;
    notes.push(
      `${list} of the old manifest (${entries.join(", ")}): any entry driftless added itself under the old name is no longer known as its own, and driftless will never remove it`,
    );
  }
  return notes;
}

function tileCost(to: Manifest): string {
  const tiles = ((to.spec as { tiles?: { key: string; id?: string }[] }).tiles ?? []).filter((t) => !t.id);
  if (tiles.length === 0) return "tile ids kept: every tile names its id in the manifest";
  return `tile ids NOT kept: ${tiles.length} tile(s) without an id in the manifest (${tiles.map((t) => t.key).join(", ")}) get new ids, and the alerts watching the old tiles are deleted; set each tile's id to keep them`;
}
