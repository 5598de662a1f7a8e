import { timingSafeEqual } from "node:crypto";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { type Api, ConfigError, DriftlessError } from "../errors.js";
import {
  type Contract,
  hasRoute,
  ROUTE_NAMES,
  ROUTES,
  type RouteName,
  type RouteOf,
} from "../platform/routes.js";
import type { Logger } from "../telemetry/logger.js";
import { CONSOLE_PREFIX } from "./console.js";
import { type FaultBook, isHostile } from "./faults.js";
import type { RateDecision } from "./rate-limit.js";

/**
 * What both simulated APIs share: routing by path template, recording, faults, auth, rate limits and
 * the error answers. Each API brings its routes, its auth and its error body.
 */

/** One request as it arrived, and the status it got (0: dropped, hanging, or not answered yet). */
export type RecordedRequest = {
  api: Api;
  method: string;
  path: string;
  /** The route template, e.g. "/api/v2/alerts/{id}"; undefined when no route matched. */
  route: string | undefined;
  /** The query string's parameters (the last of a repeated one); {} without one. */
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body; undefined when there was none or it was not JSON. */
  body: unknown;
  status: number;
  /** Arrival time, ms since the epoch. */
  at: number;
};

export type Answer = {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** The body as JSON text, sent as it is: a hostile answer that JSON.stringify could not write. */
  json?: string;
};

/**
 * A request the platform refuses (400, 403, 404, ...). Thrown by handlers and turned into the API's
 * error answer; it never leaves the simulator.
 */
export class Rejection extends DriftlessError {
  override name = "Rejection";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Answered with no body at all (the published observability API's 404), not the API's error body. */
    readonly empty = false,
  ) {
    super(message);
  }
}

/** Whether a given credential equals a known one, in constant time; compared as bytes, so any text is safe. */
export function sameSecret(given: string, known: string): boolean {
  const a = Buffer.from(given, "utf8");
  const b = Buffer.from(known, "utf8");
  return a.length === b.length && timingSafeEqual(a, b);
}

export const badRequest = (message: string) => new Rejection(400, "BAD_REQUEST", message);
export const notFound = (message: string) => new Rejection(404, "NOT_FOUND", message);

export type RequestContext<Caller> = {
  params: Record<string, string>;
  /** The query string's parameters, as the contract check accepted them. */
  query: Record<string, string>;
  body: unknown;
  caller: Caller;
  requestId: string | undefined;
};

export type Handler<Caller> = (context: RequestContext<Caller>) => Answer;

/** An API's handlers by route name: total over the API's routes, so a route of the table cannot be missed. */
export type Handlers<A extends Api, Caller> = { [N in RouteOf<A>]: Handler<Caller> };

type Route<Caller> = { name: RouteName; method: string; template: string; handle: Handler<Caller> };

export type ApiServerOptions<A extends Api, Caller> = {
  api: A;
  /** The contract served: its routes only (the published contract's reads are `full` only). */
  contract: Contract;
  handlers: Handlers<A, Caller>;
  /** Why the contract refuses a request (a 400), checked before its handler runs; undefined: accepted. */
  check?(
    route: RouteName,
    params: Record<string, string>,
    body: unknown,
    query: Record<string, string>,
  ): string | undefined;
  /** The caller an Authorization header proves, or undefined (401). */
  authenticate(authorization: string | undefined): Caller | undefined;
  /** The caller's identity for the rate limit. */
  callerId(caller: Caller): string;
  limiter(callerId: string): RateDecision | undefined;
  errorBody(status: number, code: string, message: string, requestId: string | undefined): unknown;
  newRequestId(): string | undefined;
  faults: FaultBook;
  /** Where each request is recorded; the oldest are dropped past `recordLimit`. */
  requests: RecordedRequest[];
  recordLimit: number;
  /** Called after a request reached the platform (whatever its answer), e.g. to save the state. */
  onHandled?(method: string): void;
  /** The console's edits (console.ts): served beside the API, never recorded as its requests. */
  console?(request: IncomingMessage, response: ServerResponse, path: string): Promise<void>;
  logger: Logger | undefined;
};

const MAX_BODY_BYTES = 1_048_576;

/** The routes of the table that `handlers` serves under `contract`, with their methods and templates. */
function routesOf<A extends Api, Caller>(
  api: A,
  contract: Contract,
  handlers: Handlers<A, Caller>,
): Route<Caller>[] {
  const served: Partial<Record<RouteName, Handler<Caller>>> = handlers;
  return ROUTE_NAMES.flatMap((name) => {
    const handle = served[name];
    const { method, template } = ROUTES[name];
    return ROUTES[name].api === api && handle && hasRoute(contract, name)
      ? [{ name, method, template, handle }]
      : [];
  });
}

/** A path segment's value; undefined for malformed percent-encoding (the route does not match). */
function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * The path and query of a request target; one that is no URL (e.g. "//[") is kept as written and
 * matches no route.
 */
function targetOf(target: string): { path: string; query: Record<string, string> } {
  try {
    const url = new URL(target, "http://simulator");
    return { path: url.pathname, query: Object.fromEntries(url.searchParams) };
  } catch {
    return { path: target, query: {} };
  }
}

function match<Caller>(routes: Route<Caller>[], method: string, path: string) {
  const segments = path.split("/");
  let pathMatched = false;
  for (const route of routes) {
    const parts = route.template.split("/");
    if (parts.length !== segments.length) continue;
    const params: Record<string, string> = {};
    const same = parts.every((part, i) => {
      const segment = segments[i] ?? "";
      if (!part.startsWith("{")) return part === segment;
      const value = decodeSegment(segment);
      if (value === undefined || value === "") return false;
      params[part.slice(1, -1)] = value;
      return true;
    });
    if (!same) continue;
    if (route.method === method) return { route, params, pathMatched: true };
    pathMatched = true;
  }
  return { route: undefined, params: {}, pathMatched };
}

async function readBody(request: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** What a request is once read: where it goes, what it carries, and its record. */
type Incoming<Caller> = {
  request: IncomingMessage;
  route: Route<Caller> | undefined;
  params: Record<string, string>;
  pathMatched: boolean;
  requestId: string | undefined;
  /** The raw body; undefined when it was larger than MAX_BODY_BYTES. */
  text: string | undefined;
  json: ReturnType<typeof parseJson> | undefined;
  recorded: RecordedRequest;
};

/** Starts one API's server on host:port (0: any free port); resolves once it listens, throws ConfigError when it cannot. */
export async function startApiServer<A extends Api, Caller>(
  options: ApiServerOptions<A, Caller>,
  host: string,
  port: number,
) {
  const routes = routesOf(options.api, options.contract, options.handlers);
  const server = createServer((request, response) => {
    serve(options, routes, request, response).catch((error) => {
      options.logger?.error({ err: error, api: options.api }, "simulator request failed");
      response.destroy();
    });
  });
  await listen(server, options.api, host, port);
  const address = server.address() as AddressInfo;
  const urlHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${urlHost}:${address.port}`,
    /** Stops listening and cuts every open connection, hanging ones included. */
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Listens; a busy or unavailable address is a setting to change, not a crash: says which one. */
function listen(server: Server, api: Api, host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const refuse = (error: Error) =>
      reject(
        new ConfigError(`the simulated ${api} API cannot listen on ${host}:${port}: ${error.message}`, {
          cause: error,
        }),
      );
    server.once("error", refuse);
    server.listen(port, host, () => {
      server.off("error", refuse);
      resolve();
    });
  });
}

/** One request: read and record it, let a fault get in the way, else answer what the platform decides. */
async function serve<A extends Api, Caller>(
  options: ApiServerOptions<A, Caller>,
  routes: Route<Caller>[],
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const { path } = targetOf(request.url ?? "/");
  if (options.console && path.startsWith(CONSOLE_PREFIX)) return options.console(request, response, path);
  const incoming = await readIncoming(options, routes, request);
  const { recorded } = incoming;
  const fault = options.faults.take(options.api, recorded.method, recorded.route);
  if (fault?.kind === "latency") await (fault.until?.catch(() => {}) ?? sleep(fault.ms ?? 1000));
  if (fault?.kind === "status") {
    const status = fault.status ?? 503;
    const body =
      fault.body ?? options.errorBody(status, "INJECTED_FAULT", "injected fault", incoming.requestId);
    return send(options, incoming, response, { status, body, headers: fault.headers });
  }
  if (fault?.kind === "drop" || fault?.kind === "hang") {
    // With `applied`, the platform does the work and only the answer is lost: an unknown outcome.
    if (fault.applied) {
      decide(options, incoming);
      options.onHandled?.(recorded.method);
    }
    options.logger?.debug(
      { api: options.api, method: recorded.method, route: recorded.route, fault: fault.kind },
      "simulator lost the answer",
    );
    if (fault.kind === "drop") request.socket.destroy();
    return;
  }
  const answer = decide(options, incoming);
  send(options, incoming, response, fault && isHostile(fault) ? hostile(options, fault, answer) : answer);
  options.onHandled?.(recorded.method);
}

/** A hostile answer (faults.ts): a 2xx JSON answer rewritten; any other answer goes out as it is. */
function hostile<A extends Api, Caller>(
  options: ApiServerOptions<A, Caller>,
  fault: Parameters<FaultBook["rewrite"]>[0],
  answer: Answer,
): Answer {
  const { status, body } = answer;
  if (status < 200 || status >= 300 || typeof body !== "object" || body === null) return answer;
  return { ...answer, json: options.faults.rewrite(fault, body) };
}

async function readIncoming<A extends Api, Caller>(
  options: ApiServerOptions<A, Caller>,
  routes: Route<Caller>[],
  request: IncomingMessage,
): Promise<Incoming<Caller>> {
  const at = Date.now();
  const method = request.method ?? "GET";
  const { path, query } = targetOf(request.url ?? "/");
  const { route, params, pathMatched } = match(routes, method, path);
  const requestId = options.newRequestId();
  const text = await readBody(request);
  const json = text ? parseJson(text) : undefined;
  const recorded: RecordedRequest = {
    api: options.api,
    method,
    path,
    route: route?.template,
    query,
    headers: request.headers,
    body: json?.ok ? json.value : undefined,
    status: 0,
    at,
  };
  options.requests.push(recorded);
  const excess = options.requests.length - options.recordLimit;
  if (excess > 0) options.requests.splice(0, excess);
  return { request, route, params, pathMatched, requestId, text, json, recorded };
}

function send<A extends Api, Caller>(
  options: ApiServerOptions<A, Caller>,
  incoming: Incoming<Caller>,
  response: ServerResponse,
  answer: Answer,
): void {
  const { recorded, requestId } = incoming;
  recorded.status = answer.status;
  options.logger?.debug(
    { api: options.api, method: recorded.method, route: recorded.route, status: answer.status },
    "simulator answered",
  );
  // A string body goes out as plain text: some gateways in front of the platform answer so.
  const text = typeof answer.body === "string";
  const headers: Record<string, string> = {
    "content-type": text ? "text/plain; charset=utf-8" : "application/json",
    ...answer.headers,
  };
  if (requestId) headers["x-request-id"] = requestId;
  response.writeHead(answer.status, headers);
  if (answer.json !== undefined) response.end(answer.json);
  else if (answer.body === undefined) response.end();
  else response.end(text ? (answer.body as string) : JSON.stringify(answer.body));
}

/** What the platform answers (and does) when nothing gets in the way: route, auth, rate, body, handler. */
function decide<A extends Api, Caller>(
  options: ApiServerOptions<A, Caller>,
  incoming: Incoming<Caller>,
): Answer {
  const { route, request, recorded, requestId } = incoming;
  const error = (
    status: number,
    code: string,
    message: string,
    headers?: Record<string, string>,
  ): Answer => ({
    status,
    body: options.errorBody(status, code, message, requestId),
    ...(headers ? { headers } : {}),
  });
  if (!route) {
    if (incoming.pathMatched)
      return error(405, "METHOD_NOT_ALLOWED", `${recorded.method} is not allowed on ${recorded.path}`);
    return error(404, "NOT_FOUND", `no route ${recorded.method} ${recorded.path}`);
  }
  const caller = options.authenticate(request.headers.authorization);
  if (caller === undefined) return error(401, "UNAUTHORIZED", "missing or invalid credentials");
  const rate = options.limiter(options.callerId(caller));
  const rateHeaders = rate ? rateLimitHeaders(rate) : {};
  if (rate && !rate.allowed) {
    const retryAfter = String(Math.max(1, Math.ceil(rate.resetInMs / 1000)));
    return {
      status: 429,
      body: { error: "TOO_MANY_REQUESTS" },
      headers: { ...rateHeaders, "retry-after": retryAfter },
    };
  }
  if (incoming.text === undefined) return error(413, "PAYLOAD_TOO_LARGE", "the body is larger than 1 MiB");
  if (incoming.text && !/^application\/json\b/i.test(request.headers["content-type"] ?? "")) {
    return error(415, "UNSUPPORTED_MEDIA_TYPE", "a body must be sent with Content-Type: application/json");
  }
  if (incoming.json && !incoming.json.ok) return error(400, "BAD_REQUEST", "the body is not valid JSON");
  const { params } = incoming;
  const { body, query } = recorded;
  const refused = options.check?.(route.name, params, body, query);
  if (refused !== undefined) return error(400, "BAD_REQUEST", refused, rateHeaders);
  try {
    const answer = route.handle({ params, query, body, caller, requestId });
    return { ...answer, headers: { ...rateHeaders, ...answer.headers } };
  } catch (thrown) {
    if (thrown instanceof Rejection && thrown.empty) return { status: thrown.status, headers: rateHeaders };
    if (thrown instanceof Rejection) return error(thrown.status, thrown.code, thrown.message, rateHeaders);
    options.logger?.error(
      { err: thrown, api: options.api, method: recorded.method, route: route.template },
      "simulator handler failed",
    );
    return error(500, "INTERNAL_ERROR", "the simulator failed to handle the request");
  }
}

function rateLimitHeaders(rate: RateDecision): Record<string, string> {
  return {
    "x-ratelimit-limit": String(rate.limit),
    "x-ratelimit-remaining": String(rate.remaining),
    // Unix seconds, as GitHub and most APIs send it; Retry-After carries the relative wait.
    "x-ratelimit-reset": String(Math.ceil(rate.resetAt / 1000)),
  };
}
