import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createBudget } from "../src/platform/budget.js";
import { createLogger } from "../src/telemetry/logger.js";
import { clientOf, createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";

/**
 * A request that waits for the rate budget says so before the silence, and its answer tells the wait
 * from the time on the wire: a 10 s wait must not read as a slow API.
 */

let server: HttpTestServer;
beforeEach(async () => {
  server = await createHttpTestServer({ status: 200, body: { ok: true } });
});
afterEach(() => server.close());

function world(windowMs: number) {
  let now = 0;
  const lines: Record<string, unknown>[] = [];
  const monotonic = () => now;
  const budget = createBudget({ requests: 1, windowMs, monotonic });
  const http = clientOf(server, {
    budget,
    monotonic,
    logger: createLogger("debug", { write: (line: string) => void lines.push(JSON.parse(line)) }),
  });
  const get = () => http.request({ method: "GET", route: "/v1/ping", schema: z.unknown(), priority: "poll" });
  return {
    http,
    budget,
    lines,
    get,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe("a wait for the rate budget", () => {
  it("is logged at info before it starts when a person would notice it: which API, how long, why", async () => {
    const w = world(10_000);
    await w.get();

    const second = w.get();
    await Promise.resolve();

    const waiting = w.lines.filter((line) => line.msg === "waiting for the rate budget");
    expect(waiting).toEqual([
      expect.objectContaining({
        level: 30,
        api: "management",
        route: "/v1/ping",
        waitMs: 10_000,
        why: "1 of 1 requests per 10 s spent",
      }),
    ]);
    w.advance(10_000);
    w.budget.hold(0, "nudge the budget's clock");
    await second;
    await w.http.close();
  });

  it("is logged at debug only when it is too short to notice", async () => {
    const w = world(200);
    await w.get();

    const second = w.get();
    await Promise.resolve();

    const waiting = w.lines.filter((line) => line.msg === "waiting for the rate budget");
    expect(waiting).toEqual([expect.objectContaining({ level: 20, waitMs: 200 })]);
    w.advance(200);
    w.budget.hold(0, "nudge the budget's clock");
    await second;
    await w.http.close();
  });

  it("is reported apart from the request's own time", async () => {
    const w = world(10_000);
    await w.get();
    const second = w.get();
    await Promise.resolve();

    w.advance(10_000);
    w.budget.hold(0, "nudge the budget's clock");
    const answer = await second;

    expect(answer.timing).toEqual({ budgetWaitMs: 10_000, requestMs: 0 });
    await w.http.close();
  });
});
