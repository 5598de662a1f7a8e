import { setTimeout as sleep } from "node:timers/promises";
import { type Dispatcher, Pool } from "undici";
import type { z } from "zod";
import { type Api, ApiError, errnoOf } from "../errors.js";
import { VERSION } from "../package.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import {
  type Budget,
  type BudgetWait,
  DEFAULT_MAX_SERVER_WAIT_MS,
  isHeldError,
  MAX_TIMER_MS,
  type Priority,
} from "./budget.js";
import { first } from "./http-answers.js";
import {
  type Attempt,
  type AttemptContext,
  classify,
  codeOf,
  DEFAULT_RETRY,
  type Decision,
  describeWait,
  type HttpMethod,
  type HttpResponse,
  type RequestTiming,
  type RetryOptions,
  reasonOf,
  requestIdOf,
} from "./http-classify.js";
import { expandTemplate } from "./routes.js";

export type { HttpMethod, HttpResponse, RequestTiming, RetryOptions } from "./http-classify.js";
export { DEFAULT_RETRY } from "./http-classify.js";

/**
 * The one way driftless talks to a platform API: a keep-alive undici pool per base URL, the rate budget,
 * a time-out on every attempt, retries of what may be retried, typed errors, and a metric and a debug
 * line per attempt. Management and observability clients are thin layers of routes and schemas on top.
 */

/** Errors raised before any byte of the request can have left: repeating is always safe. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]);

export const DEFAULT_TIMEOUT_MS = 30_000;
/** The largest answer read into memory: far above any answer of the platform APIs. */
export const DEFAULT_MAX_ANSWER_BYTES = 4 * 1024 * 1024;

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
  /**
   * The longest wait accepted from Retry-After / X-RateLimit-Reset; a longer one is cut to it (and
   * logged). Default DEFAULT_MAX_SERVER_WAIT_MS (5 minutes). Give the budget the same value.
   */
  maxServerWaitMs?: number;
  /** A larger answer is not read: an ApiError (for a POST, an unknown outcome). Default 4 MiB. */
  maxAnswerBytes?: number;
  /** Milliseconds on a clock that never steps, for the deadline of retries; default performance.now. */
  monotonic?: () => number;
};

export type HttpRequest<T> = {
  method: HttpMethod;
  /** The path template, e.g. `/v1/organizations/{organizationId}`: also the `route` label of metrics. */
  route: string;
  /** Values of the template's `{names}`; URL-encoded when substituted. */
  params?: Record<string, string>;
  /** The query string's parameters, URL-encoded after the path; the route (and its metrics label) stays the template. */
  query?: Record<string, string>;
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
  /**
   * The secret values sent in this request: masked in the messages of its errors, before any rewriting
   * of the platform's text, since a platform may echo a request's body in its error answer.
   */
  redact?: readonly string[];
  /** The organization the request acts on (management API), for driftless_organization_requests_total. */
  organization?: string;
  /**
   * "May this still be sent?", asked right before each attempt goes out, retries included, once the
   * rate budget has granted it: a write must not leave a process that was suspended, or lost its
   * lock or leadership, while it waited. Throwing stops the request with nothing more sent, and
   * request() throws what it threw.
   */
  guard?: () => void | Promise<void>;
};

export interface HttpClient {
  readonly api: Api;
  /**
   * Sends one request, retrying 429, 408, 409, 425, 5xx, time-outs and dropped connections within
   * the retry options. Throws ApiError (any other answer, retries exhausted, a wait asked by the server
   * that does not fit in the deadline, including a 429's hold of the whole credential, a body that does
   * not match `schema` or is larger than `maxAnswerBytes`), UnknownOutcomeError when a non-idempotent
   * request may have reached the server, the signal's reason when it aborted before anything was sent,
   * or what `guard` threw.
   */
  request<T>(request: HttpRequest<T>): Promise<HttpResponse<T>>;
  /** Closes the pool's connections. */
  close(): Promise<void>;
}

/** The client's settings with their defaults applied, and its pool: what every step of a request reads. */
type Client = {
  api: Api;
  budget: Budget;
  metrics?: Metrics;
  logger: Logger;
  retry: RetryOptions;
  timeoutMs: number;
  maxServerWaitMs: number;
  random: () => number;
  monotonic: () => number;
  /** The base URL's path, without a trailing slash, put before every route. */
  prefix: string;
  send: (method: HttpMethod, path: string, body: string | undefined) => Promise<Attempt>;
};

/** Builds the client of one API; see HttpClientOptions for the defaults. */
export function createHttpClient(options: HttpClientOptions): HttpClient {
  // No timer of Node holds more than MAX_TIMER_MS: a longer one would fire at once, again and again.
  const timeoutMs = Math.min(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, MAX_TIMER_MS);
  const base = new URL(options.baseUrl);
  const pool = new Pool(base.origin, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  const client: Client = {
    api: options.api,
    budget: options.budget,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    logger: options.logger,
    retry: { ...DEFAULT_RETRY, ...options.retry },
    timeoutMs,
    maxServerWaitMs: Math.min(options.maxServerWaitMs ?? DEFAULT_MAX_SERVER_WAIT_MS, MAX_TIMER_MS),
    random: options.random ?? Math.random,
    monotonic: options.monotonic ?? (() => performance.now()),
    prefix: base.pathname.replace(/\/+$/, ""),
    send: sendAttempt(pool, {
      authorization: options.authorization,
      userAgent: options.userAgent ?? `driftless/${VERSION}`,
      timeoutMs,
      maxAnswerBytes: options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES,
    }),
  };
  return { api: options.api, request: (req) => request(client, req), close: () => pool.close() };
}

/** The request loop: attempt, classify, act on the decision (return, throw, or wait and go again). */
async function request<T>(client: Client, req: HttpRequest<T>): Promise<HttpResponse<T>> {
  const { method, route, signal } = req;
  const call: Call = {
    method,
    route,
    path: client.prefix + expandTemplate(route, req.params ?? {}) + queryString(req.query),
    body: req.body === undefined ? undefined : JSON.stringify(req.body),
    ...(req.organization ? { organization: req.organization } : {}),
  };
  const log = client.logger.child({ api: client.api, method, route });
  const context = requestContext(client, req);
  // The deadline runs from the first attempt's send: a wait in the budget's queue before it, which
  // only paces, does not eat into it (a hold of the platform's is measured against the whole of it).
  let firstSentAt: number | undefined;
  const elapsedMs = () => (firstSentAt === undefined ? 0 : client.monotonic() - firstSentAt);
  const leftMs = () => client.retry.deadlineMs - elapsedMs();
  const timing = { budgetWaitMs: 0, requestMs: 0 };

  for (let number = 1; ; number++) {
    const priority = number === 1 ? req.priority : "retry";
    const { attempt, durationMs, sentAt, waitedMs } = await budgeted(client, call, {
      priority,
      leftMs,
      req,
      log,
    });
    firstSentAt ??= sentAt;
    timing.budgetWaitMs += waitedMs;
    timing.requestMs += durationMs;
    const decision = classify(attempt, {
      ...context,
      // The wall clock only reads a Retry-After given as a date; every duration is monotonic.
      ...{ number, now: Date.now(), elapsedMs: elapsedMs(), jitter: client.random() },
      aborted: signal?.aborted ?? false,
    });
    report(client, { call, decision, attempt, number, durationMs }, log);
    if (decision.action === "return") return { ...decision.response, timing: rounded(timing) };
    if (decision.action === "throw") throw decision.error;
    const delayMs = Math.round(decision.delayMs);
    log.info({ attempt: number, delayMs, reason: codeOf(attempt) }, "retrying api request");
    await sleep(decision.delayMs, undefined, signal ? { signal } : undefined).catch(() => {
      throw decision.error;
    });
  }
}

/** `?a=1&b=2` for the given parameters; "" for none. */
function queryString(query: Record<string, string> | undefined): string {
  const search = new URLSearchParams(query).toString();
  return search ? `?${search}` : "";
}

function rounded(timing: RequestTiming): RequestTiming {
  return { budgetWaitMs: Math.round(timing.budgetWaitMs), requestMs: Math.round(timing.requestMs) };
}

/** What classify reads that stays the same for every attempt of one request. */
function requestContext<T>(client: Client, req: HttpRequest<T>): RequestContext<T> {
  return {
    api: client.api,
    method: req.method,
    route: req.route,
    schema: req.schema,
    idempotent: req.idempotent ?? req.method !== "POST",
    redact: req.redact ?? [],
    retry: client.retry,
    timeoutMs: client.timeoutMs,
    maxServerWaitMs: client.maxServerWaitMs,
  };
}

type RequestContext<T> = Omit<AttemptContext<T>, "number" | "now" | "elapsedMs" | "jitter" | "aborted">;

/** One request as it goes on the wire. */
type Call = {
  method: HttpMethod;
  route: string;
  path: string;
  body: string | undefined;
  organization?: string;
};

/**
 * Waits for the budget, asks the request's guard, sends one attempt, releases the budget, and counts
 * the attempt. Throws, with nothing sent: an ApiError when the platform's hold of the credential outlasts
 * the request's deadline, the signal's reason, or what the guard threw.
 */
async function budgeted(
  client: Client,
  call: Call,
  {
    priority,
    leftMs,
    req,
    log,
  }: { priority: Priority; leftMs: () => number; req: HttpRequest<unknown>; log: Logger },
) {
  const { api, metrics } = client;
  const { method, route } = call;
  const { signal } = req;
  const waitStart = performance.now();
  const waitStartedAt = client.monotonic();
  const onWait = (wait: BudgetWait) => logWait(log, priority, wait);
  const release = await client.budget
    .acquire(priority, { deadlineMs: Math.max(0, leftMs()), onWait, ...(signal ? { signal } : {}) })
    .catch((error: unknown) => {
      if (!isHeldError(error)) throw error;
      throw new ApiError(
        `${api} API ${method} ${route} not sent: ${error.message}`,
        { api, method, route, retryable: true },
        { cause: error },
      );
    });
  metrics?.apiBudgetWaitSeconds.observe({ api, priority }, (performance.now() - waitStart) / 1000);
  const waitedMs = client.monotonic() - waitStartedAt;
  try {
    // Asked after the grant, right before the send: the wait may have been long.
    if (signal?.aborted) throw signal.reason;
    await req.guard?.();
  } catch (error) {
    release(true);
    throw error;
  }
  const sentAt = client.monotonic();
  const attempt = await client.send(method, call.path, call.body).finally(release);
  const durationMs = client.monotonic() - sentAt;
  metrics?.apiRequests.inc({ api, method, route, code: codeOf(attempt) });
  if (call.organization)
    metrics?.organizationRequests.inc({ organization: call.organization, code: codeOf(attempt) });
  metrics?.apiRequestDuration.observe({ api, method, route }, durationMs / 1000);
  return { attempt, durationMs, sentAt, waitedMs };
}

/**
 * A person notices a pause of a second: such a wait is said at info, before it starts, with why; a
 * shorter one only at debug.
 */
export const NOTICEABLE_WAIT_MS = 1000;

function logWait(log: Logger, priority: Priority, wait: BudgetWait): void {
  const level = wait.atLeastMs >= NOTICEABLE_WAIT_MS ? "info" : "debug";
  const why =
    wait.why === "hold"
      ? `the platform holds this credential: ${wait.holdReason}`
      : `${wait.used} of ${wait.limit} requests per ${wait.windowSeconds} s spent`;
  log[level](
    { priority, waitMs: Math.round(wait.atLeastMs), why, waitingBefore: wait.ahead },
    "waiting for the rate budget",
  );
}

/** The debug line of an attempt, the rate-limit metric, and what a server's wait does to the budget. */
function report<T>(
  client: Client,
  outcome: { call: Call; decision: Decision<T>; attempt: Attempt; number: number; durationMs: number },
  log: Logger,
): void {
  const { decision, attempt } = outcome;
  const fields = { attempt: outcome.number, durationMs: Math.round(outcome.durationMs) };
  if (attempt.kind === "failure") {
    const reason = reasonOf(attempt, client.timeoutMs);
    log.debug({ ...fields, code: codeOf(attempt), reason }, "api request");
  } else {
    log.debug({ ...fields, status: attempt.status, requestId: requestIdOf(decision) }, "api request");
    if (attempt.status === 429) client.metrics?.apiRateLimited.inc({ api: client.api });
  }
  if (decision.action === "return" || !decision.wait) return;
  const { askedMs, cappedMs, scope } = decision.wait;
  if (askedMs > cappedMs) {
    log.warn({ askedMs, cappedMs }, "the platform asked for a wait longer than the maximum; capped");
  }
  // Every caller of this credential should stop, not only this one.
  if (scope === "credential") {
    const { method, route } = outcome.call;
    client.budget.hold(
      cappedMs,
      `a 429 answer to ${method} ${route} asked for ${describeWait(decision.wait)}`,
    );
  }
}

/**
 * One attempt over `pool`, its answer read up to `maxAnswerBytes`. The caller's signal is not passed
 * down: an attempt already sent runs to its answer or its time-out, so that shutdown never cuts a write
 * off midway (and never makes a POST's outcome unknown).
 */
function sendAttempt(
  pool: Pool,
  options: { authorization: () => string; userAgent: string; timeoutMs: number; maxAnswerBytes: number },
) {
  return async (method: HttpMethod, path: string, body: string | undefined): Promise<Attempt> => {
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const headers: Record<string, string> = {
      authorization: options.authorization(),
      "user-agent": options.userAgent,
      accept: "application/json",
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    };
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
      const { statusCode: status, headers: answerHeaders } = answer;
      const text = await readAtMost(answer, options.maxAnswerBytes);
      if (text === undefined) {
        return { kind: "oversized", status, headers: answerHeaders, limitBytes: options.maxAnswerBytes };
      }
      return { kind: "answer", status, headers: answerHeaders, text };
    } catch (error) {
      const code = errnoOf(error);
      const sent = connected || !(code !== undefined && NOT_SENT_CODES.has(code));
      return { kind: "failure", error, timedOut: timeout.aborted, sent };
    }
  };
}

/** The body as text, or undefined (and the body discarded) once it is larger than `limit` bytes. */
async function readAtMost(answer: Dispatcher.ResponseData, limit: number): Promise<string | undefined> {
  const declared = Number(first(answer.headers["content-length"]));
  if (declared > limit) {
    answer.body.destroy();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of answer.body) {
    size += (chunk as Buffer).length;
    // Leaving the loop destroys the stream: the rest is never buffered.
    if (size > limit) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
