import { z } from "zod";
import type { Sensitive } from "./management.js";

/**
 * The observability API's types (docs/platform-apis.md#observability-endpoints): the dashboard body as the
 * API takes it, and the answer fields driftless reads; the rest are kept as they came. The endpoints
 * are in routes.ts.
 */

/** The Authorization header value of an observability token. */
export function bearerAuthorization(token: string): string {
  return `Bearer ${token}`;
}

/**
 * A series of a tile in the `series` form both contracts take. The minimal contract shows `type`,
 * `dataSource`, `aggFn`, `where` and `groupBy`; the others are the published contract's, sent only
 * when a manifest states them (the published platform drops `dataSource`).
 */
export type Series = {
  /** time, number, table, search, markdown. */
  type: string;
  dataSource?: string;
  aggFn?: string;
  where?: string;
  whereLanguage?: string;
  groupBy?: string[];
  /** The id of one of the team's sources (GET /api/v2/sources). */
  sourceId?: string;
  field?: string;
  alias?: string;
  level?: number;
  metricName?: string;
  metricDataType?: string;
  displayType?: string;
  sortOrder?: string;
  numberFormat?: Record<string, unknown>;
  /** search: the columns shown. */
  fields?: string[];
  /** markdown: the text. */
  content?: string;
};

export type TileUpdate = {
  /** The server-assigned id of an existing tile; omitted only for a tile that is new. */
  id?: string;
  name: string;
  x: number;
  y: number;
  w: number;
  h: number;
  asRatio?: boolean;
  series: Series[];
};

export type DashboardUpdate = { name: string; tiles: TileUpdate[]; tags?: string[] };

/** The published dashboard create: every tile gets a new id, so none is sent. */
export type DashboardCreate = { name: string; tiles: Omit<TileUpdate, "id">[]; tags?: string[] };

export type AlertChannel = { type: "webhook"; webhookId: string };

/**
 * The published alert create and replace (docs/platform-apis.md#alerts): one body for both, since a PUT
 * replaces the alert whole. A tile alert names `dashboardId` and `tileId`, a saved-search alert
 * `savedSearchId`; `source` is always sent (its declared default never applies).
 */
export type AlertUpdate = {
  source: "tile" | "saved_search";
  interval: string;
  threshold: number;
  thresholdType: string;
  thresholdMax?: number;
  dashboardId?: string | null;
  tileId?: string | null;
  savedSearchId?: string | null;
  groupBy?: string | null;
  channel?: AlertChannel;
  channels?: AlertChannel[];
  name?: string | null;
  message?: string | null;
  note?: string | null;
  scheduleOffsetMinutes?: number;
  scheduleStartAt?: string | null;
  numConsecutiveWindows?: number | null;
};

/** A webhook, an alert's channel. `headers` and `queryParams` may hold credentials: never answered. */
export type WebhookCreate = {
  name: string;
  service: "slack" | "incidentio" | "generic";
  url: string;
  description?: string;
  body?: string;
  headers?: Record<string, Sensitive>;
  queryParams?: Record<string, Sensitive>;
};

/** A tile of an answer: the minimal contract answers `series`, the published one `config`; driftless reads the id. */
export const TileAnswer = z.looseObject({ id: z.string(), name: z.string().nullish() });
export type TileAnswer = z.infer<typeof TileAnswer>;

export const DashboardAnswer = z.looseObject({
  id: z.string(),
  name: z.string().nullish(),
  /** Every tile of the answer carries an id, new ones included. */
  tiles: z.array(TileAnswer),
  tags: z.array(z.string()).nullish(),
});
export type DashboardAnswer = z.infer<typeof DashboardAnswer>;

/**
 * An alert. The minimal contract names its dashboard `dashboard` (and team `team`), the published one
 * `dashboardId` (and `teamId`): both are read (docs/platform-apis.md#alert-answers).
 */
const Channel = z.looseObject({ type: z.string(), webhookId: z.string().nullish() });

export const AlertAnswer = z.looseObject({
  id: z.string(),
  name: z.string().nullish(),
  /** `active` occurs; the published contract names ALERT, OK, INSUFFICIENT_DATA, DISABLED, PENDING; any is kept. */
  state: z.string().nullish(),
  tileId: z.string().nullish(),
  dashboardId: z.string().nullish(),
  dashboard: z.string().nullish(),
  threshold: z.number().nullish(),
  thresholdType: z.string().nullish(),
  interval: z.string().nullish(),
  // The published contract's, what an alert's manifest states.
  source: z.string().nullish(),
  savedSearchId: z.string().nullish(),
  groupBy: z.string().nullish(),
  message: z.string().nullish(),
  note: z.string().nullish(),
  thresholdMax: z.number().nullish(),
  scheduleOffsetMinutes: z.number().nullish(),
  scheduleStartAt: z.string().nullish(),
  numConsecutiveWindows: z.number().nullish(),
  channel: Channel.nullish(),
  channels: z.array(Channel).nullish(),
});
export type AlertAnswer = z.infer<typeof AlertAnswer>;

/** The dashboard an alert watches, in whichever spelling the platform answered. */
export const dashboardOf = (alert: AlertAnswer): string | undefined =>
  alert.dashboardId ?? alert.dashboard ?? undefined;

/** A source of the team (the published contract's GET /api/v2/sources): what a series' sourceId names. */
export const SourceAnswer = z.looseObject({
  id: z.string(),
  name: z.string().nullish(),
  kind: z.string().nullish(),
});
export type SourceAnswer = z.infer<typeof SourceAnswer>;

/** A webhook as answered: never its headers or queryParams, its body only for `generic`. */
export const WebhookAnswer = z.looseObject({
  id: z.string(),
  name: z.string().nullish(),
  /** slack, incidentio, generic; any other is kept. */
  service: z.string().nullish(),
  url: z.string().nullish(),
  description: z.string().nullish(),
  body: z.string().nullish(),
});
export type WebhookAnswer = z.infer<typeof WebhookAnswer>;

/** The verdict of the dashboard dry run (`POST /api/v2/dashboards/validate`), answered outside `{data}`. */
export const DashboardValidation = z.looseObject({
  valid: z.boolean(),
  errors: z.array(z.looseObject({ path: z.string().nullish(), message: z.string() })).nullish(),
});
export type DashboardValidation = z.infer<typeof DashboardValidation>;

/**
 * One page of a paged list (alerts, webhooks), the whole answer: `data`, and `meta` with the total of
 * every page (docs/platform-apis.md#paged-lists). A page without `meta` is still read.
 */
export const Page = <T extends z.ZodType>(item: T) =>
  z.looseObject({
    data: z.array(item),
    meta: z.looseObject({ total: z.number(), limit: z.number(), offset: z.number() }).nullish(),
  });
export type Page<T> = { data: T[]; meta?: { total: number; limit: number; offset: number } | null };
