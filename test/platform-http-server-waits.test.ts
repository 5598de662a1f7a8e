import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createBudget } from "../src/platform/budget.js";
import type { HttpClientOptions, HttpRequest } from "../src/platform/http.js";
import { createLogger } from "../src/telemetry/logger.js";
import { clientOf, createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";
import { until } from "./helpers/wait.js";

/**
 * A platform may ask for any wait in Retry-After / X-RateLimit-Reset. driftless honours it up to a
 * maximum (`maxServerWaitMs`) and says when it capped one; through a server, the wait's log line, the
 * credential's hold and the timer armed. The decision itself (the cap, the deadline, the failure that
 * names both) is classify's: test/unit/classify.test.ts.
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
    const { lines, logger } = logged();
    const client = clientOf(server, overrides(logger));
    const first = client.request(put);
    // The 429 has been read and its (capped) hold put on the credential.
    await until(() => lines.some((line) => line.cappedMs === 300));

    const [a, b] = await Promise.all([first, client.request({ ...put, priority: "poll" })]);

    expect([a.status, b.status]).toEqual([200, 200]);
    expect(server.requests).toHaveLength(3);
  });

  it("is never armed as a timer past Node's limit (2^31-1 ms)", async () => {
    server.reply({ status: 429, headers: { "retry-after": String(3_000_000) } });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning.name);
    process.on("warning", onWarning);
    const { lines, logger } = logged();

    const client = clientOf(server, {
      logger,
      maxServerWaitMs: Number.POSITIVE_INFINITY,
      budget: createBudget({ requests: 100, windowMs: 1000, maxServerWaitMs: Number.POSITIVE_INFINITY }),
      retry: { deadlineMs: Number.POSITIVE_INFINITY },
    });
    const controller = new AbortController();
    const pending = client.request({ ...put, signal: controller.signal });
    // Logged right before the wait's timer is armed; Node warns of an overlong timer before any timer runs.
    await until(() => lines.some((line) => line.msg === "retrying api request"));
    controller.abort();
    await rejection(pending);
    process.off("warning", onWarning);

    expect(warnings).not.toContain("TimeoutOverflowWarning");
    expect(server.requests).toHaveLength(1);
  });
});
