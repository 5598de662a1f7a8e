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

export type Series = {
  /** `time` and `number` occur. */
  type: string;
  /** `events` occurs. */
  dataSource?: string;
  /** `count` occurs. */
  aggFn?: string;
  /** `<field>:<value>`. */
  where?: string;
  groupBy?: unknown[];
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

export const Alert = z.looseObject({
  id: z.string(),
  name: z.string().nullish(),
  /** `active` occurs; other values are not shown and are kept as they come. */
  state: z.string().nullish(),
  tileId: z.string().nullish(),
  dashboard: z.string().nullish(),
  threshold: z.number().nullish(),
  thresholdType: z.string().nullish(),
  interval: z.string().nullish(),
});
export type Alert = z.infer<typeof Alert>;
