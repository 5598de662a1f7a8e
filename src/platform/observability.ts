import { z } from "zod";

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

export type TileBody = {
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

export type PutDashboardBody = { name: string; tiles: TileBody[]; tags?: string[] };

/** A tile of an answer: the minimal contract answers `series`, the published one `config`; driftless reads the id. */
export const Tile = z.looseObject({ id: z.string(), name: z.string().nullish() });
export type Tile = z.infer<typeof Tile>;

export const Dashboard = z.looseObject({
  id: z.string(),
  name: z.string().nullish(),
  /** Every tile of the answer carries an id, new ones included. */
  tiles: z.array(Tile),
  tags: z.array(z.string()).nullish(),
});
export type Dashboard = z.infer<typeof Dashboard>;

/**
 * An alert. The minimal contract names its dashboard `dashboard` (and team `team`), the published one
 * `dashboardId` (and `teamId`): both are read (docs/platform-apis.md#alert-answers).
 */
export const Alert = z.looseObject({
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
});
export type Alert = z.infer<typeof Alert>;

/** The dashboard an alert watches, in whichever spelling the platform answered. */
export const dashboardOf = (alert: Alert): string | undefined =>
  alert.dashboardId ?? alert.dashboard ?? undefined;

/** A source of the team (the published contract's GET /api/v2/sources): what a series' sourceId names. */
export const Source = z.looseObject({
  id: z.string(),
  name: z.string().nullish(),
  kind: z.string().nullish(),
});
export type Source = z.infer<typeof Source>;
