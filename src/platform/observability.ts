import { z } from "zod";
import type { HttpClient } from "./http.js";
import type { CallOptions } from "./management.js";

/**
 * The observability API (seeds/observability-api.md): PUT a dashboard, GET an alert. Answers are
 * `{data}`; only the fields driftless reads are checked and the rest are kept as they came.
 */

/** The Authorization header value of an observability token. */
export function bearerAuthorization(token: string): string {
  return `Bearer ${token}`;
}

export const OBSERVABILITY_ROUTES = {
  dashboard: "/api/v2/dashboards/{id}",
  alert: "/api/v2/alerts/{id}",
} as const;

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

const envelope = <T extends z.ZodType>(data: T) => z.looseObject({ data });

export type ObservabilityAnswer<T> = { result: T; requestId?: string };

export interface ObservabilityClient {
  /** Replaces the dashboard; tiles sent without an id get a new one (and lose the alerts watching them). */
  putDashboard(
    id: string,
    body: PutDashboardBody,
    options?: CallOptions,
  ): Promise<ObservabilityAnswer<Dashboard>>;
  getAlert(id: string, options?: CallOptions): Promise<ObservabilityAnswer<Alert>>;
}

/** The observability client over `http` (built with api "observability" and bearerAuthorization). */
export function createObservabilityClient(http: HttpClient): ObservabilityClient {
  return {
    async putDashboard(id, body, options = {}) {
      const answer = await http.request({
        method: "PUT",
        route: OBSERVABILITY_ROUTES.dashboard,
        params: { id },
        body,
        schema: envelope(Dashboard),
        priority: options.priority ?? "change",
        signal: options.signal,
      });
      return { result: answer.data.data, ...(answer.requestId ? { requestId: answer.requestId } : {}) };
    },
    async getAlert(id, options = {}) {
      const answer = await http.request({
        method: "GET",
        route: OBSERVABILITY_ROUTES.alert,
        params: { id },
        schema: envelope(Alert),
        priority: options.priority ?? "poll",
        signal: options.signal,
      });
      return { result: answer.data.data, ...(answer.requestId ? { requestId: answer.requestId } : {}) };
    },
  };
}
