import { randomBytes } from "node:crypto";
import { type Handlers, notFound, sameSecret } from "./http.js";
import type { PlatformState, Tile } from "./model.js";
import { DashboardPut, parseBody } from "./requests.js";

/**
 * The observability API: its two endpoints, Bearer auth against the
 * fixture's tokens, `{data: ...}` answers and `{message}` errors.
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

export function observabilityHandlers(state: PlatformState): Handlers<"observability", string> {
  return {
    putDashboard({ params, body }) {
      const dashboard = state.dashboards.find((d) => d.id === params.id);
      if (!dashboard) throw notFound(`dashboard ${params.id} does not exist`);
      const put = parseBody(DashboardPut, body);
      // A tile keeps its id only when the id names a tile of this dashboard, once; any other tile
      // is new. This is how the real service churns ids, and why driftless must remember them.
      const existing = new Set(dashboard.tiles.map((t) => t.id));
      const tiles: Tile[] = put.tiles.map(({ id, ...tile }) => {
        const kept = id !== undefined && existing.delete(id);
        return { id: kept && id !== undefined ? id : newObjectId(), ...tile };
      });
      dashboard.name = put.name;
      dashboard.tiles = tiles;
      if (put.tags !== undefined) dashboard.tags = put.tags;
      // Alerts that watched a tile that no longer exists go with it.
      const live = new Set(tiles.map((t) => t.id));
      // In place, so a test holding `state.alerts` sees the deletion too.
      const kept = state.alerts.filter((a) => a.dashboard !== dashboard.id || live.has(a.tileId));
      state.alerts.splice(0, state.alerts.length, ...kept);
      return { status: 200, body: { data: dashboard } };
    },
    getAlert({ params }) {
      const alert = state.alerts.find((a) => a.id === params.id);
      if (!alert) throw notFound(`alert ${params.id} does not exist`);
      return { status: 200, body: { data: alert } };
    },
  };
}
