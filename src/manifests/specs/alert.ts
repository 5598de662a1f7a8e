import { z } from "zod";
import {
  EVEN_WITH_FIELD_PROBLEMS,
  Int,
  ManifestName,
  manifestDocument,
  NonEmpty,
  PathId,
} from "../fields.js";

/**
 * An alert of the observability API (docs/platform-apis.md#alerts): POST /api/v2/alerts once when the
 * manifest names no `alertId`, then PUT /api/v2/alerts/{id} of the whole alert whenever it changes (the
 * platform replaces an alert whole). The fields are the published alert body's; a tile alert names its
 * tile as `dashboard` and `tile` (a Dashboard manifest's name and one of its tile keys, turned into ids
 * once the dashboard has them) or as `dashboardId` and `tileId`, a saved-search alert `savedSearchId`.
 * The platform's rules between fields are checked here, so that validate says what it would refuse.
 */

export const ALERT_INTERVALS = ["1m", "5m", "15m", "30m", "1h", "6h", "12h", "1d"] as const;
/** Each interval in minutes: a schedule offset must stay below it. */
export const INTERVAL_MINUTES: Record<(typeof ALERT_INTERVALS)[number], number> = {
  "1m": 1,
  "5m": 5,
  "15m": 15,
  "30m": 30,
  "1h": 60,
  "6h": 360,
  "12h": 720,
  "1d": 1440,
};

export const THRESHOLD_TYPES = [
  "above",
  "below",
  "above_exclusive",
  "below_or_equal",
  "equal",
  "not_equal",
  "between",
  "not_between",
] as const;
/** The threshold types that compare with a range: they need thresholdMax. */
const RANGES: readonly string[] = ["between", "not_between"];

export const ALERT_SOURCES = ["tile", "saved_search"] as const;

const choice = <T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.join(", ")}` });

const Text = (max: number) => NonEmpty.max(max, { error: `must be at most ${max} characters` });

/** A channel: the webhook the platform notifies (GET /api/v2/webhooks lists the team's). */
export const AlertChannel = z.strictObject({
  type: z.literal("webhook", { error: "must be webhook" }),
  webhookId: PathId,
});
export type AlertChannel = z.infer<typeof AlertChannel>;

const sameChannel = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export const AlertSpec = z
  .strictObject({
    /** The alert's id: adopts an existing alert. Absent: driftless creates the alert. */
    alertId: PathId.optional(),
    name: Text(512).optional(),
    message: Text(4096).optional(),
    note: Text(4096).optional(),
    threshold: z.number({ error: "must be a number" }),
    /** The upper bound of between and not_between. */
    thresholdMax: z.number({ error: "must be a number" }).optional(),
    thresholdType: choice(THRESHOLD_TYPES),
    interval: choice(ALERT_INTERVALS),
    /** tile or saved_search; unset: tile when the alert names a tile, saved_search when a saved search. */
    source: choice(ALERT_SOURCES).optional(),
    /** A Dashboard manifest's name and one of its tile keys: the tile the alert watches. */
    dashboard: ManifestName.optional(),
    tile: NonEmpty.optional(),
    /** The tile the alert watches, by the platform's ids (a dashboard no manifest manages). */
    dashboardId: PathId.optional(),
    tileId: PathId.optional(),
    savedSearchId: PathId.optional(),
    /** Saved-search alerts only. */
    groupBy: NonEmpty.optional(),
    channel: AlertChannel.optional(),
    channels: z
      .array(AlertChannel)
      .min(1, { error: "must hold at least one channel" })
      .max(10, { error: "must hold at most 10 channels" })
      .optional(),
    scheduleOffsetMinutes: Int(0, 1439).optional(),
    scheduleStartAt: z.iso
      .datetime({ offset: true, error: "must be an ISO-8601 date-time with a zone" })
      .optional(),
    numConsecutiveWindows: Int(1).optional(),
  })
  .superRefine((spec, ctx) => {
    // Run beside the fields' own problems (EVEN_WITH_FIELD_PROBLEMS): each field may be of any type.
    const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    const has = (field: keyof typeof spec) => spec[field] !== undefined;
    const byName = has("dashboard") || has("tile");
    const byId = has("dashboardId") || has("tileId");
    const tile = byName || byId;
    if (has("dashboard") !== has("tile"))
      issue(
        has("tile") ? "tile" : "dashboard",
        "needs both dashboard and tile: a tile key is only unique in its dashboard",
      );
    if (has("dashboardId") !== has("tileId"))
      issue(has("tileId") ? "tileId" : "dashboardId", "needs both dashboardId and tileId");
    if (byName && byId)
      issue("dashboardId", "names the tile a second way: give dashboard and tile, or dashboardId and tileId");
    if (tile && has("savedSearchId"))
      issue("savedSearchId", "an alert watches a tile or a saved search, not both");
    if (!tile && !has("savedSearchId"))
      issue(
        "savedSearchId",
        "an alert watches a tile (dashboard and tile, or dashboardId and tileId) or a saved search (savedSearchId)",
      );
    if (spec.source === "tile" && has("savedSearchId") && !tile)
      issue("source", "is tile, but the alert names a saved search");
    if (spec.source === "saved_search" && tile)
      issue("source", "is saved_search, but the alert names a tile");
    if (tile && has("groupBy"))
      issue("groupBy", "is for saved-search alerts only (the platform clears it on a tile alert)");
    if (!has("channel") && !has("channels"))
      issue("channel", "an alert needs a channel (or channels): the webhook the platform notifies");
    const first = Array.isArray(spec.channels) ? spec.channels[0] : undefined;
    if (has("channel") && first !== undefined && !sameChannel(spec.channel, first))
      issue("channel", "must be the first of channels when both are given");
    if (Array.isArray(spec.channels)) {
      const seen = new Set(spec.channels.map((c) => JSON.stringify(c)));
      if (seen.size !== spec.channels.length) issue("channels", "lists a channel twice");
    }
    if (typeof spec.thresholdType === "string" && RANGES.includes(spec.thresholdType) && !has("thresholdMax"))
      issue("thresholdMax", `is required with thresholdType ${spec.thresholdType}`);
    if (
      typeof spec.threshold === "number" &&
      typeof spec.thresholdMax === "number" &&
      spec.thresholdMax < spec.threshold
    )
      issue("thresholdMax", "must be at least threshold");
    const minutes = INTERVAL_MINUTES[spec.interval as keyof typeof INTERVAL_MINUTES];
    const offset = spec.scheduleOffsetMinutes;
    if (typeof offset === "number" && minutes !== undefined && offset >= minutes)
      issue("scheduleOffsetMinutes", `must be less than the interval (${minutes} minutes)`);
    if (typeof offset === "number" && offset !== 0 && has("scheduleStartAt"))
      issue("scheduleOffsetMinutes", "must be 0 when scheduleStartAt is set");
  }, EVEN_WITH_FIELD_PROBLEMS);
export type AlertSpec = z.infer<typeof AlertSpec>;

export const Alert = manifestDocument("Alert", AlertSpec);
export type Alert = z.infer<typeof Alert>;
