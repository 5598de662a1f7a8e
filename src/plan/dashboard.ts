import { OBSERVABILITY_ROUTES } from "../platform/observability.js";
import type { ResourceRecord } from "../state/store.js";
import type { Change, KindPlanner, PlanInput, ResourcePlan } from "./types.js";
import { isPlainObject, member, omit, same, stored } from "./values.js";

/**
 * PUT /api/v2/dashboards/{id}. A PUT replaces the dashboard, so every tile is sent, each with the id it
 * already has: a tile sent without one gets a new id and the platform deletes the alerts that watch the
 * old one. Ids come from the manifest (`id`, adoption) or from the state's key → id map, which is filled
 * from the answer for the tiles sent without one. The tile `key` is driftless's and never sent.
 */
export const DASHBOARD_ROUTE = OBSERVABILITY_ROUTES.dashboard;

type Tile = Record<string, unknown> & { key: string };

/** The spec with every tile's known id filled in: the form compared with, and kept as, `applied`. */
function withIds(spec: Record<string, unknown>, record: ResourceRecord | undefined): Record<string, unknown> {
  const tiles = (spec.tiles as Tile[]).map((tile) => {
    const id = tile.id ?? record?.tileIds?.[tile.key];
    return id === undefined ? tile : { ...tile, id };
  });
  return { ...omit(spec, ["tiles"]), tiles };
}

function describe(desired: Record<string, unknown>, applied: unknown): Change[] {
  const changes: Change[] = [];
  for (const field of ["name", "tags"]) {
    const to = desired[field];
    const from = member(applied, field);
    if (to !== undefined && !same(to, from))
      changes.push({ path: field, ...(from === undefined ? {} : { from }), to, op: "set" });
  }
  const before = new Map<string, Record<string, unknown>>();
  const appliedTiles = member(applied, "tiles");
  if (Array.isArray(appliedTiles))
    for (const t of appliedTiles) if (isPlainObject(t)) before.set(String(t.key), t);
  for (const tile of desired.tiles as Tile[]) {
    const path = `tiles[${tile.key}]`;
    const prior = before.get(tile.key);
    before.delete(tile.key);
    if (!prior) {
      changes.push({
        path,
        op: "add",
        to: tile.id === undefined ? "(new tile: the platform assigns its id)" : `(tile ${tile.id})`,
      });
      continue;
    }
    for (const [field, to] of Object.entries(omit(tile, ["key"]))) {
      const from = prior[field];
      if (!same(to, from))
        changes.push({ path: `${path}.${field}`, ...(from === undefined ? {} : { from }), to, op: "set" });
    }
  }
  for (const [key, tile] of before) {
    changes.push({
      path: `tiles[${key}]`,
      op: "remove",
      from: `(tile ${String(tile.id)}: alerts watching it are deleted)`,
    });
  }
  return changes;
}

export const dashboardPlanner: KindPlanner = {
  plan({ kind, name, spec, record, context }: PlanInput): ResourcePlan {
    const desired = withIds(spec, record);
    const tiles = desired.tiles as Tile[];
    const allKnown = tiles.every((tile) => tile.id !== undefined);
    if (allKnown && !context.reassert && same(desired, record?.applied)) {
      return { kind, name, outcome: "none", reason: "in sync", changes: [] };
    }
    const changes = describe(desired, record?.applied);
    const body: Record<string, unknown> = {
      name: desired.name,
      tiles: tiles.map((tile) => omit(tile, ["key"])),
      ...(desired.tags === undefined ? {} : { tags: desired.tags }),
    };
    return {
      kind,
      name,
      outcome: "send",
      reason: changes.length > 0 ? `${changes.length} change(s)` : "re-asserted",
      request: {
        api: "observability",
        method: "PUT",
        route: DASHBOARD_ROUTE,
        params: { id: String(spec.dashboardId) },
        body,
      },
      changes,
    };
  },

  record({ kind, name, spec, record }, plan, result, at): ResourceRecord {
    const sent = (member(plan.request?.body, "tiles") as Record<string, unknown>[] | undefined) ?? [];
    const answered = member(result, "tiles");
    const back = Array.isArray(answered) ? answered.filter(isPlainObject) : [];
    const sentIds = new Set<unknown>(sent.map((t) => t.id).filter((id) => id !== undefined));
    // Tiles sent without an id are matched to the new ids by position when the answer keeps the order,
    // else by name among the ids that were not sent.
    const fresh = back.filter((t) => !sentIds.has(t.id));
    const tileIds: Record<string, string> = {};
    (spec.tiles as Tile[]).forEach((tile, index) => {
      const known = sent[index]?.id;
      if (typeof known === "string") {
        tileIds[tile.key] = known;
        return;
      }
      const byPosition = back.length === sent.length ? back[index]?.id : undefined;
      const byName = fresh.find((t) => t.name === tile.name);
      const id = byPosition ?? byName?.id;
      if (typeof id === "string") tileIds[tile.key] = id;
      if (byName) fresh.splice(fresh.indexOf(byName), 1);
    });
    const next: ResourceRecord = {
      ...record,
      kind,
      name,
      tileIds,
      appliedAt: at,
      observed: isPlainObject(result) ? result : undefined,
    };
    next.applied = stored(withIds(spec, next)) as Record<string, unknown>;
    return next;
  },
};
