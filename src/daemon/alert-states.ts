import { messageOf } from "../errors.js";
import { idKey, manifestId } from "../manifests/identity.js";
import type { ManifestOf } from "../manifests/manifest.js";
import { mapLimited } from "../map-limited.js";
import type { PlatformClient } from "../platform/client.js";
import { type AlertAnswer, dashboardOf } from "../platform/observability.js";
import { readAllPages } from "../platform/pages.js";
import type { Records } from "../state/saved-records.js";
import type { LiveState } from "./status-board.js";

/**
 * The live state of each managed Alert, for /status and the status page (beside its manifest's status,
 * as an AlertWatch's poll shows its alert): read on the poll schedule, at the poll's priority. A few
 * alerts are read one GET each; more are picked from the team's alert list (a page per 1,000 alerts),
 * so that a thousand imported alerts do not fill the observability budget every minute.
 */

/** Up to this many managed alerts are read one by one; more, from the list. */
export const ONE_BY_ONE = 5;

export type AlertStatesDeps = {
  platform: PlatformClient;
  /** The records as last loaded or saved: the id of an alert driftless created. */
  records?: () => Promise<Records>;
  signal?: AbortSignal;
  now?: () => number;
};

/** The live state of each of `alerts` that has an id, by resource id; what failed, when a read did. */
export async function readAlertStates(
  alerts: readonly ManifestOf<"Alert">[],
  deps: AlertStatesDeps,
): Promise<Map<string, LiveState>> {
  const records = alerts.some((alert) => alert.spec.alertId === undefined)
    ? await deps.records?.()
    : undefined;
  const targets = alerts.flatMap((alert) => {
    const id = manifestId(alert);
    const alertId = alert.spec.alertId ?? records?.[id]?.serverId;
    return alertId === undefined ? [] : [{ id, alertId }];
  });
  const states = new Map<string, LiveState>();
  if (targets.length === 0) return states;
  const polledAt = () => new Date(deps.now?.() ?? Date.now()).toISOString();
  const call = { priority: "poll" as const, ...(deps.signal ? { signal: deps.signal } : {}) };
  if (targets.length <= ONE_BY_ONE) {
    await mapLimited(targets, 4, async ({ id, alertId }) => {
      try {
        const { result } = await deps.platform.call("getAlert", { id: alertId }, undefined, call);
        states.set(id, { observed: observedOf(result), polledAt: polledAt() });
      } catch (error) {
        states.set(id, { observed: { error: messageOf(error) }, polledAt: polledAt() });
      }
    });
    return states;
  }
  let listed: AlertAnswer[];
  try {
    listed = await readAllPages(deps.platform, "listAlerts", call);
  } catch (error) {
    for (const { id } of targets)
      states.set(id, { observed: { error: messageOf(error) }, polledAt: polledAt() });
    return states;
  }
  const byId = new Map(listed.map((alert) => [idKey(alert.id), alert]));
  const at = polledAt();
  for (const { id, alertId } of targets) {
    const alert = byId.get(idKey(alertId));
    states.set(id, {
      observed: alert ? observedOf(alert) : { error: `alert ${alertId} is not in the team's alerts` },
      polledAt: at,
    });
  }
  return states;
}

/** What an alert's status shows of it: its state as the platform spells it, and the tile it watches. */
const observedOf = (alert: AlertAnswer): LiveState["observed"] => ({
  state: alert.state ?? "unknown",
  tileId: alert.tileId ?? null,
  dashboard: dashboardOf(alert) ?? null,
});
