import { z } from "zod";
import type { Api } from "../errors.js";
import type { HttpMethod } from "./http-classify.js";
import {
  ApiKey,
  Backup,
  type CreateReversePrivateEndpointBody,
  DataPipe,
  Organization,
  ReversePrivateEndpoint,
  type UpdateApiKeyBody,
  type UpdateDataPipeBody,
  type UpdateOrganizationBody,
} from "./management.js";
import { Alert, Dashboard, type PutDashboardBody } from "./observability.js";

/**
 * Every endpoint driftless calls, as data: the API, method, path template, request body type and the
 * schema of the answer's payload (docs/platform-apis.md describes each). Planners name a route and
 * fill its parameters, the client sends any route, metrics label by the template, and the simulator
 * routes by the same table: one fact, written once.
 */

type RouteSpec = {
  api: Api;
  method: HttpMethod;
  template: string;
  /** The body's type (a phantom: bodies are built by planners, never parsed); z.undefined() for none. */
  request: z.ZodType;
  /** The payload of a success answer, inside its API's envelope. */
  answer: z.ZodType;
};

const routes = {
  updateOrganization: {
    api: "management",
    method: "PATCH",
    template: "/v1/organizations/{organizationId}",
    request: z.custom<UpdateOrganizationBody>(),
    answer: Organization,
  },
  updateApiKey: {
    api: "management",
    method: "PATCH",
    template: "/v1/organizations/{organizationId}/keys/{keyId}",
    request: z.custom<UpdateApiKeyBody>(),
    answer: ApiKey,
  },
  updateDataPipe: {
    api: "management",
    method: "PATCH",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}",
    request: z.custom<UpdateDataPipeBody>(),
    answer: DataPipe,
  },
  /** Not idempotent: never repeated once it may have reached the platform. */
  createReversePrivateEndpoint: {
    api: "management",
    method: "POST",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints",
    request: z.custom<CreateReversePrivateEndpointBody>(),
    answer: ReversePrivateEndpoint,
  },
  /** Most recent first. */
  listBackups: {
    api: "management",
    method: "GET",
    template: "/v1/organizations/{organizationId}/services/{serviceId}/backups",
    request: z.undefined(),
    answer: z.array(Backup),
  },
  /** Replaces the dashboard; a tile sent without its id gets a new one (and loses its alerts). */
  putDashboard: {
    api: "observability",
    method: "PUT",
    template: "/api/v2/dashboards/{id}",
    request: z.custom<PutDashboardBody>(),
    answer: Dashboard,
  },
  getAlert: {
    api: "observability",
    method: "GET",
    template: "/api/v2/alerts/{id}",
    request: z.undefined(),
    answer: Alert,
  },
} as const satisfies Record<string, RouteSpec>;

export type RouteName = keyof typeof routes;
type Spec<N extends RouteName> = (typeof routes)[N];

/** The `{names}` of a path template. */
type ParamNames<T extends string> = T extends `${string}{${infer P}}${infer Rest}`
  ? P | ParamNames<Rest>
  : never;

/** Per route, its path parameters, from its template: `{organizationId}` → `{ organizationId: string }`. */
export type Params = { [N in RouteName]: { [P in ParamNames<Spec<N>["template"]>]: string } };
/** Per route, its request body. */
export type Bodies = { [N in RouteName]: z.infer<Spec<N>["request"]> };
/** Per route, the payload of its success answer. */
export type Answers = { [N in RouteName]: z.infer<Spec<N>["answer"]> };

/** One route of the table, its answer schema typed by its name (so generic code keeps the types). */
export type Route<N extends RouteName = RouteName> = Omit<Spec<N>, "answer"> & {
  answer: z.ZodType<Answers[N]>;
};

export const ROUTES: { [N in RouteName]: Route<N> } = routes;

/** The routes of one API. */
export type RouteOf<A extends Api> = { [N in RouteName]: Spec<N>["api"] extends A ? N : never }[RouteName];

/** The names of the routes, in table order. */
export const ROUTE_NAMES = Object.keys(ROUTES) as RouteName[];

/** A template with its `{names}` filled in, each value URL-encoded. Throws when a parameter is missing. */
export function expandTemplate(template: string, params: Readonly<Record<string, string>>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`route ${template} needs the parameter ${name}`);
    return encodeURIComponent(value);
  });
}
