import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type ApiError, isApiError, isUnknownOutcomeError } from "../../src/errors.js";
import { serverWaitMs } from "../../src/platform/http-answers.js";
import {
  type Attempt,
  type AttemptContext,
  classify,
  DEFAULT_RETRY,
  type Decision,
} from "../../src/platform/http-classify.js";

/**
 * classify: what the HTTP client makes of one attempt. Pure, so each rule is checked on plain values:
 * no server, no clock, no randomness.
 */

const NOW = Date.parse("2026-01-01T00:00:00Z");
const schema = z.object({ id: z.string().min(1) });

function context(overrides: Partial<AttemptContext<{ id: string }>> = {}): AttemptContext<{ id: string }> {
  return {
    api: "management",
    method: "PATCH",
    route: "/v1/things/{id}",
    schema,
    idempotent: true,
    redact: [],
    number: 1,
    elapsedMs: 0,
    now: NOW,
    jitter: 0.5,
    aborted: false,
    retry: { ...DEFAULT_RETRY, maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 8_000, deadlineMs: 60_000 },
    timeoutMs: 30_000,
    maxServerWaitMs: 300_000,
    ...overrides,
  };
}
const post = { method: "POST" as const, idempotent: false };

const answer = (status: number, body: unknown = {}, headers: Record<string, string> = {}): Attempt => ({
  kind: "answer",
  status,
  headers,
  text: typeof body === "string" ? body : JSON.stringify(body),
});
const failure = (overrides: Partial<Extract<Attempt, { kind: "failure" }>> = {}): Attempt => ({
  kind: "failure",
  error: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }),
  timedOut: false,
  sent: true,
  ...overrides,
});

function thrown<T>(decision: Decision<T>): Error {
  if (decision.action !== "throw") throw new Error(`expected throw, got ${decision.action}`);
  return decision.error;
}
function retried<T>(decision: Decision<T>) {
  if (decision.action !== "retry") throw new Error(`expected retry, got ${decision.action}`);
  return decision;
}

describe("success answers", () => {
  it("rule: a 2xx whose body matches the schema is returned, with the header's request id", () => {
    const decision = classify(answer(200, { id: "t1" }, { "x-request-id": "r-1" }), context());

    expect(decision).toEqual({
      action: "return",
      response: { data: { id: "t1" }, status: 200, requestId: "r-1" },
    });
  });

  it("rule: without the header, the request id is the body's `requestId`", () => {
    const decision = classify(answer(200, { id: "t1", requestId: "r-body" }), context());

    expect(decision.action === "return" && decision.response.requestId).toBe("r-body");
  });

  it("rule: a 2xx body that does not match the schema is a non-retryable ApiError naming the field", () => {
    const nested = z.object({ result: z.object({ id: z.string() }) });

    const error = thrown(
      classify(answer(200, { result: { name: "no id" } }), { ...context(), schema: nested }),
    );

    expect(isApiError(error) && error.context).toMatchObject({ status: 200, retryable: false });
    expect(error.message).toContain("unexpected body");
    expect(error.message).toContain("result.id");
  });

  it("rule: a 2xx answer that is not JSON is a non-retryable ApiError saying so", () => {
    const error = thrown(classify(answer(200, "<html>maintenance</html>"), context()));

    expect(isApiError(error) && error.context.retryable).toBe(false);
    expect(error.message).toContain("not JSON");
  });

  it("rule: a POST whose 2xx answer cannot be read (not JSON, or not the schema) has an unknown outcome", () => {
    expect(isUnknownOutcomeError(thrown(classify(answer(201, "<html>"), context(post))))).toBe(true);
    expect(isUnknownOutcomeError(thrown(classify(answer(201, { id: "" }), context(post))))).toBe(true);
  });

  it("rule: an answer too large to read is an ApiError naming the limit; for a POST an unknown outcome", () => {
    const oversized: Attempt = { kind: "oversized", status: 200, headers: {}, limitBytes: 1_000 };

    const get = thrown(classify(oversized, context()));
    const create = thrown(classify(oversized, context(post)));

    expect(get.message).toContain("answer larger than 1000 bytes");
    expect(isUnknownOutcomeError(create)).toBe(true);
  });
});

describe("error answers", () => {
  it.each([400, 401, 403, 404, 422])("rule: %i is thrown at once, not retryable", (status) => {
    const error = thrown(classify(answer(status, { message: "no" }), context()));

    expect(isApiError(error) && error.context).toMatchObject({ status, retryable: false });
  });

  it("rule: 401 and 403 say which setting to check", () => {
    expect(thrown(classify(answer(401), context())).message).toContain("check DRIFTLESS_MANAGEMENT_KEY_ID");
    expect(thrown(classify(answer(403), context())).message).toContain(
      "check the roles and IP access list of the management key",
    );
    expect(thrown(classify(answer(403), context({ api: "observability" }))).message).toContain(
      "check the scope of DRIFTLESS_OBSERVABILITY_TOKEN",
    );
  });

  it.each([408, 409, 425, 429, 500, 502, 503])("rule: %i of an idempotent request is retried", (status) => {
    expect(classify(answer(status), context()).action).toBe("retry");
  });

  it.each([429, 408, 425])("rule: %i of a POST is retried: the platform did not process it", (status) => {
    expect(classify(answer(status), context(post)).action).toBe("retry");
  });

  it("rule: a POST answered 5xx has an unknown outcome and is never repeated", () => {
    expect(isUnknownOutcomeError(thrown(classify(answer(502), context(post))))).toBe(true);
  });

  it("rule: a POST answered 409 is an ApiError, not repeated", () => {
    const error = thrown(classify(answer(409), context(post)));

    expect(isApiError(error) && error.context.status).toBe(409);
  });

  it("rule: the message carries the platform's message and request id", () => {
    const error = thrown(
      classify(answer(404, { status: 404, error: "Key not found", requestId: "r-4" }), context()),
    );

    expect(error.message).toBe(
      "management API PATCH /v1/things/{id} answered 404: Key not found (request id r-4)",
    );
  });

  it("rule: the request's secrets are masked in the message", () => {
    const error = thrown(
      classify(answer(400, { message: "bad password p4ss  w0rd" }), context({ redact: ["p4ss  w0rd"] })),
    );

    expect(error.message).toContain("bad password (secret)");
  });
});

describe("failures without an answer", () => {
  it("rule: a dropped or timed-out idempotent request is retried", () => {
    expect(classify(failure(), context()).action).toBe("retry");
    expect(classify(failure({ timedOut: true }), context()).action).toBe("retry");
  });

  it("rule: a POST that may have been sent has an unknown outcome", () => {
    const error = thrown(classify(failure({ timedOut: true }), context(post)));

    expect(isUnknownOutcomeError(error)).toBe(true);
    expect(error.message).toContain("no answer within 30000 ms");
  });

  it("rule: a POST that was never sent (connection refused) is retried", () => {
    expect(classify(failure({ sent: false }), context(post)).action).toBe("retry");
  });
});

describe("when to try again", () => {
  it("rule: the backoff is jitter · base · 2^(n-1), capped at maxDelayMs", () => {
    expect(retried(classify(answer(503), context({ number: 1, jitter: 0.5 }))).delayMs).toBe(500);
    expect(retried(classify(answer(503), context({ number: 2, jitter: 1 }))).delayMs).toBe(2_000);
    const capped = context({ number: 2, jitter: 1, retry: { ...context().retry, maxAttempts: 10 } });
    expect(retried(classify(answer(503), { ...capped, number: 6 })).delayMs).toBe(8_000);
  });

  it("rule: a server's wait longer than the backoff is waited instead", () => {
    const decision = retried(classify(answer(503, {}, { "retry-after": "5" }), context()));

    expect(decision.delayMs).toBe(5_000);
    expect(decision.wait).toEqual({ askedMs: 5_000, cappedMs: 5_000, scope: "request" });
  });

  it("rule: a 429's wait holds the whole credential", () => {
    expect(retried(classify(answer(429, {}, { "retry-after": "2" }), context())).wait?.scope).toBe(
      "credential",
    );
  });

  it("rule: a server's wait is capped at maxServerWaitMs, and the error says so", () => {
    const decision = retried(
      classify(answer(429, {}, { "retry-after": "86400" }), context({ maxServerWaitMs: 10_000 })),
    );

    expect(decision.delayMs).toBe(10_000);
    expect(decision.wait).toMatchObject({ askedMs: 86_400_000, cappedMs: 10_000 });
    expect(decision.error.message).toContain("the platform asked to wait 86400 s, capped at 10 s");
  });

  it("rule: a (capped) wait longer than the time left fails at once, saying how long each is", () => {
    const error = thrown(classify(answer(429, {}, { "retry-after": "90" }), context({ elapsedMs: 20_000 })));
    const capped = thrown(
      classify(
        answer(503, {}, { "retry-after": "86400" }),
        context({ maxServerWaitMs: 30_000, retry: { ...context().retry, deadlineMs: 10_000 } }),
      ),
    );

    expect(error.message).toContain("the platform asked to wait 90 s, more than the 40 s left");
    expect(capped.message).toContain(
      "the platform asked to wait 86400 s, capped at 30 s, more than the 10 s left",
    );
  });

  it("rule: after maxAttempts the last error is thrown, saying how many attempts were made", () => {
    const error = thrown(classify(answer(503), context({ number: 3 })));

    expect((error as ApiError).message).toMatch(/answered 503: .*\(gave up after 3 attempts\)$/);
  });

  it("rule: a backoff that would end past the deadline gives up", () => {
    const error = thrown(classify(answer(503), context({ elapsedMs: 59_800, jitter: 1 })));

    expect(error.message).toContain("gave up after 1 attempt");
  });

  it("rule: an aborted caller gets the error at once, without another attempt", () => {
    const error = thrown(classify(answer(503), context({ aborted: true })));

    expect(isApiError(error) && error.context.retryable).toBe(true);
    expect(error.message).not.toContain("gave up");
  });

  it("rule: no delay is longer than a Node timer can hold (2^31-1 ms)", () => {
    const unbounded = context({
      maxServerWaitMs: Number.POSITIVE_INFINITY,
      retry: { ...context().retry, deadlineMs: Number.POSITIVE_INFINITY },
    });

    const decision = retried(classify(answer(429, {}, { "retry-after": "3000000" }), unbounded));

    expect(decision.delayMs).toBe(2 ** 31 - 1);
  });
});

describe("the wait a server asks for", () => {
  it("rule: Retry-After is seconds, or an HTTP date read on the wall clock", () => {
    expect(serverWaitMs({ "retry-after": "5" }, NOW)).toBe(5_000);
    expect(serverWaitMs({ "retry-after": new Date(NOW + 3_000).toUTCString() }, NOW)).toBe(3_000);
  });

  it("rule: X-RateLimit-Reset is seconds from now when small, else epoch seconds or milliseconds", () => {
    expect(serverWaitMs({ "x-ratelimit-reset": "7" }, NOW)).toBe(7000);
    expect(serverWaitMs({ "x-ratelimit-reset": String(NOW / 1000 + 3) }, NOW)).toBe(3000);
    expect(serverWaitMs({ "x-ratelimit-reset": String(NOW + 2500) }, NOW)).toBe(2500);
  });

  it("rule: the longer of both headers is taken, never a negative wait, and nothing unreadable", () => {
    expect(serverWaitMs({ "retry-after": "2", "x-ratelimit-reset": "5" }, NOW)).toBe(5000);
    expect(serverWaitMs({ "x-ratelimit-reset": String(NOW / 1000 - 60) }, NOW)).toBe(0);
    expect(serverWaitMs({ "retry-after": "soon" }, NOW)).toBeUndefined();
    expect(serverWaitMs({}, NOW)).toBeUndefined();
  });
});
