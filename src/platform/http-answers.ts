import { STATUS_CODES } from "node:http";
import { z } from "zod";
import { cutDeep, MAX_ANSWER_DEPTH } from "../bounded-values.js";
import { ApiError, errnoOf } from "../errors.js";
import { collapse, redact, redactCutEdge } from "./redact.js";

/**
 * Reading what the platform says: a success body against its schema, the message and request id of an
 * error body of any shape, and how long a 429 asks us to wait. Only success answers are described by the
 * APIs (docs/platform-apis.md#error-answers), so error answers must be read robustly, whatever arrives.
 */

/** Longest message kept from a plain-text (maybe HTML) error body. */
const MAX_MESSAGE = 300;

/**
 * The message and request id of an error answer: management `{status, error, requestId}`,
 * observability `{message}`, other JSON, plain text, or nothing (then the status's reason phrase).
 * The message is shown on one line and cut at 300 characters; `secrets` (the request's) are masked in
 * the raw text first, then again in the message read from it and at the edge of the cut.
 */
export function errorDetails(
  status: number,
  text: string,
  secrets: readonly string[] = [],
): { message: string; requestId?: string } {
  const fallback = STATUS_CODES[status] ?? "no message";
  const masked = redact(text, secrets);
  // JSON may carry a secret in an escape that only parsing turns back into the secret.
  const shown = (message: string) => shorten(redact(message, secrets), secrets);
  const body = parseObject(masked);
  if (!body) return { message: shown(masked) || fallback };
  const nested =
    typeof body.error === "object" && body.error !== null ? (body.error as Record<string, unknown>) : {};
  const message = [body.error, body.message, nested.message, body.detail, body.title].find(
    (value): value is string => typeof value === "string" && value.trim() !== "",
  );
  const requestId = [body.requestId, body.request_id, body.requestID, nested.requestId].find(
    (value): value is string => typeof value === "string" && value !== "",
  );
  return {
    message: message ? shown(message) : shown(masked) || fallback,
    ...(requestId ? { requestId } : {}),
  };
}

/**
 * How long a 429 asks to wait, in ms from `now`: the larger of `Retry-After` (seconds or an HTTP date)
 * and `X-RateLimit-Reset`, or undefined when neither says. `X-RateLimit-Reset` is epoch seconds on some
 * platforms and seconds from now on others; no sane wait is 31 years, so a value from 1e9 (2001 as epoch
 * seconds) up is read as an epoch, and from 1e12 up as epoch milliseconds.
 */
export function serverWaitMs(
  headers: Record<string, string | string[] | undefined>,
  now: number,
): number | undefined {
  const waits: number[] = [];
  const retryAfter = header(headers, "retry-after");
  if (retryAfter !== undefined) {
    const seconds = Number(retryAfter);
    const date = Date.parse(retryAfter);
    if (retryAfter !== "" && Number.isFinite(seconds)) waits.push(seconds * 1000);
    else if (Number.isFinite(date)) waits.push(date - now);
  }
  const reset = Number(header(headers, "x-ratelimit-reset") ?? Number.NaN);
  if (Number.isFinite(reset)) {
    if (reset >= 1e12) waits.push(reset - now);
    else if (reset >= 1e9) waits.push(reset * 1000 - now);
    else waits.push(reset * 1000);
  }
  if (waits.length === 0) return undefined;
  return Math.max(0, ...waits);
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value)?.trim();
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** One line of at most MAX_MESSAGE characters; a secret cut at its end is masked. */
function shorten(text: string, secrets: readonly string[]): string {
  const flat = redact(collapse(text), secrets);
  if (flat.length <= MAX_MESSAGE) return flat;
  return `${redactCutEdge(flat.slice(0, MAX_MESSAGE), secrets)}…`;
}

export const NOT_JSON = Symbol("not JSON");

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

/** The `requestId` of a success body (the management envelope has one), for the log line. */
export function bodyRequestId(json: unknown): string | undefined {
  const id = (json as { requestId?: unknown } | null)?.requestId;
  return typeof id === "string" ? id : undefined;
}

/**
 * A success answer's parsed JSON checked against `schema`, cut below MAX_ANSWER_DEPTH levels first: a
 * value nested deeper is no platform's, and everything that walks an answer (schemas, comparisons, the
 * state, plans) then walks a bounded one. Throws ApiError naming what did not match.
 */
export function parseAnswer<T>(
  schema: z.ZodType<T>,
  json: unknown,
  context: ConstructorParameters<typeof ApiError>[1],
): T {
  const where = `${context.api} API ${context.method} ${context.route}`;
  const id = context.requestId ? ` (request id ${context.requestId})` : "";
  if (json === NOT_JSON) {
    throw new ApiError(`${where} answered ${context.status} with a body that is not JSON${id}`, context);
  }
  const parsed = schema.safeParse(cutDeep(json, MAX_ANSWER_DEPTH));
  if (parsed.success) return parsed.data;
  throw new ApiError(
    `${where} answered ${context.status} with an unexpected body${id}: ${z.prettifyError(parsed.error)}`,
    context,
    { cause: parsed.error },
  );
}

/** A network failure (no answer) in a few words: its code and message. */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : undefined;
  return [errnoOf(error), message].filter(Boolean).join(": ") || String(error);
}

/** The first value of a header that may repeat. */
export function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
