import type { Contract } from "../platform/routes.js";
import type { Group, ObservabilityDeps } from "./handler-group.js";
import { badRequest, notFound } from "./http.js";
import type { Alert, AlertChannel, PlatformState } from "./model.js";
import { newObjectId, OBJECT_ID } from "./object-id.js";
import { page } from "./paging.js";
import { alertable } from "./tile-config.js";

/**
 * Alerts: the read both contracts have, and the published contract's paged list, create, full replace
 * and delete, with the platform's rules beyond the document and its reference checks
 * (docs/platform-apis.md#alerts).
 */

/** An alert's create or replace body, as the contract check accepted it. */
type AlertInput = {
  interval: string;
  threshold: number;
  thresholdType: string;
  source: "tile" | "saved_search";
  thresholdMax?: number;
  savedSearchId?: string | null;
  groupBy?: string | null;
  tileId?: string | null;
  dashboardId?: string | null;
  channel?: AlertChannel;
  channels?: AlertChannel[];
  scheduleOffsetMinutes?: number;
  scheduleStartAt?: string | null;
  name?: string | null;
  message?: string | null;
  note?: string | null;
  numConsecutiveWindows?: number | null;
};

/** The fields the minimal contract shows of an alert. */
const MINIMAL_FIELDS = [
  "id",
  "name",
  "message",
  "threshold",
  "interval",
  "thresholdType",
  "source",
  "state",
  "channel",
  "team",
  "tileId",
  "dashboard",
  "createdAt",
  "updatedAt",
] as const;

/** An alert as answered: the minimal contract's fields, or the published contract's names and fields. */
export function alertAnswer(alert: Alert, contract: Contract) {
  if (contract === "minimal") return Object.fromEntries(MINIMAL_FIELDS.map((field) => [field, alert[field]]));
  const { team, dashboard, channels, ...rest } = alert;
  return {
    ...rest,
    channels: channels ?? [alert.channel],
    teamId: team,
    dashboardId: dashboard,
    silenced: null,
    executionErrors: [],
  };
}

const MINUTES: Record<string, number> = {
  "1m": 1,
  "5m": 5,
  "15m": 15,
  "30m": 30,
  "1h": 60,
  "6h": 360,
  "12h": 720,
  "1d": 1440,
};
const YEAR_MS = 365.25 * 24 * 3_600_000;

/** The body's rules the document cannot write, in the validation's words; undefined when none is broken. */
function ruleBroken(body: AlertInput, now: number): string | undefined {
  const { channel, channels, threshold, thresholdMax, scheduleOffsetMinutes = 0, scheduleStartAt } = body;
  if (channel && channels && JSON.stringify(channel) !== JSON.stringify(channels[0]))
    return "channel: must equal channels[0] when both are sent";
  if (thresholdMax !== undefined && thresholdMax < threshold)
    return "thresholdMax: must be at least threshold";
  const minutes = MINUTES[body.interval] ?? Number.POSITIVE_INFINITY;
  if (scheduleOffsetMinutes >= minutes)
    return `scheduleOffsetMinutes: must be less than the interval (${minutes} minutes)`;
  if (!scheduleStartAt) return undefined;
  if (scheduleOffsetMinutes !== 0) return "scheduleOffsetMinutes: must be 0 when scheduleStartAt is set";
  const at = Date.parse(scheduleStartAt);
  if (at > now + YEAR_MS || at < now - 10 * YEAR_MS)
    return "scheduleStartAt: must be at most 1 year ahead and 10 years back";
  return undefined;
}

/**
 * Checks a create or replace body beyond the document: its rules, then what it names (a tile alert's
 * dashboard and tile, a saved-search alert's saved search, every channel's webhook), as the platform
 * checks them, each failure a 400 Rejection in the platform's words.
 */
function checkAlert(state: PlatformState, body: AlertInput): void {
  const broken = ruleBroken(body, Date.now());
  if (broken) throw badRequest(`Body validation failed: ${broken}`);
  if (body.source === "tile") {
    if (!OBJECT_ID.test(body.dashboardId ?? "")) throw badRequest("Invalid dashboard ID");
    const dashboard = state.dashboards.find((d) => d.id === body.dashboardId);
    if (!dashboard) throw badRequest("Dashboard not found");
    const tile = dashboard.tiles.find((t) => t.id === body.tileId);
    if (!tile) throw badRequest("Tile not found");
    if (!alertable(tile)) throw badRequest("Alerts are only supported on line, stacked_bar and number tiles");
  } else {
    if (!OBJECT_ID.test(body.savedSearchId ?? "")) throw badRequest("Invalid saved search ID");
    if (!state.savedSearches.some((s) => s.id === body.savedSearchId))
      throw badRequest("Saved search not found");
  }
  for (const { webhookId = "" } of channelsOf(body)) {
    if (!OBJECT_ID.test(webhookId)) throw badRequest("Invalid webhook ID");
    if (!state.webhooks.some((w) => w.id === webhookId)) throw badRequest("Webhook not found");
  }
}

/** The channels a body gives: `channels`, else `[channel]` (the document requires one of the two). */
const channelsOf = (body: AlertInput): AlertChannel[] =>
  body.channels ?? (body.channel ? [body.channel] : []);

/**
 * What a body writes, whole: every field it leaves out is cleared, but the three the platform keeps
 * when left out (`kept`, from the stored alert on a replace).
 */
function written(
  body: AlertInput,
  kept: Pick<Alert, "thresholdMax" | "scheduleStartAt" | "scheduleOffsetMinutes">,
) {
  const channels = channelsOf(body);
  const channel = body.channel ?? channels[0];
  // The document requires one of the two: this is its refusal, should a body get past it.
  if (!channel) throw badRequest("Body validation failed: channel: is required");
  const tile = body.source === "tile";
  return {
    name: body.name ?? null,
    message: body.message ?? null,
    note: body.note ?? null,
    threshold: body.threshold,
    thresholdMax: body.thresholdMax ?? kept.thresholdMax,
    interval: body.interval,
    thresholdType: body.thresholdType,
    source: body.source,
    channel,
    channels,
    scheduleStartAt: body.scheduleStartAt === undefined ? kept.scheduleStartAt : body.scheduleStartAt,
    // Kept while scheduleStartAt is left out too; otherwise 0 unless sent.
    scheduleOffsetMinutes:
      body.scheduleOffsetMinutes ?? (body.scheduleStartAt === undefined ? kept.scheduleOffsetMinutes : 0),
    numConsecutiveWindows: body.numConsecutiveWindows ?? null,
    groupBy: tile ? null : (body.groupBy ?? null),
    tileId: tile ? (body.tileId ?? null) : null,
    dashboard: tile ? (body.dashboardId ?? null) : null,
    savedSearchId: tile ? null : (body.savedSearchId ?? null),
  };
}

export function alertHandlers({
  state,
  contract,
}: ObservabilityDeps): Group<"getAlert" | "listAlerts" | "createAlert" | "putAlert" | "deleteAlert"> {
  const find = (id: string | undefined) => {
    const alert = state.alerts.find((a) => a.id === id);
    if (!alert) throw notFound(`alert ${id} does not exist`);
    return alert;
  };
  const answer = (alert: Alert) => ({ status: 200, body: { data: alertAnswer(alert, contract) } });
  return {
    getAlert({ params }) {
      return answer(find(params.id));
    },
    listAlerts({ query }) {
      return page(state.alerts, query, (alert) => alertAnswer(alert, contract));
    },
    createAlert({ body }) {
      const input = body as AlertInput;
      checkAlert(state, input);
      const now = new Date().toISOString();
      const alert: Alert = {
        id: newObjectId(),
        ...written(input, { thresholdMax: null, scheduleStartAt: null, scheduleOffsetMinutes: 0 }),
        state: "OK",
        team: state.teamId,
        createdAt: now,
        updatedAt: now,
      };
      state.alerts.push(alert);
      return answer(alert);
    },
    putAlert({ params, body }) {
      const input = body as AlertInput;
      checkAlert(state, input);
      const alert = find(params.id);
      Object.assign(alert, written(input, alert), { updatedAt: new Date().toISOString() });
      return answer(alert);
    },
    deleteAlert({ params }) {
      const alert = find(params.id);
      state.alerts.splice(state.alerts.indexOf(alert), 1);
      return { status: 200, body: {} };
    },
  };
}
