import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { VERSION } from "../src/package.js";
import { createBudget } from "../src/platform/budget.js";
import { createPlatformClient } from "../src/platform/client.js";
import { createHttpClient, type HttpClientOptions } from "../src/platform/http.js";
import { basicAuthorization } from "../src/platform/management.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createMetrics } from "../src/telemetry/metrics.js";
import { createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";

const ORG = "9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f";
const SERVICE = "2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7";
const PIPE = "1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b";
const SECRET = "canary-key-secret-4f1e";
const PASSWORD = "canary-kafka-password-9b2c";

let server: HttpTestServer;
let registry: Registry;
let lines: string[];
beforeEach(async () => {
  server = await createHttpTestServer({
    status: 200,
    body: { status: 200, requestId: "req-ok", result: { id: PIPE, name: "orders" } },
  });
  registry = new Registry();
  lines = [];
});
afterEach(() => server.close());

function management(overrides: Partial<HttpClientOptions> = {}) {
  const http = createHttpClient({
    api: "management",
    baseUrl: server.url,
    authorization: () => basicAuthorization("4c8e2a61-7d5b-4e3f-9a1c-0b2d3e4f5a6b", SECRET),
    budget: createBudget({ requests: 100, windowMs: 1000 }),
    metrics: createMetrics(registry, { defaultMetrics: false }),
    logger: createLogger("debug", { write: (line: string) => void lines.push(line) }),
    retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5, deadlineMs: 5000 },
    ...overrides,
  });
  return createPlatformClient({ management: http, observability: http });
}

const updatePipe = (client: ReturnType<typeof management>) =>
  client.call(
    "updateDataPipe",
    { organizationId: ORG, serviceId: SERVICE, dataPipeId: PIPE },
    {
      source: { kafka: { credentials: { username: "ingest", password: PASSWORD } } },
    },
  );

describe("every request is measured by route template", () => {
  it("labels requests and durations with the template, never the ids", async () => {
    await updatePipe(management());

    const text = await registry.metrics();
    const route = "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}";
    expect(text).toContain(
      `driftless_api_requests_total{api="management",method="PATCH",route="${route}",code="200"} 1`,
    );
    expect(text).toContain(
      `driftless_api_request_duration_seconds_count{api="management",method="PATCH",route="${route}"} 1`,
    );
    expect(text).not.toContain(ORG);
    expect(text).not.toContain(PIPE);
  });

  it("counts 429s, and failed connections under code error", async () => {
    server.reply({ status: 429, headers: { "retry-after": "0" } }, { drop: true });

    await updatePipe(
      management({ retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5, deadlineMs: 5000 } }),
    );

    const text = await registry.metrics();
    expect(text).toContain('driftless_api_rate_limited_total{api="management"} 1');
    expect(text).toMatch(/driftless_api_requests_total\{api="management",method="PATCH",.*,code="429"\} 1/);
    expect(text).toMatch(/driftless_api_requests_total\{api="management",method="PATCH",.*,code="error"\} 1/);
    expect(text).toMatch(/driftless_api_requests_total\{api="management",method="PATCH",.*,code="200"\} 1/);
  });
});

describe("logs and headers", () => {
  it("logs route, status, request id and duration at debug, never credentials or bodies", async () => {
    server.reply({ status: 500, body: { status: 500, error: "boom", requestId: "req-500" } });

    await updatePipe(management());

    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const requests = logged.filter((entry) => entry.msg === "api request");
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatchObject({
      status: 500,
      requestId: "req-500",
      route: expect.stringContaining("{dataPipeId}"),
    });
    expect(requests[0]?.durationMs).toBeTypeOf("number");
    expect(requests[1]).toMatchObject({ status: 200, requestId: "req-ok" });
    const all = lines.join("\n");
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain(
      Buffer.from(`4c8e2a61-7d5b-4e3f-9a1c-0b2d3e4f5a6b:${SECRET}`).toString("base64"),
    );
    expect(all).not.toContain("Basic ");
    expect(all).not.toContain(PASSWORD);
  });

  it("sends JSON with the driftless User-Agent and the Basic credential", async () => {
    await updatePipe(management());

    const [request] = server.requests;
    expect(request?.headers["user-agent"]).toBe(`driftless/${VERSION}`);
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(request?.headers.authorization).toBe(
      `Basic ${Buffer.from(`4c8e2a61-7d5b-4e3f-9a1c-0b2d3e4f5a6b:${SECRET}`).toString("base64")}`,
    );
    expect(request?.json).toEqual({
      source: { kafka: { credentials: { username: "ingest", password: PASSWORD } } },
    });
  });

  it("keeps a base URL's path prefix and encodes parameters", async () => {
    const http = createHttpClient({
      api: "observability",
      baseUrl: `${server.url}/proxy/`,
      authorization: () => "Bearer t",
      budget: createBudget({ requests: 10, windowMs: 1000 }),
      logger: createLogger("silent"),
    });

    await http.request({
      method: "GET",
      route: "/api/v2/alerts/{id}",
      params: { id: "a/b c" },
      schema: z.unknown(),
      priority: "poll",
    });
    await http.close();

    expect(server.requests[0]?.url).toBe("/proxy/api/v2/alerts/a%2Fb%20c");
  });
});
