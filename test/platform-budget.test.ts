import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createBudget } from "../src/platform/budget.js";
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

/**
 * The rate budget as the HTTP client uses it, over a real server: what reaches the server and what
 * the client measures. The budget's own rules (windows, holds, priorities, its defaults) are unit
 * tests on a fake clock: test/unit/budget.test.ts.
 */
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
    // The budget and the server read the same clock (performance.now, in this process), and a window
    // starts at the answer, which comes after the server received the request.
    expect(
      busiestWindow(
        server.requests.map((r) => r.at),
        400,
      ),
    ).toBeLessThanOrEqual(3);
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
