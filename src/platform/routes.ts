import { z } from "zod";
import type { Api } from "../errors.js";
import type { HttpMethod } from "./http-classify.js";
import {
  ApiKeyAnswer,
  type ApiKeyCreate,
  ApiKeyCreated,
  type ApiKeyUpdate,
  BackupAnswer,
  DataPipeAnswer,
  type DataPipeCreate,
  type DataPipeScaling,
  type DataPipeStateUpdate,
  type DataPipeUpdate,
  OrganizationAnswer,
  type OrganizationUpdate,
  ReversePrivateEndpointAnswer,
  type ReversePrivateEndpointCreate,
} from "./management.js";
import {
  AlertAnswer,
  type AlertUpdate,
  DashboardAnswer,
  type DashboardCreate,
  type DashboardUpdate,
  DashboardValidation,
  Page,
  SourceAnswer,
  WebhookAnswer,
  type WebhookCreate,
} from "./observability.js";

/**
 * Every endpoint driftless calls, as data: the API, method, path template, request body type and the
 * schema of the answer's payload (docs/platform-apis.md describes each). Planners name a route and
 * fill its parameters, the client sends any route, metrics label by the template, and the simulator
 * routes by the same table: one fact, written once.
 */

/**
 * The platform's two contracts: `minimal`, the endpoints driftless must always work with, and `full`,
 * the published contract, which adds reads, rules and answer shapes (contracts/ describes each).
 */
export const CONTRACTS = ["minimal", "full"] as const;
export type Contract = (typeof CONTRACTS)[number];

type RouteSpec = {
  api: Api;
  method: HttpMethod;
  template: string;
  /** The body's type (a phantom: bodies are built by planners, never parsed); z.undefined() for none. */
  request: z.ZodType;
  /** The payload of a success answer, inside its API's envelope. */
  answer: z.ZodType;
  /** The first contract that has the route: a `full` route is one only the published contract serves. */
  contract: Contract;
  /** The query parameters the route takes (a paged list's `limit` and `offset`), given with the path's. */
  query?: readonly string[];
  /** false: `answer` is the whole body, which the API's envelope does not wrap (a page, the dry run). */
  envelope?: false;
};

/**
 * A delete's answer: no payload (the management envelope without `result`, the observability `{}`);
 * whatever comes is ignored.
 */
export const Deleted = z
  .unknown()
  .optional()
  .transform((): undefined => undefined);

/** The query parameters of a paged list. */
const PAGED = ["limit", "offset"] as const;

const routes = {
  updateOrganization: {
    api: "management",
    method: "PATCH",
    template: "/v1/organizations/{organizationId}",
    request: z.custom<OrganizationUpdate>(),
    answer: OrganizationAnswer,
    contract: "minimal",
  },
  updateApiKey: {
    api: "management",
    method: "PATCH",
    template: "/v1/organizations/{organizationId}/keys/{keyId}",
    request: z.custom<ApiKeyUpdate>(),
    answer: ApiKeyAnswer,
    contract: "minimal",
  },
  updateDataPipe: {
    api: "management",
    method: "PATCH",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}",
    request: z.custom<DataPipeUpdate>(),
    answer: DataPipeAnswer,
    contract: "minimal",
  },
  /** Not idempotent: never repeated once it may have reached the platform. */
  createReversePrivateEndpoint: {
    api: "management",
    method: "POST",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints",
    request: z.custom<ReversePrivateEndpointCreate>(),
    answer: ReversePrivateEndpointAnswer,
    contract: "minimal",
  },
  /** Most recent first. */
  listBackups: {
    api: "management",
    method: "GET",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/backups",
    request: z.undefined(),
    answer: z.array(BackupAnswer),
    contract: "minimal",
  },
  /** Replaces the dashboard; a tile sent without its id gets a new one (and loses its alerts). */
  putDashboard: {
    api: "observability",
    method: "PUT",
    template: "/api/v2/dashboards/{id}",
    request: z.custom<DashboardUpdate>(),
    answer: DashboardAnswer,
    contract: "minimal",
  },
  getAlert: {
    api: "observability",
    method: "GET",
    template: "/api/v2/alerts/{id}",
    request: z.undefined(),
    answer: AlertAnswer,
    contract: "minimal",
  },
  // The published contract's reads: the same objects its writes answer.
  getOrganization: {
    api: "management",
    method: "GET",
    template: "/v1/organizations/{organizationId}",
    request: z.undefined(),
    answer: OrganizationAnswer,
    contract: "full",
  },
  getApiKey: {
    api: "management",
    method: "GET",
    template: "/v1/organizations/{organizationId}/keys/{keyId}",
    request: z.undefined(),
    answer: ApiKeyAnswer,
    contract: "full",
  },
  getDataPipe: {
    api: "management",
    method: "GET",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}",
    request: z.undefined(),
    answer: DataPipeAnswer,
    contract: "full",
  },
  listReversePrivateEndpoints: {
    api: "management",
    method: "GET",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints",
    request: z.undefined(),
    answer: z.array(ReversePrivateEndpointAnswer),
    contract: "full",
  },
  getReversePrivateEndpoint: {
    api: "management",
    method: "GET",
    template:
      "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints/{reversePrivateEndpointId}",
    request: z.undefined(),
    answer: ReversePrivateEndpointAnswer,
    contract: "full",
  },
  getDashboard: {
    api: "observability",
    method: "GET",
    template: "/api/v2/dashboards/{id}",
    request: z.undefined(),
    answer: DashboardAnswer,
    contract: "full",
  },
  listSources: {
    api: "observability",
    method: "GET",
    template: "/api/v2/sources",
    request: z.undefined(),
    answer: z.array(SourceAnswer),
    contract: "full",
  },
  // The published contract's lifecycle (docs/platform-apis.md#lifecycle-endpoints): creates, lists,
  // deletes, a pipe's state and scaling. No create is idempotent; a delete answers no payload.
  listApiKeys: {
    api: "management",
    method: "GET",
    template: "/v1/organizations/{organizationId}/keys",
    request: z.undefined(),
    answer: z.array(ApiKeyAnswer),
    contract: "full",
  },
  createApiKey: {
    api: "management",
    method: "POST",
    template: "/v1/organizations/{organizationId}/keys",
    request: z.custom<ApiKeyCreate>(),
    answer: ApiKeyCreated,
    contract: "full",
  },
  /** Refused for the key that authenticates the request. */
  deleteApiKey: {
    api: "management",
    method: "DELETE",
    template: "/v1/organizations/{organizationId}/keys/{keyId}",
    request: z.undefined(),
    answer: Deleted,
    contract: "full",
  },
  listDataPipes: {
    api: "management",
    method: "GET",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes",
    request: z.undefined(),
    answer: z.array(DataPipeAnswer),
    contract: "full",
  },
  createDataPipe: {
    api: "management",
    method: "POST",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes",
    request: z.custom<DataPipeCreate>(),
    answer: DataPipeAnswer,
    contract: "full",
  },
  deleteDataPipe: {
    api: "management",
    method: "DELETE",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}",
    request: z.undefined(),
    answer: Deleted,
    contract: "full",
  },
  updateDataPipeState: {
    api: "management",
    method: "PATCH",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}/state",
    request: z.custom<DataPipeStateUpdate>(),
    answer: DataPipeAnswer,
    contract: "full",
  },
  updateDataPipeScaling: {
    api: "management",
    method: "PATCH",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}/scaling",
    request: z.custom<DataPipeScaling>(),
    answer: DataPipeAnswer,
    contract: "full",
  },
  deleteReversePrivateEndpoint: {
    api: "management",
    method: "DELETE",
    template:
      "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints/{reversePrivateEndpointId}",
    request: z.undefined(),
    answer: Deleted,
    contract: "full",
  },
  listDashboards: {
    api: "observability",
    method: "GET",
    template: "/api/v2/dashboards",
    request: z.undefined(),
    answer: z.array(DashboardAnswer),
    contract: "full",
  },
  /** Every tile of the answer has a new id. */
  createDashboard: {
    api: "observability",
    method: "POST",
    template: "/api/v2/dashboards",
    request: z.custom<DashboardCreate>(),
    answer: DashboardAnswer,
    contract: "full",
  },
  /** A dry run of the create: always 200 with the verdict; nothing is stored. */
  validateDashboard: {
    api: "observability",
    method: "POST",
    template: "/api/v2/dashboards/validate",
    request: z.custom<DashboardCreate>(),
    answer: DashboardValidation,
    contract: "full",
    envelope: false,
  },
  /** Deletes the alerts of its tiles too; answers the same for an unknown id. */
  deleteDashboard: {
    api: "observability",
    method: "DELETE",
    template: "/api/v2/dashboards/{id}",
    request: z.undefined(),
    answer: Deleted,
    contract: "full",
  },
  /** One page, ordered by id (readAllPages reads them all). */
  listAlerts: {
    api: "observability",
    method: "GET",
    template: "/api/v2/alerts",
    request: z.undefined(),
    answer: Page(AlertAnswer),
    contract: "full",
    query: PAGED,
    envelope: false,
  },
  createAlert: {
    api: "observability",
    method: "POST",
    template: "/api/v2/alerts",
    request: z.custom<AlertUpdate>(),
    answer: AlertAnswer,
    contract: "full",
  },
  /** Replaces the alert whole. */
  putAlert: {
    api: "observability",
    method: "PUT",
    template: "/api/v2/alerts/{id}",
    request: z.custom<AlertUpdate>(),
    answer: AlertAnswer,
    contract: "full",
  },
  deleteAlert: {
    api: "observability",
    method: "DELETE",
    template: "/api/v2/alerts/{id}",
    request: z.undefined(),
    answer: Deleted,
    contract: "full",
  },
  listWebhooks: {
    api: "observability",
    method: "GET",
    template: "/api/v2/webhooks",
    request: z.undefined(),
    answer: Page(WebhookAnswer),
    contract: "full",
    query: PAGED,
    envelope: false,
  },
  createWebhook: {
    api: "observability",
    method: "POST",
    template: "/api/v2/webhooks",
    request: z.custom<WebhookCreate>(),
    answer: WebhookAnswer,
    contract: "full",
  },
  putWebhook: {
    api: "observability",
    method: "PUT",
    template: "/api/v2/webhooks/{id}",
    request: z.custom<WebhookCreate>(),
    answer: WebhookAnswer,
    contract: "full",
  },
  /** Refused (409) while an alert has the webhook as its channel. */
  deleteWebhook: {
    api: "observability",
    method: "DELETE",
    template: "/api/v2/webhooks/{id}",
    request: z.undefined(),
    answer: Deleted,
    contract: "full",
  },
} as const satisfies Record<string, RouteSpec>;

export type RouteName = keyof typeof routes;
type Spec<N extends RouteName> = (typeof routes)[N];

/** The `{names}` of a path template. */
type ParamNames<T extends string> = T extends `${string}{${infer P}}${infer Rest}`
  ? P | ParamNames<Rest>
  : never;

/** The query parameters of a route. */
type QueryNames<N extends RouteName> =
  Spec<N> extends { query: readonly (infer Q extends string)[] } ? Q : never;

/**
 * Per route, its path parameters, from its template (`{organizationId}` → `{ organizationId: string }`),
 * and its query parameters, each optional.
 */
export type Params = {
  [N in RouteName]: { [P in ParamNames<Spec<N>["template"]>]: string } & { [Q in QueryNames<N>]?: string };
};
/** Per route, its request body. */
export type Bodies = { [N in RouteName]: z.infer<Spec<N>["request"]> };
/** Per route, the payload of its success answer. */
export type Answers = { [N in RouteName]: z.infer<Spec<N>["answer"]> };

/** One request of the table: which route, its path parameters, its body. */
export type PlannedRequest<N extends RouteName = RouteName> = {
  [R in N]: { route: R; params: Params[R]; body: Bodies[R] };
}[N];

/** One route of the table, its answer schema typed by its name (so generic code keeps the types). */
export type Route<N extends RouteName = RouteName> = Omit<Spec<N>, "answer"> &
  Pick<RouteSpec, "query" | "envelope"> & { answer: z.ZodType<Answers[N]> };

export const ROUTES: { [N in RouteName]: Route<N> } = routes;

/** The routes of one API. */
export type RouteOf<A extends Api> = { [N in RouteName]: Spec<N>["api"] extends A ? N : never }[RouteName];

/** The names of the routes, in table order. */
export const ROUTE_NAMES = Object.keys(ROUTES) as RouteName[];

/** Whether `contract` has the route: the full contract has every route, the minimal one its own. */
export const hasRoute = (contract: Contract, name: RouteName): boolean =>
  contract === "full" || ROUTES[name].contract === "minimal";

/** A template with its `{names}` filled in, each value URL-encoded. Throws when a parameter is missing. */
export function expandTemplate(template: string, params: Readonly<Record<string, string>>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`route ${template} needs the parameter ${name}`);
    return encodeURIComponent(value);
  });
}
