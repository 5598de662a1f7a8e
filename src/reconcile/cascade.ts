import { idKey } from "../manifests/identity.js";
import { member } from "../plan/values.js";
import type { PlanView } from "../plan/view.js";
import type { Read } from "../platform/client.js";
import { type AlertAnswer, dashboardOf } from "../platform/observability.js";
import { collectPages } from "../platform/pages.js";
import { resourceId } from "../resources.js";
import type { ResourceRecord } from "../state/store.js";

/**
 * What the platform deletes along with what a plan sends, for the reviewer: the alerts on a dashboard
 * that is deleted, and on the tiles a dashboard's PUT leaves out (docs/platform-apis.md#create-and-delete-a-dashboard).
 * Managed alerts are known from the records as the plan found them (the tile each was last sent
 * with); with reads on, the team's alert list adds the alerts driftless does not manage. Each is a
 * note on the dashboard's view.
 */

/** The most unmanaged alerts a note names one by one; the rest are counted. */
const NAMED = 10;

/** A dashboard's alerts at risk: its id, and the tile ids going away (every tile: undefined). */
type Loss = { view: PlanView; dashboardId: string; tiles: Map<string, string> | undefined };

/**
 * `views` with a note on each dashboard whose plan deletes alerts. `before`: the records as the plan
 * found them; `liveAlerts`: the team's alerts (reads on), read only when a dashboard loses a tile.
 */
export async function withCascades(
  views: readonly PlanView[],
  before: Readonly<Record<string, ResourceRecord>>,
  liveAlerts?: () => Promise<AlertAnswer[]>,
): Promise<PlanView[]> {
  const losses = views.flatMap((view) => lossOf(view, before[resourceId(view)]) ?? []);
  if (losses.length === 0) return [...views];
  const managed = managedAlerts(before);
  let live: AlertAnswer[] | undefined;
  let unread: string | undefined;
  if (liveAlerts) {
    try {
      live = await liveAlerts();
    } catch (error) {
      unread = error instanceof Error ? error.message : String(error);
    }
  }
  const notes = new Map<PlanView, string[]>();
  for (const loss of losses) notes.set(loss.view, notesOf(loss, managed, live, unread));
  return views.map((view) => {
    const added = notes.get(view) ?? [];
    return added.length > 0 ? { ...view, notes: [...(view.notes ?? []), ...added] } : view;
  });
}

/** What a dashboard's view loses: every tile (a delete), or the tiles its PUT leaves out; else undefined. */
function lossOf(view: PlanView, record: ResourceRecord | undefined): Loss | undefined {
  if (view.kind !== "Dashboard" || !record) return undefined;
  const dashboardId = record.address?.id ?? record.serverId;
  if (dashboardId === undefined) return undefined;
  if (view.action === "delete") return { view, dashboardId, tiles: undefined };
  const sent = member(view.request?.body, "tiles");
  if (view.request?.method !== "PUT" || !Array.isArray(sent)) return undefined;
  const kept = new Set(sent.map((tile) => member(tile, "id")).filter((id) => typeof id === "string"));
  const tiles = new Map(Object.entries(record.tileIds ?? {}).filter(([, id]) => !kept.has(id)));
  // The live tiles no record knows (added in the console) go too: only a read can name their alerts.
  return { view, dashboardId, tiles: new Map([...tiles].map(([key, id]) => [idKey(id), key])) };
}

/** A managed alert: its resource id, and the dashboard and tile it was last sent with. */
type Managed = { id: string; alertId: string | undefined; dashboardId: string; tileId: string };

function managedAlerts(records: Readonly<Record<string, ResourceRecord>>): Managed[] {
  return Object.entries(records).flatMap(([id, record]) => {
    const dashboardId = member(record.applied, "dashboardId");
    const tileId = member(record.applied, "tileId");
    if (record.kind !== "Alert" || typeof dashboardId !== "string" || typeof tileId !== "string") return [];
    return [{ id, alertId: record.address?.id ?? record.serverId, dashboardId, tileId }];
  });
}

/** Whether an alert on `dashboardId`'s tile `tileId` goes with the loss. */
const goes = (loss: Loss, dashboardId: string | undefined, tileId: string | undefined | null) =>
  dashboardId !== undefined &&
  idKey(dashboardId) === idKey(loss.dashboardId) &&
  (loss.tiles === undefined || (typeof tileId === "string" && loss.tiles.has(idKey(tileId))));

function notesOf(
  loss: Loss,
  managed: readonly Managed[],
  live: AlertAnswer[] | undefined,
  unread: string | undefined,
) {
  const where = (tileId: string | null | undefined) => {
    const key = tileId ? loss.tiles?.get(idKey(tileId)) : undefined;
    return key === undefined ? "" : ` (tile ${key})`;
  };
  const ours = managed.filter((m) => goes(loss, m.dashboardId, m.tileId));
  const allOurIds = new Set(managed.flatMap((m) => (m.alertId ? [idKey(m.alertId)] : [])));
  const theirs = (live ?? []).filter(
    (alert) => !allOurIds.has(idKey(alert.id)) && goes(loss, dashboardOf(alert), alert.tileId),
  );
  const what = loss.tiles === undefined ? "with the dashboard" : "with the tiles its PUT leaves out";
  const notes: string[] = [];
  if (ours.length > 0)
    notes.push(`the platform deletes ${ours.map((m) => `${m.id}${where(m.tileId)}`).join(", ")} ${what}`);
  if (theirs.length > 0) {
    const named = theirs
      .slice(0, NAMED)
      .map((alert) => `${alert.id}${alert.name ? ` "${alert.name}"` : ""}${where(alert.tileId)}`);
    const more = theirs.length > NAMED ? ` and ${theirs.length - NAMED} more` : "";
    notes.push(
      `the platform also deletes ${theirs.length} alert(s) driftless does not manage ${what}: ${named.join(", ")}${more}`,
    );
  }
  if (unread !== undefined)
    notes.push(
      `the team's alerts could not be listed (${unread}): alerts driftless does not manage are not named`,
    );
  return notes;
}

/** Every alert of the team, every page of its list, read at the lowest priority (plan with reads on). */
export const teamAlerts = (read: Read) => (): Promise<AlertAnswer[]> =>
  collectPages(
    async (params) =>
      (await read({ route: "listAlerts", params, body: undefined }, { priority: "read" })).result,
  );
