import { randomBytes } from "node:crypto";
import type { Contract } from "../platform/routes.js";
import { configOfSeries } from "../platform/tile-config.js";
import { badRequest, type Handlers, notFound, Rejection, sameSecret } from "./http.js";
import type { Alert, Dashboard, PlatformState, Series, Tile } from "./model.js";
import { DashboardPut, parseBody } from "./requests.js";
import { tileAnswer } from "./tile-config.js";

/**
 * The observability API: Bearer auth against the fixture's tokens, `{data: ...}` answers and
 * `{message}` errors. Its two endpoints in `minimal` mode; in `full` mode also the dashboard read and
 * the source list, tiles stored and answered in `config` form, the published alert fields, and every
 * sourceId checked against the team's sources (bodies are checked against contracts/full/ first).
 */

export const observabilityErrorBody = (_status: number, _code: string, message: string) => ({ message });

/** The token `Authorization: Bearer <token>` carries, when the platform knows it. */
export function authenticateToken(
  state: PlatformState,
  authorization: string | undefined,
): string | undefined {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? "")?.[1];
  if (!token) return undefined;
  return state.observabilityTokens.find((known) => sameSecret(token, known));
}

/** A new id in the platform's 24-hex-digit style: seconds since the epoch, then random bytes. */
export function newObjectId(): string {
  const seconds = Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, "0");
  return `${seconds}${randomBytes(8).toString("hex")}`;
}

/** A tile of a `full` mode PUT: either form, as its contract check accepted it. */
type TileInput = Omit<Tile, "id"> & { id?: string };
type Put = { name: string; tiles: TileInput[]; tags?: string[] };

/** The dashboard as answered: the minimal contract as stored, the published one in config form. */
function dashboardAnswer(dashboard: Dashboard, contract: Contract) {
  if (contract === "minimal") return dashboard;
  return {
    id: dashboard.id,
    name: dashboard.name,
    tiles: dashboard.tiles.map(tileAnswer),
    tags: dashboard.tags,
    filters: [],
    savedQuery: null,
    savedQueryLanguage: null,
    savedFilterValues: [],
  };
}

/** An alert as answered: the published contract names its links teamId and dashboardId, and has channels. */
function alertAnswer(alert: Alert, contract: Contract) {
  if (contract === "minimal") return alert;
  const { team, dashboard, ...rest } = alert;
  return {
    ...rest,
    note: null,
    numConsecutiveWindows: null,
    scheduleStartAt: null,
    channels: [alert.channel],
    teamId: team,
    dashboardId: dashboard,
    savedSearchId: null,
    silenced: null,
    executionErrors: [],
  };
}

/** The sourceIds of a PUT that name no source of the team. */
function unknownSources(state: PlatformState, put: Put): string[] {
  const known = new Set(state.sources.map((s) => s.id));
  const named = put.tiles.flatMap((tile) => [
    ...(tile.series ?? []).map((s: Series) => s.sourceId),
    tile.config?.sourceId,
  ]);
  const unknown = named.filter((id): id is string => typeof id === "string" && id !== "" && !known.has(id));
  return [...new Set(unknown)];
}

export function observabilityHandlers(
  state: PlatformState,
  contract: Contract = "minimal",
): Handlers<"observability", string> {
  const find = (id: string) => {
    const dashboard = state.dashboards.find((d) => d.id === id);
    // The published API answers an unknown dashboard with an empty 404.
    if (!dashboard)
      throw new Rejection(404, "NOT_FOUND", `dashboard ${id} does not exist`, contract === "full");
    return dashboard;
  };
  return {
    putDashboard({ params, body }) {
      const dashboard = find(params.id ?? "");
      const put: Put = contract === "full" ? (body as Put) : parseBody(DashboardPut, body);
      const unknown = contract === "full" ? unknownSources(state, put) : [];
      if (unknown.length > 0)
        throw badRequest(`Could not find the following source IDs: ${unknown.join(", ")}`);
      // A tile keeps its id only when the id names a tile of this dashboard, once; any other tile
      // is new. This is how the real service churns ids, and why driftless must remember them.
      const existing = new Set(dashboard.tiles.map((t) => t.id));
      const tiles: Tile[] = put.tiles.map(({ id, ...tile }) => {
        const kept = id !== undefined && existing.delete(id);
        const stored = { id: kept && id !== undefined ? id : newObjectId(), ...tile };
        return contract === "full" ? storedConfig(stored) : stored;
      });
      dashboard.name = put.name;
      dashboard.tiles = tiles;
      if (put.tags !== undefined) dashboard.tags = put.tags;
      // Alerts that watched a tile that no longer exists go with it.
      const live = new Set(tiles.map((t) => t.id));
      // In place, so a test holding `state.alerts` sees the deletion too.
      const kept = state.alerts.filter((a) => a.dashboard !== dashboard.id || live.has(a.tileId));
      state.alerts.splice(0, state.alerts.length, ...kept);
      return { status: 200, body: { data: dashboardAnswer(dashboard, contract) } };
    },
    getDashboard({ params }) {
      return { status: 200, body: { data: dashboardAnswer(find(params.id ?? ""), contract) } };
    },
    getAlert({ params }) {
      const alert = state.alerts.find((a) => a.id === params.id);
      if (!alert) throw notFound(`alert ${params.id} does not exist`);
      return { status: 200, body: { data: alertAnswer(alert, contract) } };
    },
    listSources() {
      return { status: 200, body: { data: state.sources } };
    },
  };
}

/** The published platform stores every tile as config: a series tile is translated on the way in. */
function storedConfig(tile: Tile): Tile {
  if (tile.config || !tile.series) return tile;
  const { series, asRatio, ...place } = tile;
  return { ...place, config: configOfSeries(series, asRatio) };
}
