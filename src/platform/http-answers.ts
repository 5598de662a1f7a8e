import { STATUS_CODES } from "node:http";

/**
 * Reading what the platform says beyond a status code: the message and request id of an error body of
 * any shape, and how long a 429 asks us to wait. The APIs document success answers only (docs/platform-apis.md#error-answers), so both must be
 * robust to whatever arrives.
 */

/** Longest message kept from a plain-text (maybe HTML) error body. */
const MAX_MESSAGE = 300;

/**
 * The message and request id of an error answer: management `{status, error, requestId}`,
 * observability `{message}`, other JSON, plain text, or nothing (then the status's reason phrase).
 */
export function errorDetails(status: number, text: string): { message: string; requestId?: string } {
  const fallback = STATUS_CODES[status] ?? "no message";
  const body = parseObject(text);
  if (!body) return { message: shorten(text) || fallback };
  const nested =
    typeof body.error === "object" && body.error !== null ? (body.error as Record<string, unknown>) : {};
  const message = [body.error, body.message, nested.message, body.detail, body.title].find(
    (value): value is string => typeof value === "string" && value.trim() !== "",
  );
  const requestId = [body.requestId, body.request_id, body.requestID, nested.requestId].find(
    (value): value is string => typeof value === "string" && value !== "",
  );
  return {
    message: message ? shorten(message) : shorten(text) || fallback,
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

function shorten(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > MAX_MESSAGE ? `${flat.slice(0, MAX_MESSAGE)}…` : flat;
}
