import { contractCheck, dottedPath } from "../platform/contracts.js";
import type { Contract } from "../platform/routes.js";
import { configOfSeries } from "../platform/tile-config.js";
import { alertHandlers } from "./alerts.js";
import type { Group, ObservabilityDeps } from "./handler-group.js";
import { type Answer, badRequest, type Handlers, Rejection, sameSecret } from "./http.js";
import type { Alert, Dashboard, PlatformState, Series, Tile } from "./model.js";
import { newObjectId } from "./object-id.js";
import { DashboardPut, parseBody } from "./requests.js";
import { alertable, tileAnswer } from "./tile-config.js";
import { webhookHandlers } from "./webhooks.js";

/**
 * The observability API: Bearer auth against the fixture's tokens, `{data: ...}` answers and
 * `{message}` errors. Its two endpoints in `minimal` mode; in `full` mode also the published contract's
 * dashboard list, create, dry run, read and delete, its alerts (alerts.ts) and webhooks (webhooks.ts),
 * the source list, tiles stored and answered in `config` form, and every sourceId checked against the
 * team's sources (bodies are checked against contracts/full/ first).
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

/** A tile of a `full` mode body: either form, as its contract check accepted it. */
type TileInput = Omit<Tile, "id"> & { id?: string };
type Body = { name: string; tiles: TileInput[]; tags?: string[] };

/** What the observability API's handlers work on. */

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

/** Takes the alerts `gone` picks out of the state, in place (a test may hold `state.alerts`). */
function dropAlerts(state: PlatformState, gone: (alert: Alert) => boolean): void {
  const kept = state.alerts.filter((alert) => !gone(alert));
  state.alerts.splice(0, state.alerts.length, ...kept);
}

/**
 * What the server refuses in a dashboard body once its shape passed: two tiles with one id, or a
 * sourceId that names no source of the team. Undefined when nothing.
 */
function serverProblem(state: PlatformState, body: Body): string | undefined {
  const ids = body.tiles.flatMap((tile) => (tile.id === undefined ? [] : [tile.id]));
  const twice = ids.find((id, i) => ids.indexOf(id) !== i);
  if (twice !== undefined) return `Body validation failed: tiles: the id ${twice} is given to two tiles`;
  const known = new Set(state.sources.map((s) => s.id));
  const named = body.tiles.flatMap((tile) => [
    ...(tile.series ?? []).map((s: Series) => s.sourceId),
    tile.config?.sourceId,
  ]);
  const unknown = named.filter((id): id is string => typeof id === "string" && id !== "" && !known.has(id));
  if (unknown.length > 0)
    return `Could not find the following source IDs: ${[...new Set(unknown)].join(", ")}`;
  return undefined;
}

export function observabilityHandlers(deps: ObservabilityDeps): Handlers<"observability", string> {
  return {
    ...dashboardHandlers(deps),
    ...alertHandlers(deps),
    ...webhookHandlers(deps),
    listSources() {
      return { status: 200, body: { data: deps.state.sources } };
    },
  };
}

/** Some of the observability API's handlers. */

type DashboardRoutes =
  | "putDashboard"
  | "getDashboard"
  | "listDashboards"
  | "createDashboard"
  | "validateDashboard"
  | "deleteDashboard";

/** The dashboard `id`; throws a 404 Rejection, with an empty body in the published contract. */
function findDashboard({ state, contract }: ObservabilityDeps, id = ""): Dashboard {
  const dashboard = state.dashboards.find((d) => d.id === id);
  if (!dashboard)
    throw new Rejection(404, "NOT_FOUND", `dashboard ${id} does not exist`, contract === "full");
  return dashboard;
}

function dashboardHandlers(deps: ObservabilityDeps): Group<DashboardRoutes> {
  const { state, contract } = deps;
  const answer = (dashboard: Dashboard): Answer => ({
    status: 200,
    body: { data: dashboardAnswer(dashboard, contract) },
  });
  /** A tile as the platform stores it: the published one translates a series tile into config. */
  const stored = (tile: TileInput): TileInput => (contract === "full" ? storedConfig(tile) : tile);
  return {
    putDashboard({ params, body }) {
      const dashboard = findDashboard(deps, params.id);
      const put: Body = contract === "full" ? (body as Body) : parseBody(DashboardPut, body);
      const problem = contract === "full" ? serverProblem(state, put) : undefined;
      if (problem) throw badRequest(problem);
      replaceTiles(state, dashboard, put.tiles.map(stored), contract);
      dashboard.name = put.name;
      if (put.tags !== undefined) dashboard.tags = put.tags;
      return answer(dashboard);
    },
    getDashboard({ params }) {
      return answer(findDashboard(deps, params.id));
    },
    listDashboards() {
      const byName = [...state.dashboards].sort((a, b) => b.name.localeCompare(a.name));
      return { status: 200, body: { data: byName.map((d) => dashboardAnswer(d, contract)) } };
    },
    createDashboard({ body }) {
      const post = body as Body;
      const problem = serverProblem(state, post);
      if (problem) throw badRequest(problem);
      const dashboard: Dashboard = {
        id: newObjectId(),
        name: post.name,
        // Every tile is new: an id in the body is not kept.
        tiles: post.tiles.map((tile) => ({ ...stored(tile), id: newObjectId() })),
        tags: [...new Set(post.tags ?? [])],
      };
      state.dashboards.push(dashboard);
      return answer(dashboard);
    },
    validateDashboard({ body }) {
      return { status: 200, body: dryRun(state, body) };
    },
    deleteDashboard({ params }) {
      // Answered alike for an id the team does not have: a repeated delete succeeds.
      const dashboard = state.dashboards.find((d) => d.id === params.id);
      if (dashboard) state.dashboards.splice(state.dashboards.indexOf(dashboard), 1);
      dropAlerts(state, (alert) => alert.dashboard === params.id);
      return { status: 200, body: {} };
    },
  };
}

/** The dry run's verdict on a create body: the document's rules, then the server's; nothing is stored. */
function dryRun(state: PlatformState, body: unknown) {
  const issues = contractCheck("full").request("createDashboard", {}, body);
  const errors = issues.map((issue) => ({ path: dottedPath(issue.path), message: issue.message }));
  const problem = errors.length === 0 ? serverProblem(state, body as Body) : undefined;
  if (problem) errors.push({ path: "", message: problem });
  const valid = errors.length === 0;
  return { valid, errors, normalized: valid ? body : null };
}

/**
 * A PUT's tiles in place of the dashboard's. A tile keeps its id only when the id names a tile of this
 * dashboard, once; any other tile is new. This is how the real service churns ids, and why driftless
 * must remember them. The alerts of a tile that is gone go with it, and in the published contract so
 * do those of a tile whose display type cannot carry alerts.
 */
function replaceTiles(
  state: PlatformState,
  dashboard: Dashboard,
  tiles: TileInput[],
  contract: Contract,
): void {
  const existing = new Set(dashboard.tiles.map((t) => t.id));
  dashboard.tiles = tiles.map(({ id, ...tile }) => {
    const kept = id !== undefined && existing.delete(id);
    return { id: kept && id !== undefined ? id : newObjectId(), ...tile };
  });
  const live = new Map(dashboard.tiles.map((t) => [t.id, t]));
  dropAlerts(state, (alert) => {
    if (alert.dashboard !== dashboard.id) return false;
    const tile = live.get(alert.tileId ?? "");
    return !tile || (contract === "full" && !alertable(tile));
  });
}

/** The published platform stores every tile as config: a series tile is translated on the way in. */
function storedConfig(tile: TileInput): TileInput {
  if (tile.config || !tile.series) return tile;
  const { series, asRatio, ...place } = tile;
  return { ...place, config: configOfSeries(series, asRatio) };
}
