import { isApiError, messageOf } from "../errors.js";
import type { ManifestOf } from "../manifests/manifest.js";
import { notFoundHint } from "../manifests/not-found.js";
import type { PlatformClient } from "../platform/client.js";
import { type AlertAnswer, dashboardOf } from "../platform/observability.js";
import { resultOf } from "../resources.js";
import type { WatchStatus } from "./status-board.js";

export type AlertPollDeps = {
  platform: PlatformClient;
  /** The Dashboard manifests of the same revision, by manifest name. */
  dashboards: ReadonlyMap<string, ManifestOf<"Dashboard">>;
  /**
   * Tile key → server tile id of a Dashboard, as the reconciler last loaded or saved them (never a load
   * of its own); undefined until it was applied.
   */
  tileIdsOf: (dashboardName: string) => Promise<Record<string, string> | undefined>;
  signal?: AbortSignal;
};

/**
 * What one alert poll found: the status to show, the state for the metric (undefined: not read), and
 * whether the alert is gone from the platform (its series must go too).
 */
export type AlertPoll = { status: WatchStatus; state?: string; gone?: boolean };

/**
 * Reads the alert of one AlertWatch. Its state is kept as the platform spells it (a state the API does
 * not name is still shown). When the watch names a dashboard, the alert is checked against it: a tile
 * the dashboard no longer has is a Warning, because the platform deletes alerts whose tile is gone.
 */
export async function pollAlert(watch: ManifestOf<"AlertWatch">, deps: AlertPollDeps): Promise<AlertPoll> {
  const base = { kind: watch.kind, name: watch.name, polledAt: new Date().toISOString() };
  let alert: AlertAnswer;
  let requestId: string | undefined;
  try {
    ({ result: alert, requestId } = await deps.platform.call(
      "getAlert",
      { id: watch.spec.alertId },
      undefined,
      {
        priority: "poll",
        ...(deps.signal ? { signal: deps.signal } : {}),
      },
    ));
  } catch (error) {
    const notFound = isApiError(error) && error.context.status === 404;
    const message = `cannot read alert ${watch.spec.alertId}: ${messageOf(error)}${notFoundHint(watch.kind, error)}`;
    return {
      gone: notFound,
      status: {
        ...base,
        ...resultOf(watch, "poll-failed", {
          message,
          requestId: isApiError(error) ? error.context.requestId : undefined,
        }),
      },
    };
  }
  const state = alert.state ?? "unknown";
  const observed = {
    state,
    tileId: alert.tileId ?? null,
    dashboard: dashboardOf(alert) ?? null,
  };
  const problem = await tileProblem(watch, alert, deps);
  return {
    state,
    status: {
      ...base,
      ...resultOf(watch, problem ? "watch-finding" : "in-sync", { message: problem, requestId }),
      observed,
    },
  };
}

/** Why the alert no longer watches what the manifest says, or undefined when it does. */
async function tileProblem(
  watch: ManifestOf<"AlertWatch">,
  alert: AlertAnswer,
  deps: AlertPollDeps,
): Promise<string | undefined> {
  const name = watch.spec.dashboard;
  if (name === undefined) return undefined;
  const dashboard = deps.dashboards.get(name);
  if (!dashboard) return `dashboard ${name} is not in the manifests`;
  const dashboardId = dashboard.spec.dashboardId;
  const watched = dashboardOf(alert);
  if (watched && watched !== dashboardId) {
    return `alert watches dashboard ${watched}, not ${dashboardId} (Dashboard/${name})`;
  }
  // A copy: the tiles adopted by id are added to it below.
  const known = { ...(await deps.tileIdsOf(name)) };
  // A tile adopted by id is known before its first apply.
  for (const tile of dashboard.spec.tiles) if (tile.id && !known[tile.key]) known[tile.key] = tile.id;
  const tileId = alert.tileId ?? undefined;
  const key = watch.spec.tile;
  if (key !== undefined) {
    const expected = known[key];
    if (expected === undefined) return `tile ${key} of Dashboard/${name} has no id yet (not applied)`;
    if (tileId !== expected) {
      return `alert watches tile ${tileId ?? "(none)"}, but tile ${key} of Dashboard/${name} is ${expected}`;
    }
    return undefined;
  }
  if (tileId === undefined || !Object.values(known).includes(tileId)) {
    return `alert watches tile ${tileId ?? "(none)"}, which is no longer in Dashboard/${name}`;
  }
  return undefined;
}
