import type { z } from "zod";
import { type Api, ApiError, isApiError, UnknownOutcomeError } from "../errors.js";
import { MAX_TIMER_MS } from "./budget.js";
import {
  bodyRequestId,
  describeFailure,
  errorDetails,
  first,
  parseAnswer,
  parseJson,
  serverWaitMs,
} from "./http-answers.js";

/**
 * What the HTTP client makes of one attempt, decided in one pure function (classify): return the
 * answer, throw, or try again after a delay. The client's loop only acts on the decision.
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

export type HttpMethod = "GET" | "PUT" | "PATCH" | "POST" | "DELETE";

export type HttpResponse<T> = {
  data: T;
  /** The `x-request-id` header, or else the body's top-level `requestId` (the management envelope). */
  requestId?: string;
  status: number;
  /**
   * Where the request's time went, over all its attempts: waiting for the rate budget, and on the wire
   * (sending to the end of the answer). Retry back-offs are in neither.
   */
  timing?: RequestTiming;
};

export type RequestTiming = { budgetWaitMs: number; requestMs: number };

/** What one attempt came to: an answer (read, or too large to read), or a failure before any answer. */
export type Attempt =
  | { kind: "answer"; status: number; headers: Headers; text: string }
  | { kind: "oversized"; status: number; headers: Headers; limitBytes: number }
  | { kind: "failure"; error: unknown; timedOut: boolean; sent: boolean };

type Headers = Record<string, string | string[] | undefined>;

/**
 * A wait the platform asked for (Retry-After, X-RateLimit-Reset) and the part of it driftless accepts.
 * A 429's wait holds every request of the credential; a 503's only the request it answered.
 */
export type ServerWait = { askedMs: number; cappedMs: number; scope: "request" | "credential" };

/** Everything classify needs besides the attempt, as plain values, so that classify is pure. */
export type AttemptContext<T> = {
  api: Api;
  method: HttpMethod;
  route: string;
  schema: z.ZodType<T>;
  idempotent: boolean;
  redact: readonly string[];
  /** 1 for the first attempt. */
  number: number;
  /** Since the first attempt began. */
  elapsedMs: number;
  /** Epoch ms, to read a Retry-After given as a date. */
  now: number;
  /** A draw in [0, 1) for the backoff's jitter. */
  jitter: number;
  /** The caller's signal has aborted: no further attempt. */
  aborted: boolean;
  retry: RetryOptions;
  timeoutMs: number;
  maxServerWaitMs: number;
};

/** What to do after an attempt: return its answer, throw, or try again after `delayMs`. */
export type Decision<T> =
  | { action: "return"; response: HttpResponse<T> }
  | { action: "throw"; error: Error; wait?: ServerWait }
  | { action: "retry"; error: ApiError; delayMs: number; wait?: ServerWait };

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

/**
 * Decides what an attempt comes to: its answer returned, an error thrown, or another attempt after a
 * delay. Pure: reads only its arguments. Never repeats a non-idempotent request that may have reached
 * the server; retries 429, 408, 409, 425, 5xx, time-outs and dropped connections within `retry`, after
 * the larger of the backoff and the server's wait (capped at `maxServerWaitMs`), and throws at once when
 * that wait does not fit in the time left before `retry.deadlineMs`.
 */
export function classify<T>(attempt: Attempt, context: AttemptContext<T>): Decision<T> {
  if (attempt.kind === "failure") return classifyFailure(attempt, context);
  if (attempt.status >= 200 && attempt.status < 300) return classifySuccess(attempt, context);
  return classifyErrorAnswer(attempt, context);
}

function classifySuccess<T>(
  attempt: Exclude<Attempt, { kind: "failure" }>,
  context: AttemptContext<T>,
): Decision<T> {
  const { status } = attempt;
  const headerId = first(attempt.headers["x-request-id"]);
  if (attempt.kind === "oversized") {
    const reason = `an answer larger than ${attempt.limitBytes} bytes`;
    const error = new ApiError(
      `${where(context)} answered ${status} with ${reason}, which was not read${headerId ? ` (request id ${headerId})` : ""}`,
      { ...errorContext(context), status, requestId: headerId, retryable: false },
    );
    return {
      action: "throw",
      error: context.idempotent ? error : unknownOutcome(context, `it sent ${reason}`, error),
    };
  }
  const json = parseJson(attempt.text);
  const requestId = headerId ?? bodyRequestId(json);
  try {
    const data = parseAnswer(context.schema, json, {
      ...errorContext(context),
      status,
      requestId,
      retryable: false,
    });
    return { action: "return", response: { data, status, ...(requestId ? { requestId } : {}) } };
  } catch (error) {
    // A create that succeeded but whose answer cannot be read is as unknown as one never answered.
    if (context.idempotent || !isApiError(error)) return { action: "throw", error: error as Error };
    return { action: "throw", error: unknownOutcome(context, "its answer could not be read", error) };
  }
}

function classifyErrorAnswer<T>(
  attempt: Exclude<Attempt, { kind: "failure" }>,
  context: AttemptContext<T>,
): Decision<T> {
  const { status, headers } = attempt;
  const details =
    attempt.kind === "answer"
      ? errorDetails(status, attempt.text, context.redact)
      : { message: `an answer larger than ${attempt.limitBytes} bytes, not read` };
  const requestId = details.requestId ?? first(headers["x-request-id"]);
  const notProcessed = status === 429 || status === 408 || status === 425;
  const retryable = notProcessed || status === 409 || status >= 500;
  const hint = HINTS[status]?.[context.api];
  const failure = new ApiError(
    `${where(context)} answered ${status}: ${details.message}${requestId ? ` (request id ${requestId})` : ""}${hint ? `; ${hint}` : ""}`,
    { ...errorContext(context), status, requestId, retryable },
  );
  if (!retryable) return { action: "throw", error: failure };
  if (!context.idempotent && !notProcessed) {
    if (status >= 500)
      return { action: "throw", error: unknownOutcome(context, `it answered ${status}`, failure) };
    return { action: "throw", error: failure };
  }
  // A 503 may say when to come back as well as a 429 does.
  return retryOrGiveUp(failure, serverWait(headers, status, context), context);
}

function classifyFailure<T>(
  attempt: Extract<Attempt, { kind: "failure" }>,
  context: AttemptContext<T>,
): Decision<T> {
  const reason = reasonOf(attempt, context.timeoutMs);
  const failure = new ApiError(
    `${where(context)} failed: ${reason}`,
    { ...errorContext(context), retryable: true },
    { cause: attempt.error },
  );
  if (!context.idempotent && attempt.sent) {
    return { action: "throw", error: unknownOutcome(context, reason, failure) };
  }
  return retryOrGiveUp(failure, undefined, context);
}

/** The wait a retryable answer asks for, capped; undefined when it asks for none. */
function serverWait(
  headers: Headers,
  status: number,
  context: AttemptContext<unknown>,
): ServerWait | undefined {
  const askedMs = serverWaitMs(headers, context.now);
  if (askedMs === undefined || askedMs <= 0) return undefined;
  const cappedMs = Math.min(askedMs, context.maxServerWaitMs);
  return { askedMs, cappedMs, scope: status === 429 ? "credential" : "request" };
}

/** Another attempt after the backoff (or the server's longer wait), unless attempts or time run out. */
function retryOrGiveUp<T>(
  failure: ApiError,
  wait: ServerWait | undefined,
  context: AttemptContext<T>,
): Decision<T> {
  const { retry, number } = context;
  const given = wait ? { wait } : {};
  if (context.aborted) return { action: "throw", error: failure, ...given };
  const leftMs = Math.max(0, retry.deadlineMs - context.elapsedMs);
  if (wait && wait.cappedMs > leftMs) {
    failure.message += `; the platform asked to wait ${describeWait(wait)}, more than the ${seconds(leftMs)} s left`;
    return { action: "throw", error: failure, ...given };
  }
  if (wait && wait.askedMs > wait.cappedMs)
    failure.message += `; the platform asked to wait ${describeWait(wait)}`;
  const backoff = context.jitter * Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (number - 1));
  const delayMs = Math.min(Math.max(wait?.cappedMs ?? 0, backoff), MAX_TIMER_MS);
  if (number >= retry.maxAttempts || delayMs > leftMs) {
    failure.message += ` (gave up after ${number} attempt${number === 1 ? "" : "s"})`;
    return { action: "throw", error: failure, ...given };
  }
  return { action: "retry", error: failure, delayMs, ...given };
}

/** `86400 s, capped at 300 s`, or `20 s` when the wait was not capped. */
export function describeWait({ askedMs, cappedMs }: ServerWait): string {
  return askedMs > cappedMs
    ? `${seconds(askedMs)} s, capped at ${seconds(cappedMs)} s`
    : `${seconds(askedMs)} s`;
}

/** Whole seconds from 10 s up, tenths below. */
function seconds(ms: number): number {
  return ms >= 10_000 ? Math.round(ms / 1000) : Math.round(ms / 100) / 10;
}

function where(context: AttemptContext<unknown>): string {
  return `${context.api} API ${context.method} ${context.route}`;
}

function errorContext(context: AttemptContext<unknown>) {
  return { api: context.api, method: context.method, route: context.route };
}

/** The `code` label of an attempt's metric: the status, or what happened instead of an answer. */
export function codeOf(attempt: Attempt): string {
  if (attempt.kind !== "failure") return String(attempt.status);
  return attempt.timedOut ? "timeout" : "error";
}

export function reasonOf(attempt: Extract<Attempt, { kind: "failure" }>, timeoutMs: number): string {
  return attempt.timedOut ? `no answer within ${timeoutMs} ms` : describeFailure(attempt.error);
}

export function requestIdOf(decision: Decision<unknown>): string | undefined {
  if (decision.action === "return") return decision.response.requestId;
  const error = isApiError(decision.error) ? decision.error : decision.error.cause;
  return isApiError(error) ? error.context.requestId : undefined;
}

function unknownOutcome(
  context: AttemptContext<unknown>,
  reason: string,
  cause: ApiError,
): UnknownOutcomeError {
  return new UnknownOutcomeError(
    `${context.method} ${context.route} may or may not have taken effect (${reason}); it is not repeated automatically, because repeating it could create a duplicate`,
    { cause },
  );
}
