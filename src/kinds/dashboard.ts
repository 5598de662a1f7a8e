import { type DriftField, walk } from "../drift/compare.js";
import { sameId } from "../manifests/identity.js";
import type { Change, ResourcePlan, SpecOf, Write } from "../plan/types.js";
import { isPlainObject, member, omit, same, stored } from "../plan/values.js";
import { DashboardAnswer, type DashboardCreate, type DashboardUpdate } from "../platform/observability.js";
import { configOfSeries, type SeriesInput } from "../platform/tile-config.js";
import type { ResourceRecord } from "../state/store.js";
import { type Complete, type LiveRead, none, type PlanInput, type Subject } from "./kind.js";
import { baselineRecord, foldLive, specPathOf } from "./shared.js";

/**
 * A dashboard, adopted by its `dashboardId` or created with its POST when the manifest names none, and
 * replaced whole by its PUT, so every tile is sent, each with the id it already has: a tile sent without
 * one gets a new id and the platform deletes the alerts that watch the old one. Ids come from the
 * manifest (`id`, adoption) or from the state's key → id map, which is filled from the answer for the
 * tiles sent without one. The tile `key` is driftless's and never sent. Read with its GET, each tile
 * compared by its id; deleted with its DELETE, which deletes the alerts on its tiles too.
 */

type Spec = SpecOf<"Dashboard">;
type Tile = Spec["tiles"][number];
type Board = Subject<"Dashboard">;

/** The dashboard's id: the one the manifest names, or the one the platform answered its create with. */
const idOf = ({ spec, record }: Board): string | undefined => spec.dashboardId ?? record?.serverId;

/** The spec with every known tile id filled in, and the manifest's own tile ids, by key. */
type Desired = Spec & { adoptedTileIds?: Record<string, string> };

/** Where `applied` keeps the tile ids the manifest gave, by key. */
const ADOPTED = "adoptedTileIds";

/**
 * The spec with every tile's known id filled in: the form compared with, and kept as, `applied`. It also
 * keeps the manifest's own tile ids (`adoptedTileIds`, never sent), to know an adoption already tried.
 */
function withIds(spec: Spec, record: ResourceRecord | undefined): Desired {
  const tried = member(record?.applied, ADOPTED);
  const tiles = spec.tiles.map((tile) => {
    const id = knownId(tile, record?.tileIds?.[tile.key], member(tried, tile.key));
    return id === undefined ? tile : { ...tile, id };
  });
  const adopted = adoptedIds(spec.tiles);
  return {
    ...spec,
    tiles: carryRenamed(tiles, record),
    ...(Object.keys(adopted).length > 0 ? { [ADOPTED]: adopted } : {}),
  };
}

/** The tile ids the manifest gives, by tile key. */
function adoptedIds(tiles: Tile[]): Record<string, string> {
  const ids: Record<string, string> = {};
  for (const tile of tiles) if (typeof tile.id === "string") ids[tile.key] = tile.id;
  return ids;
}

/**
 * The manifest's `id` adopts a tile. When that same id was sent before and the platform gave the tile
 * another one (the id named no tile of the dashboard), the id it gave is kept: sending the stale one
 * again would make a new tile at every change. A different manifest id is a new adoption, and is sent.
 */
function knownId(tile: Tile, known: string | undefined, tried: unknown): string | undefined {
  if (tile.id === undefined) return known;
  if (known !== undefined && known !== tile.id && tried === tile.id) return known;
  return tile.id;
}

/**
 * A tile whose key was renamed keeps its id: a tile with no id takes the id of a key that left the
 * manifest, when that tile was last applied with the same fields, or else the same name.
 */
function carryRenamed(tiles: Tile[], record: ResourceRecord | undefined): Tile[] {
  // Every pass plans every dashboard: the usual case (every tile has its id) costs one scan.
  if (tiles.every((tile) => tile.id !== undefined)) return tiles;
  const keys = new Set(tiles.map((tile) => tile.key));
  const used = new Set<string | undefined>(tiles.map((tile) => tile.id));
  const applied = appliedTiles(record?.applied);
  const orphans = Object.entries(record?.tileIds ?? {})
    .filter(([key, id]) => !keys.has(key) && !used.has(id))
    .map(([key, id]) => ({ id, tile: applied.get(key) }));
  if (orphans.length === 0) return tiles;
  const fields = (tile: Record<string, unknown> | undefined) => tile && omit(tile, ["key", "id"]);
  const take = (match: (orphan: (typeof orphans)[number]) => boolean) => {
    const found = orphans.find(match);
    if (found) orphans.splice(orphans.indexOf(found), 1);
    return found?.id;
  };
  return tiles.map((tile) => {
    if (tile.id !== undefined) return tile;
    const id =
      take((o) => same(fields(o.tile), fields(tile))) ?? take((o) => member(o.tile, "name") === tile.name);
    return id === undefined ? tile : { ...tile, id };
  });
}

/** The tiles of an applied dashboard, by key. */
function appliedTiles(applied: unknown): Map<string, Record<string, unknown>> {
  const tiles = member(applied, "tiles");
  const byKey = new Map<string, Record<string, unknown>>();
  if (Array.isArray(tiles)) for (const t of tiles) if (isPlainObject(t)) byKey.set(String(t.key), t);
  return byKey;
}

/**
 * The diff a plan shows: the dashboard's own fields, then each tile. A tile the record does not hold
 * shows every field it sends (name, place, each series whole), so that a reviewer reads the query;
 * a changed tile shows the fields that change, each series whole before and after.
 */
function describe(desired: Desired, applied: unknown): Change[] {
  const changes: Change[] = [];
  for (const field of ["name", "tags"] as const) {
    const to = desired[field];
    const from = member(applied, field);
    if (to !== undefined && !same(to, from))
      changes.push({ path: field, ...(from === undefined ? {} : { from }), to, op: "set" });
  }
  const before = appliedTiles(applied);
  for (const tile of desired.tiles) {
    const path = `tiles[${tile.key}]`;
    // A renamed key keeps its tile: the prior tile is the one with the same id.
    const priorKey = before.has(tile.key)
      ? tile.key
      : [...before].find(([, t]) => tile.id !== undefined && t.id === tile.id)?.[0];
    const prior = priorKey === undefined ? undefined : before.get(priorKey);
    if (priorKey !== undefined) before.delete(priorKey);
    if (priorKey !== undefined && priorKey !== tile.key)
      changes.push({ path: `${path}.key`, from: priorKey, to: tile.key, op: "set" });
    changes.push(...(prior ? tileChanges(tile, prior, path) : newTile(tile, path)));
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

/** A tile the record does not hold: whose id it takes, then every field it sends, each series alone. */
function newTile(tile: Tile, path: string): Change[] {
  const { series, ...fields } = omit(tile, ["key", "id"]);
  return [
    {
      path,
      op: "add",
      to: tile.id === undefined ? "(new tile: the platform assigns its id)" : `(tile ${tile.id})`,
    },
    ...Object.entries(fields).map(([field, to]): Change => ({ path: `${path}.${field}`, to, op: "set" })),
    ...series.map((entry, index): Change => ({ path: `${path}.series[${index}]`, to: entry, op: "set" })),
  ];
}

/** The fields of a tile that differ from `prior` (its applied form); series entry by entry. */
function tileChanges(tile: Tile, prior: Record<string, unknown>, path: string): Change[] {
  const changes: Change[] = [];
  for (const [field, to] of Object.entries(omit(tile, ["key", "series"]))) {
    const from = prior[field];
    if (!same(to, from))
      changes.push({ path: `${path}.${field}`, ...(from === undefined ? {} : { from }), to, op: "set" });
  }
  const was = Array.isArray(prior.series) ? prior.series : [];
  tile.series.forEach((to, index) => {
    const at = `${path}.series[${index}]`;
    if (index >= was.length) changes.push({ path: at, to, op: "add" });
    else if (!same(to, was[index])) changes.push({ path: at, from: was[index], to, op: "set" });
  });
  for (let index = tile.series.length; index < was.length; index++)
    changes.push({ path: `${path}.series[${index}]`, from: was[index], op: "remove" });
  return changes;
}

function plan(input: PlanInput<"Dashboard">): ResourcePlan {
  const { kind, name, spec, record, context } = input;
  const desired = withIds(spec, record);
  const { tiles } = desired;
  const allKnown = tiles.every((tile) => tile.id !== undefined);
  if (allKnown && !context.reassert && same(desired, record?.applied)) {
    return { kind, name, outcome: "none", reason: "in sync", changes: [] };
  }
  const changes = describe(desired, record?.applied);
  const body: DashboardUpdate = {
    name: desired.name,
    tiles: tiles.map((tile) => omit(tile, ["key"])),
    ...(desired.tags === undefined ? {} : { tags: desired.tags }),
  };
  return {
    kind,
    name,
    outcome: "send",
    reason: changes.length > 0 ? `${changes.length} change(s)` : "re-asserted",
    write: {
      request: { route: "putDashboard", params: { id: idOf(input) ?? "" }, body },
      record: (answer, at) => recordOf(input, body, answer, at),
    } satisfies Write<"putDashboard">,
    changes,
  };
}

/**
 * The record once `body` was answered: each tile's id by its key. A sent id the answer keeps is the
 * tile's; any other tile takes a new id from the answer, by position when the answer keeps the order,
 * else by name. An answer without tiles changes no id.
 */
function recordOf(
  { kind, name, spec, record }: Board,
  body: DashboardUpdate | DashboardCreate,
  answer: DashboardAnswer,
  at: string,
): ResourceRecord {
  const sent = body.tiles;
  const back = answer.tiles;
  const backIds = new Set(back.map((t) => t.id));
  const kept = (id: string | undefined): id is string =>
    id !== undefined && (back.length === 0 || backIds.has(id));
  const fresh = back.filter((t) => !sent.some((s) => "id" in s && s.id === t.id && kept(s.id)));
  const tileIds: Record<string, string> = {};
  spec.tiles.forEach((tile, index) => {
    const sentTile = sent[index];
    const sentId = sentTile && "id" in sentTile ? sentTile.id : undefined;
    if (kept(sentId)) {
      tileIds[tile.key] = sentId;
      return;
    }
    const atPosition = back.length === sent.length ? back[index] : undefined;
    const match =
      atPosition && fresh.includes(atPosition) ? atPosition : fresh.find((t) => t.name === tile.name);
    if (!match) return;
    fresh.splice(fresh.indexOf(match), 1);
    tileIds[tile.key] = match.id;
  });
  const next: ResourceRecord = { ...record, kind, name, tileIds, appliedAt: at, observed: answer };
  // The ids just sent count as tried, so that one the platform replaced is not sent again.
  const tried = { ...next, applied: { [ADOPTED]: adoptedIds(spec.tiles) } };
  next.applied = stored(withIds(spec, tried));
  return next;
}

/** The dashboard's POST: every tile new (the platform gives each an id, kept by its key). */
function createPlan(input: PlanInput<"Dashboard">): ResourcePlan {
  const { kind, name, spec } = input;
  const body: DashboardCreate = {
    name: spec.name,
    tiles: spec.tiles.map((tile) => omit(tile, ["key", "id"])),
    ...(spec.tags === undefined ? {} : { tags: spec.tags }),
  };
  return {
    kind,
    name,
    outcome: "send",
    reason: "not created yet",
    write: {
      request: { route: "createDashboard", params: {}, body },
      record: (answer, at) => created(input, answer.id, answer, at),
    } satisfies Write<"createDashboard">,
    changes: describe(withIds(spec, undefined), undefined),
  };
}

/**
 * The record of a dashboard known to be `id` (created, or found by a list): its tiles' ids by key,
 * from the answer (or the listed dashboard) as for a POST of every tile.
 */
function created({ kind, name, spec, record }: Board, id: string, live: object | undefined, at: string) {
  const { intent: _done, ...rest } = record ?? { kind, name };
  const answer = DashboardAnswer.safeParse(live).data ?? { id, tiles: [] };
  const body: DashboardCreate = {
    name: spec.name,
    tiles: spec.tiles.map((tile) => omit(tile, ["key", "id"])),
  };
  return { ...recordOf({ kind, name, spec, record: rest }, body, answer, at), serverId: id };
}

/**
 * The tiles compared by id: a PUT replaces the whole dashboard, so a tile added in the console is drift
 * too (the next write removes it). A tile whose id is not known yet is not compared, and then neither
 * are the live tiles it may be.
 */
function drift({ spec, record }: PlanInput<"Dashboard">, live: unknown): DriftField[] {
  const desired = withIds(spec, record);
  const fields = walk(omit(desired, ["dashboardId", "tiles", ADOPTED]), live, { tags: { kind: "set" } });
  const liveTiles = member(live, "tiles");
  if (!Array.isArray(liveTiles)) return fields;
  const byId = new Map(liveTiles.filter(isPlainObject).map((tile) => [String(tile.id), tile]));
  let allKnown = true;
  for (const tile of desired.tiles) {
    if (tile.id === undefined) {
      allKnown = false;
      continue;
    }
    const found = byId.get(tile.id);
    byId.delete(tile.id);
    const path = `tiles[${tile.key}]`;
    if (!found) fields.push({ path, want: `(tile ${tile.id})`, have: null });
    else fields.push(...compareTile(tile, found, path));
  }
  if (!allKnown) return fields;
  for (const [id, tile] of byId) {
    fields.push({ path: `tiles[${id}]`, want: null, have: `(tile ${id}${nameOf(tile)}, added outside git)` });
  }
  return fields;
}

const nameOf = (tile: Record<string, unknown>) => (typeof tile.name === "string" ? ` "${tile.name}"` : "");

/** A tile: its place and name, and its series as the live tile keeps them (series, or config). */
function compareTile(tile: Tile, live: Record<string, unknown>, path: string): DriftField[] {
  const { series, asRatio, ...place } = omit(tile, ["key", "id"]);
  const fields = walk(place, live, {}, path);
  if (Array.isArray(live.series)) {
    fields.push(...walk(series, live.series, {}, `${path}.series`));
    fields.push(...walk(asRatio, live.asRatio, {}, `${path}.asRatio`));
    return fields;
  }
  if (!isPlainObject(live.config)) return fields;
  const want = configOfSeries(series satisfies readonly SeriesInput[], asRatio);
  fields.push(...walk(want, live.config, {}, `${path}.config`));
  return fields;
}

/** Marks a dashboard's applied form as differing, so that its PUT (which sends every tile) is planned. */
const OUTSIDE_GIT = "(changed outside git)";

function fold(record: ResourceRecord, fields: readonly DriftField[], live: unknown): ResourceRecord {
  const tiles = fields.some((field) => field.path.startsWith("tiles"));
  const folded = foldLive(
    record,
    fields.filter((field) => !field.path.startsWith("tiles")),
    live,
  );
  return tiles ? { ...folded, applied: { ...folded.applied, [OUTSIDE_GIT]: true } } : folded;
}

/**
 * A dashboard met for the first time (reads on): its tiles' ids are the manifest's (an adoption), as if
 * it had been PUT and answered `live`; a tile that differs live, or has no id yet, makes the PUT.
 */
function baseline(input: PlanInput<"Dashboard">, live: object, fields: readonly DriftField[]) {
  const { kind, name, spec } = input;
  const tileIds = adoptedIds(spec.tiles);
  const tried: ResourceRecord = { kind, name, tileIds, applied: { [ADOPTED]: tileIds } };
  return fold(baselineRecord(input, withIds(spec, tried), live, { tileIds }), fields, live);
}

/** The tile ids by key that a PUT of the dashboard sends now: what an alert on one of its tiles names. */
function tileIdsOf(spec: Spec, record: ResourceRecord | undefined): Record<string, string> {
  const ids: Record<string, string> = {};
  for (const tile of withIds(spec, record).tiles) if (tile.id !== undefined) ids[tile.key] = tile.id;
  return ids;
}

export const dashboard: Complete<"Dashboard"> = {
  kind: "Dashboard",
  // Alerts name dashboards' tiles and need their ids: dashboards are applied first.
  phase: "prerequisites",
  references: () => [],
  parts: tileIdsOf,
  address: (spec, record) => {
    const id = spec.dashboardId ?? record?.serverId;
    return id === undefined ? undefined : { id };
  },
  create: {
    noun: "dashboard",
    within: "of the team",
    idField: "dashboardId",
    idOf: (spec) => spec.dashboardId,
    plan: createPlan,
    list: () =>
      ({
        request: { route: "listDashboards", params: {}, body: undefined },
        live: (answer) => answer,
      }) satisfies LiveRead<"listDashboards">,
    // A lost create's dashboard: its name and its tiles' names, in order.
    matches: ({ spec }, listed) => {
      const tiles = member(listed, "tiles");
      return (
        listed.name === spec.name &&
        Array.isArray(tiles) &&
        tiles.length === spec.tiles.length &&
        spec.tiles.every((tile, index) => member(tiles[index], "name") === tile.name)
      );
    },
    adopted: created,
    unusable: () => undefined,
  },
  delete: {
    request: ({ id }) => (id ? { route: "deleteDashboard", params: { id }, body: undefined } : undefined),
    cascade: "the platform deletes the alerts on its tiles with it",
  },
  update: { plan, learn: none("a dashboard's PUT sends it whole: nothing live is needed to plan it") },
  observe: {
    read: (board) => {
      const id = idOf(board);
      if (id === undefined) return undefined;
      return {
        request: { route: "getDashboard", params: { id }, body: undefined },
        live: (answer) => answer,
      } satisfies LiveRead<"getDashboard">;
    },
    drift,
    fold,
    baseline,
    listed: (board) => {
      const id = idOf(board);
      if (id === undefined) return undefined;
      return {
        request: { route: "listDashboards", params: {}, body: undefined },
        live: (answer) => answer.find((listed) => sameId(listed.id, id)),
      } satisfies LiveRead<"listDashboards">;
    },
  },
  poll: none("a dashboard is written, not watched"),
  specPath: specPathOf("dashboardId"),
};
