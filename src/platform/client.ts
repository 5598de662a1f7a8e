import { z } from "zod";
import type { Api } from "../errors.js";
import type { Priority } from "./budget.js";
import type { HttpClient, RequestTiming } from "./http.js";
import { withoutSecrets } from "./redact.js";
import {
  type Answers,
  type Bodies,
  type Params,
  type PlannedRequest,
  ROUTES,
  type Route,
  type RouteName,
} from "./routes.js";

/**
 * The platform as driftless calls it: any route of the table, by name, through the HTTP client of its
 * API. The answer's envelope is unwrapped here: `{status, requestId, result}` on the management API,
 * `{data}` on the observability API (a route whose answer is the whole body has none); only the fields
 * the route's schema names are checked, the rest are kept as they came.
 */

/**
 * Per call: the budget priority (default "change" for writes, "poll" for reads), an abort signal, the
 * secrets the request carries (masked in whatever the platform echoes back, and with every credential
 * field dropped from the answer before its schema reads it), and the guard asked right before each
 * attempt (HttpRequest.guard).
 */
export type CallOptions = {
  priority?: Priority;
  signal?: AbortSignal;
  redact?: readonly string[];
  guard?: () => void | Promise<void>;
};

/** The result, the request id when the platform gave one, and where the request's time went. */
export type Answer<T> = { result: T; requestId?: string; timing?: RequestTiming };

export interface PlatformClient {
  /**
   * Sends one request of the table. Throws the HTTP client's ApiError, or UnknownOutcomeError when a
   * create may have reached the platform without an answer.
   */
  call<N extends RouteName>(
    name: N,
    params: Params[N],
    body: Bodies[N],
    options?: CallOptions,
  ): Promise<Answer<Answers[N]>>;
}

/** `schema`, reading an answer whose credentials were dropped and whose `secrets` were masked first. */
function answerOf<T>(schema: z.ZodType<T>, secrets: readonly string[] | undefined): z.ZodType<T> {
  if (!secrets) return schema;
  const sent = secrets.filter(Boolean);
  return z.preprocess((answer) => withoutSecrets(answer, sent), schema);
}

/**
 * The success body of `api` around a payload of `schema`, unwrapped to `{result, requestId?}`. A payload
 * that may be absent (a delete's) takes an envelope without it: `{status, requestId}` or `{}`.
 */
function envelope<T>(route: Route, schema: z.ZodType<T>): z.ZodType<Answer<T>> {
  if (route.envelope === false) return schema.transform((result) => ({ result }));
  if (route.api === "observability")
    return z.looseObject({ data: schema }).transform(({ data }) => ({ result: data }));
  return z
    .looseObject({ status: z.number().optional(), requestId: z.string().optional(), result: schema })
    .transform(({ result, requestId }) => ({ result, requestId }));
}

/**
 * The HTTP client of the management API for an organization: each key acts on its own organization
 * only, so each organization's requests go with its key (and that key's rate budget). Throws
 * ConfigError when the organization has no key; nothing is sent then.
 */
export type ManagementClients = (organizationId: string) => HttpClient;

export type PlatformHttp = {
  /** One client for every organization (a single key), or the client of each organization. */
  management: HttpClient | ManagementClients;
  observability: HttpClient;
};

/** The client over the HTTP clients of each API (each with its own credential and rate budget). */
export function createPlatformClient(http: Readonly<PlatformHttp>): PlatformClient {
  async function call<N extends RouteName>(
    name: N,
    params: Params[N],
    body: Bodies[N],
    options: CallOptions = {},
  ): Promise<Answer<Answers[N]>> {
    const route = ROUTES[name];
    // Every management route is under /v1/organizations/{organizationId}; with a client per
    // organization, its requests are also counted per organization.
    const organization =
      route.api === "management" && typeof http.management === "function"
        ? (params as Record<string, string>).organizationId
        : undefined;
    const client = clientOf(http, route.api, organization);
    const query = queryOf(route, params);
    const answer = await client.request({
      method: route.method,
      route: route.template,
      params,
      ...(query ? { query } : {}),
      body,
      schema: envelope(route, answerOf(route.answer, options.redact)),
      priority: options.priority ?? (route.method === "GET" ? "poll" : "change"),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.redact ? { redact: options.redact } : {}),
      ...(options.guard ? { guard: options.guard } : {}),
      ...(organization ? { organization } : {}),
    });
    // The management envelope carries the request id; the x-request-id header does on either API.
    const requestId = answer.data.requestId ?? answer.requestId;
    return {
      result: answer.data.result,
      ...(requestId ? { requestId } : {}),
      ...(answer.timing ? { timing: answer.timing } : {}),
    };
  }
  return { call };
}

/** The query parameters among `params`: those the route names, when given. */
function queryOf(route: Route, params: object): Record<string, string> | undefined {
  const given = Object.entries(params as Record<string, string | undefined>).filter(
    (entry): entry is [string, string] => route.query?.includes(entry[0]) === true && entry[1] !== undefined,
  );
  return given.length > 0 ? Object.fromEntries(given) : undefined;
}

function clientOf(http: Readonly<PlatformHttp>, api: Api, organization: string | undefined): HttpClient {
  if (api === "observability") return http.observability;
  const { management } = http;
  return typeof management === "function" ? management(organization ?? "") : management;
}

/**
 * Reads one live object or list of the published contract (reads on): the answer, typed by its route.
 * Throws the client's ApiError.
 */
export type Read = <R extends RouteName>(
  request: PlannedRequest<R>,
  options: { priority: Priority; signal?: AbortSignal },
) => Promise<Answer<Answers[R]>>;

/** A Read over the platform client: no secret is sent, and a credential field an answer carries is dropped. */
export function createRead(client: PlatformClient): Read {
  return (request, options) =>
    client.call(request.route, request.params, request.body, { ...options, redact: [] });
}
