import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createBudget,
  MANAGEMENT_BUDGET,
  OBSERVABILITY_BUDGET,
  type Priority,
} from "../src/platform/budget.js";
import { createHttpClient } from "../src/platform/http.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createMetrics } from "../src/telemetry/metrics.js";
import { createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";

let server: HttpTestServer | undefined;
afterEach(() => server?.close());

/** The largest number of times in `times` that fall within any window of `windowMs`. */
function busiestWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0; i < sorted.length; i++) {
    const start = sorted[i] as number;
    most = Math.max(most, sorted.filter((t) => t >= start && t < start + windowMs).length);
  }
  return most;
}

describe("the rate budget", () => {
  it("never lets more than N requests reach the server in any window", async () => {
    server = await createHttpTestServer({ status: 200, body: { ok: true } });
    const http = createHttpClient({
      api: "management",
      baseUrl: server.url,
      authorization: () => "Basic x",
      budget: createBudget({ requests: 3, windowMs: 400 }),
      logger: createLogger("silent"),
    });

    await Promise.all(
      Array.from({ length: 10 }, () =>
        http.request({ method: "GET", route: "/ping", schema: z.unknown(), priority: "change" }),
      ),
    );
    await http.close();

    expect(server.requests).toHaveLength(10);
    // 3 ms of slack: the budget's clock is Date.now (whole ms), the server's performance.now.
    expect(
      busiestWindow(
        server.requests.map((r) => r.at),
        400 - 3,
      ),
    ).toBeLessThanOrEqual(3);
  });

  it("causes no 429 from a platform allowing 10 requests per 10 s, with the default management budget", async () => {
    const arrivals: number[] = [];
    server = await createHttpTestServer(() => {
      const now = Date.now();
      arrivals.push(now);
      const recent = arrivals.filter((t) => t > now - 10_000).length;
      return recent > 10 ? { status: 429, headers: { "retry-after": "1" } } : { status: 200, body: {} };
    });
    const http = createHttpClient({
      api: "management",
      baseUrl: server.url,
      authorization: () => "Basic x",
      budget: createBudget(MANAGEMENT_BUDGET),
      logger: createLogger("silent"),
    });

    const answers = await Promise.all(
      Array.from({ length: 2 * MANAGEMENT_BUDGET.requests }, () =>
        http.request({ method: "PATCH", route: "/x", body: {}, schema: z.unknown(), priority: "change" }),
      ),
    );
    await http.close();

    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
    expect(server.requests).toHaveLength(2 * MANAGEMENT_BUDGET.requests);
  });

  it("serves waiting requests by priority, first come first served within one", async () => {
    const budget = createBudget({ requests: 1, windowMs: 50 });
    const order: string[] = [];
    const first = await budget.acquire("poll");

    const waits = (
      [
        ["poll", "poll-1"],
        ["retry", "retry-1"],
        ["change", "change-1"],
        ["poll", "poll-2"],
        ["change", "change-2"],
        ["retry", "retry-2"],
      ] as [Priority, string][]
    ).map(([priority, name]) =>
      budget.acquire(priority).then((release) => {
        order.push(name);
        release();
      }),
    );
    first();
    await Promise.all(waits);

    expect(order).toEqual(["change-1", "change-2", "retry-1", "retry-2", "poll-1", "poll-2"]);
  });

  it("drops a waiter whose signal aborts, and serves the next", async () => {
    const budget = createBudget({ requests: 1, windowMs: 50 });
    const first = await budget.acquire("change");
    const controller = new AbortController();

    const aborted = budget.acquire("change", { signal: controller.signal });
    const next = budget.acquire("poll");
    controller.abort(new Error("shutting down"));
    first();

    await expect(aborted).rejects.toThrow("shutting down");
    await expect(next).resolves.toBeTypeOf("function");
  });

  it("counts a request's window from its answer, not from its grant", async () => {
    const budget = createBudget({ requests: 1, windowMs: 100 });
    const release = await budget.acquire("change");
    const answeredAt = Date.now() + 200;
    setTimeout(release, 200);

    await budget.acquire("change");

    expect(Date.now()).toBeGreaterThanOrEqual(answeredAt + 100 - 2);
  });

  it("holds every grant until the time a 429 asked for", async () => {
    const budget = createBudget({ requests: 100, windowMs: 1000 });
    const until = Date.now() + 300;

    budget.hold(300, "a test hold");
    await budget.acquire("change");

    expect(Date.now()).toBeGreaterThanOrEqual(until - 2);
  });

  it("keeps its defaults below the platform's limits", () => {
    expect(MANAGEMENT_BUDGET.requests / MANAGEMENT_BUDGET.windowMs).toBeLessThan(10 / 10_000);
    expect(OBSERVABILITY_BUDGET.requests / OBSERVABILITY_BUDGET.windowMs).toBeLessThan(100 / 60_000);
    expect(MANAGEMENT_BUDGET.windowMs).toBeGreaterThanOrEqual(10_000);
    expect(OBSERVABILITY_BUDGET.windowMs).toBeGreaterThanOrEqual(60_000);
  });

  it("counts a request that waited in the budget-wait histogram by priority", async () => {
    server = await createHttpTestServer({ status: 200, body: {} });
    const registry = new Registry();
    const http = createHttpClient({
      api: "observability",
      baseUrl: server.url,
      authorization: () => "Bearer x",
      budget: createBudget({ requests: 1, windowMs: 100 }),
      metrics: createMetrics(registry, { defaultMetrics: false }),
      logger: createLogger("silent"),
    });

    await http.request({ method: "GET", route: "/a", schema: z.unknown(), priority: "poll" });
    await http.request({ method: "GET", route: "/a", schema: z.unknown(), priority: "poll" });
    await http.close();

    const text = await registry.metrics();
    expect(text).toContain('driftless_api_budget_wait_seconds_count{api="observability",priority="poll"} 2');
  });
});
