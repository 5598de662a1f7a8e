import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { isApiError } from "../src/errors.js";
import { createBudget } from "../src/platform/budget.js";
import type { HttpClientOptions, HttpRequest } from "../src/platform/http.js";
import { createLogger } from "../src/telemetry/logger.js";
import { clientOf, createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";

/**
 * A platform may ask for any wait in Retry-After / X-RateLimit-Reset. driftless honours it up to a
 * maximum (`maxServerWaitMs`), says when it capped one, and fails at once, saying why, when even the
 * capped wait does not fit in the request's deadline.
 */

let server: HttpTestServer;
beforeEach(async () => {
  server = await createHttpTestServer({ status: 200, body: { id: "d1" } });
});
afterEach(() => server.close());

const put: HttpRequest<unknown> = {
  method: "PUT",
  route: "/api/v2/dashboards/{id}",
  params: { id: "d1" },
  body: { name: "x" },
  schema: z.unknown(),
  priority: "change",
};

function logged() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger("info", {
    write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  return { lines, logger };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error as Error,
  );
}

describe("a server wait longer than the request's deadline", () => {
  it("fails at once with the asked wait and the time left, instead of sleeping a day", async () => {
    server.fallback = { status: 429, headers: { "retry-after": "86400" }, body: { message: "slow down" } };
    const client = clientOf(server, { retry: { maxAttempts: 4, deadlineMs: 60_000 } });

    const error = await rejection(client.request(put));

    expect(isApiError(error) && error.context.status).toBe(429);
    expect(error.message).toContain("the platform asked to wait 86400 s");
    expect(error.message).toContain("more than the 60 s left");
    expect(server.requests).toHaveLength(1);
  });

  it("names the cap when the asked wait was capped and the capped one still does not fit", async () => {
    server.fallback = { status: 503, headers: { "retry-after": "86400" } };
    const client = clientOf(server, { maxServerWaitMs: 30_000, retry: { deadlineMs: 10_000 } });

    const error = await rejection(client.request(put));

    expect(error.message).toContain(
      "the platform asked to wait 86400 s, capped at 30 s, more than the 10 s left",
    );
    expect(server.requests).toHaveLength(1);
  });
});

describe("a server wait longer than the maximum", () => {
  const overrides = (logger: HttpClientOptions["logger"]): Partial<HttpClientOptions> => ({
    logger,
    maxServerWaitMs: 300,
    budget: createBudget({ requests: 100, windowMs: 1000, maxServerWaitMs: 300 }),
    retry: { maxAttempts: 3, deadlineMs: 10_000 },
  });

  it("is cut to the maximum, logged with the asked and the capped figures, and then retried", async () => {
    server.reply({ status: 429, headers: { "retry-after": "86400" } });
    const { lines, logger } = logged();

    const answer = await clientOf(server, overrides(logger)).request(put);

    expect(answer.status).toBe(200);
    expect(server.requests).toHaveLength(2);
    expect(lines).toContainEqual(expect.objectContaining({ askedMs: 86_400_000, cappedMs: 300 }));
  });

  it("holds the whole credential's budget no longer than the maximum", async () => {
    server.reply({ status: 429, headers: { "x-ratelimit-reset": "86400" } });
    const { logger } = logged();
    const client = clientOf(server, overrides(logger));
    const first = client.request(put);
    await new Promise((resolve) => setTimeout(resolve, 50));

    const [a, b] = await Promise.all([first, client.request({ ...put, priority: "poll" })]);

    expect([a.status, b.status]).toEqual([200, 200]);
    expect(server.requests).toHaveLength(3);
  });

  it("is never armed as a timer past Node's limit (2^31-1 ms)", async () => {
    server.reply({ status: 429, headers: { "retry-after": String(3_000_000) } });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning.name);
    process.on("warning", onWarning);
    const { logger } = logged();

    const client = clientOf(server, {
      logger,
      maxServerWaitMs: Number.POSITIVE_INFINITY,
      budget: createBudget({ requests: 100, windowMs: 1000, maxServerWaitMs: Number.POSITIVE_INFINITY }),
      retry: { deadlineMs: Number.POSITIVE_INFINITY },
    });
    const controller = new AbortController();
    const pending = client.request({ ...put, signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 200));
    controller.abort();
    await rejection(pending);
    process.off("warning", onWarning);

    expect(warnings).not.toContain("TimeoutOverflowWarning");
    expect(server.requests).toHaveLength(1);
  });
});
