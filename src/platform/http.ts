import { setTimeout as sleep } from "node:timers/promises";
import { type Dispatcher, Pool } from "undici";
import { z } from "zod";
import { type Api, ApiError, isApiError, UnknownOutcomeError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import { VERSION } from "../version.js";
import type { Budget, Priority } from "./budget.js";
import { errorDetails, serverWaitMs } from "./http-answers.js";

/**
 * The one way driftless talks to a platform API: a keep-alive undici pool per base URL, the rate budget,
 * a time-out on every attempt, retries of what may be retried, typed errors, and a metric and a debug
 * line per attempt. Management and observability clients are thin layers of routes and schemas on top.
 */

export type RetryOptions = {
  /** Attempts in all, the first one included. */
  maxAttempts: number;
  /** Backoff before the 2nd attempt, doubled for each further one (before jitter). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** No retry starts later than this after the first attempt began. */
  deadlineMs: number;
};

export const DEFAULT_RETRY: RetryOptions = {
  maxAttempts: 6,
  baseDelayMs: 500,
  maxDelayMs: 20_000,
  deadlineMs: 120_000,
};
export const DEFAULT_TIMEOUT_MS = 30_000;

export type HttpClientOptions = {
  api: Api;
  /** Origin, optionally with a path prefix: `https://api.example.com` or `http://127.0.0.1:8124/base`. */
  baseUrl: string;
  /** The Authorization header value; called per attempt so that a rotated credential applies at once. */
  authorization: () => string;
  budget: Budget;
  metrics?: Metrics;
  logger: Logger;
  /** Per attempt, from sending to the end of the answer's body; default 30 s. */
  timeoutMs?: number;
  /** Default DEFAULT_RETRY; fields given here override it. */
  retry?: Partial<RetryOptions>;
  /** Default `driftless/<VERSION>`. */
  userAgent?: string;
  /** Source of jitter in [0, 1); default Math.random. */
  random?: () => number;
};

export type HttpMethod = "GET" | "PUT" | "PATCH" | "POST" | "DELETE";

export type HttpRequest<T> = {
  method: HttpMethod;
  /** The path template, e.g. `/v1/organizations/{organizationId}`: also the `route` label of metrics. */
  route: string;
  /** Values of the template's `{names}`; URL-encoded when substituted. */
  params?: Record<string, string>;
  /** Sent as JSON when present. */
  body?: unknown;
  /** Schema of the success answer's JSON body. */
  schema: z.ZodType<T>;
  priority: Priority;
  /** May the request be repeated after it may have reached the server? Default: method !== "POST". */
  idempotent?: boolean;
  /**
   * Stops waiting (for the budget, before a retry) and starts no further attempt; an attempt already
   * sent still runs to its answer or time-out, and its outcome is returned or thrown as usual.
   */
  signal?: AbortSignal;
  /** The organization the request acts on (management API), for driftless_organization_requests_total. */
  organization?: string;
};

export type HttpResponse<T> = {
  data: T;
  /** The `x-request-id` header, or else the body's top-level `requestId` (the management envelope). */
  requestId?: string;
  status: number;
};

export interface HttpClient {
  readonly api: Api;
  /**
   * Sends one request, retrying 429, 408, 409, 425, 5xx, time-outs and dropped connections within
   * the retry options. Throws ApiError (any other answer, retries exhausted, a body that does not match
   * `schema`), or UnknownOutcomeError when a non-idempotent request may have reached the server.
   */
  request<T>(request: HttpRequest<T>): Promise<HttpResponse<T>>;
  /** Closes the pool's connections. */
  close(): Promise<void>;
}

/** What one attempt came to: an answer, or a failure before one. */
type Attempt =
  | { kind: "answer"; status: number; headers: Record<string, string | string[] | undefined>; text: string }
  | { kind: "failure"; error: unknown; timedOut: boolean; sent: boolean };

/** Errors raised before any byte of the request can have left: repeating is always safe. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]);

const HINTS: Partial<Record<number, Record<Api, string>>> = {
  401: {
    management: "check DRIFTLESS_MANAGEMENT_KEY_ID and DRIFTLESS_MANAGEMENT_KEY_SECRET",
    observability: "check DRIFTLESS_OBSERVABILITY_TOKEN",
  },
  403: {
    management: "check the roles and IP access list of the management key",
    observability: "check the scope of DRIFTLESS_OBSERVABILITY_TOKEN",
  },
};

/** Builds the client of one API; see HttpClientOptions for the defaults. */
export function createHttpClient(options: HttpClientOptions): HttpClient {
  const { api, budget, metrics, logger } = options;
  const retry = { ...DEFAULT_RETRY, ...options.retry };
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const userAgent = options.userAgent ?? `driftless/${VERSION}`;
  const random = options.random ?? Math.random;
  const base = new URL(options.baseUrl);
  const prefix = base.pathname.replace(/\/+$/, "");
  const pool = new Pool(base.origin, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });

  // The caller's signal is not passed down: an attempt already sent runs to its answer or its time-out,
  // so that shutdown never cuts a write off midway (and never makes a POST's outcome unknown).
  async function attempt(method: HttpMethod, path: string, body: string | undefined) {
    const timeout = AbortSignal.timeout(timeoutMs);
    const headers: Record<string, string> = {
      authorization: options.authorization(),
      "user-agent": userAgent,
      accept: "application/json",
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    let connected = false;
    try {
      const answer = await pool.request({
        method,
        path,
        headers,
        body,
        signal: timeout,
      } as Dispatcher.RequestOptions);
      connected = true;
      const text = await answer.body.text();
      return { kind: "answer", status: answer.statusCode, headers: answer.headers, text } satisfies Attempt;
    } catch (error) {
      const code = (error as { code?: string } | undefined)?.code;
      const sent = connected || !(code !== undefined && NOT_SENT_CODES.has(code));
      return { kind: "failure", error, timedOut: timeout.aborted, sent } satisfies Attempt;
    }
  }

  async function request<T>(req: HttpRequest<T>): Promise<HttpResponse<T>> {
    const { method, route, signal } = req;
    const idempotent = req.idempotent ?? method !== "POST";
    const path = prefix + expand(route, req.params ?? {});
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const started = Date.now();
    const labels = { api, method, route };
    const context = { ...labels, retryable: false };
    const log = logger.child({ api, method, route });

    for (let number = 1; ; number++) {
      const priority: Priority = number === 1 ? req.priority : "retry";
      const waitStart = performance.now();
      const release = await budget.acquire(priority, signal);
      metrics?.apiBudgetWaitSeconds.observe({ api, priority }, (performance.now() - waitStart) / 1000);

      const sentAt = performance.now();
      const result = await attempt(method, path, body).finally(release);
      const seconds = (performance.now() - sentAt) / 1000;
      const code = result.kind === "answer" ? String(result.status) : result.timedOut ? "timeout" : "error";
      metrics?.apiRequests.inc({ ...labels, code });
      if (req.organization) metrics?.organizationRequests.inc({ organization: req.organization, code });
      metrics?.apiRequestDuration.observe(labels, seconds);

      // Decide: return, throw, or wait `delayMs` (at least `minDelayMs`) and try again.
      let failure: ApiError;
      let minDelayMs = 0;
      if (result.kind === "answer") {
        const { status, headers, text } = result;
        const headerId = first(headers["x-request-id"]);
        if (status >= 200 && status < 300) {
          const json = parseJson(text);
          const requestId = headerId ?? bodyRequestId(json);
          log.debug({ status, requestId, durationMs: Math.round(seconds * 1000) }, "api request");
          try {
            const data = parseAnswer(req.schema, json, { ...context, status, requestId });
            return { data, status, ...(requestId ? { requestId } : {}) };
          } catch (error) {
            // A create that succeeded but whose answer cannot be read is as unknown as one never answered.
            if (idempotent || !isApiError(error)) throw error;
            throw unknownOutcome(method, route, "its answer could not be read", error);
          }
        }
        const details = errorDetails(status, text);
        const requestId = details.requestId ?? headerId;
        log.debug(
          { status, requestId, durationMs: Math.round(seconds * 1000), attempt: number },
          "api request",
        );
        const notProcessed = status === 429 || status === 408 || status === 425;
        const retryable = notProcessed || status === 409 || status >= 500;
        const hint = HINTS[status]?.[api];
        failure = new ApiError(
          `${api} API ${method} ${route} answered ${status}: ${details.message}${requestId ? ` (request id ${requestId})` : ""}${hint ? `; ${hint}` : ""}`,
          { ...context, status, requestId, retryable },
        );
        // A 503 may say when to come back as well as a 429 does.
        if (retryable) minDelayMs = serverWaitMs(headers, Date.now()) ?? 0;
        if (status === 429) {
          metrics?.apiRateLimited.inc({ api });
          // Every caller of this credential should stop, not only this one.
          if (minDelayMs > 0) budget.holdUntil(Date.now() + minDelayMs);
        }
        if (!retryable) throw failure;
        if (!idempotent && !notProcessed) {
          if (status >= 500) throw unknownOutcome(method, route, `it answered ${status}`, failure);
          throw failure;
        }
      } else {
        const reason = result.timedOut ? `no answer within ${timeoutMs} ms` : describeFailure(result.error);
        log.debug({ code, reason, durationMs: Math.round(seconds * 1000), attempt: number }, "api request");
        failure = new ApiError(
          `${api} API ${method} ${route} failed: ${reason}`,
          { ...context, retryable: true },
          { cause: result.error },
        );
        if (!idempotent && result.sent) throw unknownOutcome(method, route, reason, failure);
      }
      if (signal?.aborted) throw failure;

      const backoff = random() * Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (number - 1));
      const delayMs = Math.max(minDelayMs, backoff);
      const deadline = started + retry.deadlineMs;
      if (number >= retry.maxAttempts || Date.now() + delayMs > deadline) {
        failure.message += ` (gave up after ${number} attempt${number === 1 ? "" : "s"})`;
        throw failure;
      }
      log.info({ attempt: number, delayMs: Math.round(delayMs), reason: code }, "retrying api request");
      try {
        await sleep(delayMs, undefined, signal ? { signal } : undefined);
      } catch {
        throw failure;
      }
    }
  }

  return { api, request, close: () => pool.close() };
}

/** Substitutes `{name}` in a route template; a missing parameter is a bug in the caller. */
function expand(route: string, params: Record<string, string>): string {
  return route.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`route ${route} needs the parameter ${name}`);
    return encodeURIComponent(value);
  });
}

const NOT_JSON = Symbol("not JSON");

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

/** The `requestId` of a success body (the management envelope has one), for the log line. */
function bodyRequestId(json: unknown): string | undefined {
  const id = (json as { requestId?: unknown } | null)?.requestId;
  return typeof id === "string" ? id : undefined;
}

function parseAnswer<T>(
  schema: z.ZodType<T>,
  json: unknown,
  context: ConstructorParameters<typeof ApiError>[1],
): T {
  const where = `${context.api} API ${context.method} ${context.route}`;
  const id = context.requestId ? ` (request id ${context.requestId})` : "";
  if (json === NOT_JSON) {
    throw new ApiError(`${where} answered ${context.status} with a body that is not JSON${id}`, context);
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  throw new ApiError(
    `${where} answered ${context.status} with an unexpected body${id}: ${z.prettifyError(parsed.error)}`,
    context,
    { cause: parsed.error },
  );
}

function unknownOutcome(method: string, route: string, reason: string, cause: ApiError): UnknownOutcomeError {
  return new UnknownOutcomeError(
    `${method} ${route} may or may not have taken effect (${reason}); it is not repeated automatically, because repeating it could create a duplicate`,
    { cause },
  );
}

function describeFailure(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  return [code, message].filter(Boolean).join(": ") || String(error);
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
