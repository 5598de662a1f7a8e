import { createServer } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { isApiError, isUnknownOutcomeError } from "../src/errors.js";
import { createBudget } from "../src/platform/budget.js";
import type { HttpClientOptions, HttpRequest } from "../src/platform/http.js";
import { createLogger } from "../src/telemetry/logger.js";
import { clientOf, createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";
import { until } from "./helpers/wait.js";

let server: HttpTestServer;
beforeEach(async () => {
  server = await createHttpTestServer({ status: 200, body: { data: { id: "d1" } } });
});
afterEach(() => server.close());

function client(overrides: Partial<HttpClientOptions> = {}) {
  return clientOf(server, {
    retry: { maxAttempts: 4, baseDelayMs: 5, maxDelayMs: 20, deadlineMs: 10_000 },
    ...overrides,
  });
}

const schema = z.looseObject({ data: z.looseObject({ id: z.string() }) });
const call = (method: "PATCH" | "PUT" | "POST" | "GET"): HttpRequest<z.infer<typeof schema>> => ({
  method,
  route: "/api/v2/dashboards/{id}",
  params: { id: "d1" },
  body: method === "GET" ? undefined : { name: "x" },
  schema,
  priority: "change",
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

const gap = (i: number) => (server.requests[i]?.at ?? 0) - (server.requests[i - 1]?.at ?? 0);

describe("429 answers are retried after the wait the platform asks for", () => {
  it("waits at least Retry-After seconds", async () => {
    server.reply({ status: 429, headers: { "retry-after": "1" }, body: { message: "slow down" } });

    const answer = await client().request(call("PUT"));

    expect(answer.data.data.id).toBe("d1");
    expect(server.requests).toHaveLength(2);
    expect(gap(1)).toBeGreaterThanOrEqual(990);
  });
});

describe("server errors and conflicts", () => {
  it("retries 5xx until it succeeds", async () => {
    server.reply(
      { status: 503, body: "unavailable" },
      { status: 502 },
      { status: 500, body: { message: "oops" } },
    );

    const answer = await client().request(call("PATCH"));

    expect(answer.data.data.id).toBe("d1");
    expect(server.requests).toHaveLength(4);
  });

  it("gives up after maxAttempts with the last error", async () => {
    server.fallback = { status: 500, body: { status: 500, error: "boom", requestId: "r-500" } };

    const error = await rejection(client().request(call("PUT")));

    expect(isApiError(error) && error.context).toMatchObject({
      status: 500,
      requestId: "r-500",
      retryable: true,
    });
    expect((error as Error).message).toContain("gave up after 4 attempts");
    expect(server.requests).toHaveLength(4);
  });

  it("sends the current credential on each attempt", async () => {
    let n = 0;
    server.reply({ status: 503 });

    await client({ authorization: () => `Bearer token-${++n}` }).request(call("PUT"));

    expect(server.requests.map((r) => r.headers.authorization)).toEqual(["Bearer token-1", "Bearer token-2"]);
  });
});

describe("time-outs and dropped connections", () => {
  it("times out a hanging request and retries it", async () => {
    server.reply({ hang: true });

    const answer = await client({ timeoutMs: 300 }).request(call("PUT"));

    expect(answer.status).toBe(200);
    expect(server.requests).toHaveLength(2);
  });

  it("gives up on a server that always hangs, saying so", async () => {
    server.fallback = { hang: true };

    const error = await rejection(client({ timeoutMs: 200, retry: { maxAttempts: 2 } }).request(call("GET")));

    expect(isApiError(error) && error.context.retryable).toBe(true);
    expect((error as Error).message).toContain("no answer within 200 ms");
    expect(server.requests).toHaveLength(2);
  });

  it.each(["PATCH", "PUT"] as const)("retries a %s whose connection was dropped", async (method) => {
    server.reply({ drop: true });

    const answer = await client().request(call(method));

    expect(answer.data.data.id).toBe("d1");
    expect(server.requests.map((r) => r.method)).toEqual([method, method]);
  });

  it("never repeats a POST whose connection was dropped", async () => {
    server.reply({ drop: true });

    const error = await rejection(client().request(call("POST")));

    expect(isUnknownOutcomeError(error)).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it("never repeats a POST that timed out", async () => {
    server.reply({ hang: true });

    const error = await rejection(client({ timeoutMs: 200 }).request(call("POST")));

    expect(isUnknownOutcomeError(error)).toBe(true);
    expect((error as Error).message).toContain("no answer within 200 ms");
    expect(server.requests).toHaveLength(1);
  });

  it("retries a POST whose connection was refused: nothing was sent", async () => {
    const port = await closedPort();
    const lines: string[] = [];
    const logger = createLogger("info", { write: (line: string) => void lines.push(line) });

    const error = await rejection(
      client({ baseUrl: `http://127.0.0.1:${port}`, logger, retry: { maxAttempts: 3 } }).request(
        call("POST"),
      ),
    );

    expect(isApiError(error)).toBe(true);
    expect(isUnknownOutcomeError(error)).toBe(false);
    expect((error as Error).message).toContain("ECONNREFUSED");
    expect(lines.filter((line) => line.includes("retrying api request"))).toHaveLength(2);
  });

  it("lets a POST already sent finish when the caller aborts, and returns its answer", async () => {
    const controller = new AbortController();
    server.reply(() => {
      // The caller gives up while its POST is at the server, before the answer leaves.
      controller.abort();
      return { status: 200, body: { data: { id: "created" } } };
    });

    const answer = await client().request({ ...call("POST"), signal: controller.signal });

    expect(answer.data.data.id).toBe("created");
    expect(server.requests).toHaveLength(1);
  });

  it("stops retrying when the caller aborts", async () => {
    server.fallback = { status: 503 };
    const controller = new AbortController();
    const lines: string[] = [];
    const logger = createLogger("info", { write: (line: string) => void lines.push(line) });
    const pending = client({
      logger,
      retry: { baseDelayMs: 10_000, maxDelayMs: 10_000 },
      random: () => 1,
    }).request({ ...call("PUT"), signal: controller.signal });
    // The first 503 is in and the client waits out its 10 s backoff.
    await until(() => lines.some((line) => line.includes("retrying api request")));
    controller.abort();

    const error = await rejection(pending);

    expect(isApiError(error)).toBe(true);
    expect(server.requests).toHaveLength(1);
  });
});

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe("the request's guard is asked right before every attempt", () => {
  it("asks before the first attempt and before each retry, and sends nothing once it throws", async () => {
    server.reply({ status: 503 });
    const budget = createBudget({ requests: 2, windowMs: 60_000 });
    let asked = 0;
    const guard = () => {
      asked++;
      if (asked === 2) throw new Error("this process may no longer write (test)");
    };

    const error = await rejection(client({ budget }).request({ ...call("PUT"), guard }));
    const next = await client({ budget }).request(call("GET"));

    expect((error as Error).message).toBe("this process may no longer write (test)");
    expect(asked).toBe(2);
    expect(server.requests.map((r) => r.method)).toEqual(["PUT", "GET"]);
    // The refused attempt's grant was not counted: the budget of two requests a minute still had one.
    expect(next.status).toBe(200);
  });
});

describe("the deadline runs from the first attempt's send", () => {
  it("leaves a request that queued for the budget its whole deadline for retries", async () => {
    server.reply({ status: 200, body: { data: { id: "d1" } } }, { status: 503 });
    const budget = createBudget({ requests: 1, windowMs: 400 });
    const retry = { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 5, deadlineMs: 300 };

    const first = client({ budget, retry }).request(call("PUT"));
    // Queued for about 400 ms behind the first, longer than its deadline: none of it counts.
    const second = client({ budget, retry }).request(call("PATCH"));

    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(server.requests.map((r) => r.method)).toEqual(["PUT", "PATCH", "PATCH"]);
  });
});
