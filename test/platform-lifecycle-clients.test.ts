import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { createBudget } from "../src/platform/budget.js";
import { createPlatformClient } from "../src/platform/client.js";
import { createHttpClient, type HttpClient } from "../src/platform/http.js";
import { keyHashes } from "../src/platform/management.js";
import { bearerAuthorization } from "../src/platform/observability.js";
import { readAllPages } from "../src/platform/pages.js";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createMetrics, type Metrics } from "../src/telemetry/metrics.js";
import { estateFixture, estateIds } from "./helpers/estate.js";
import { clientOf, createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";

/**
 * The platform client's side of the lifecycle endpoints: a paged list's query string on the wire,
 * a delete's answer without a payload, reading every page, and the key hashes driftless sends.
 */

let server: HttpTestServer | undefined;
let sim: Simulator | undefined;
let http: HttpClient | undefined;
afterEach(async () => {
  await http?.close();
  await server?.close();
  await sim?.close();
  http = server = sim = undefined;
});

async function againstServer() {
  server = await createHttpTestServer();
  http = clientOf(server, { api: "observability" });
  return createPlatformClient({ management: http, observability: http });
}

async function againstSimulator(alerts: number, metrics?: Metrics) {
  sim = await startSimulator({
    contract: "full",
    fixture: estateFixture({ dashboards: 2, alerts }),
    rateLimit: { management: false, observability: false },
  });
  http = createHttpClient({
    api: "observability",
    baseUrl: sim.observabilityUrl,
    authorization: () => bearerAuthorization(ids.observabilityToken),
    budget: createBudget({ requests: 1000, windowMs: 1000 }),
    logger: createLogger("silent"),
    ...(metrics ? { metrics } : {}),
  });
  return createPlatformClient({ management: http, observability: http });
}

const page = (data: { id: string }[], meta?: { total: number; limit: number; offset: number }) => ({
  body: { data, ...(meta ? { meta } : {}) },
});

describe("a paged list's query", () => {
  it("goes on the wire after the path, and the route's metrics label stays its template", async () => {
    const metrics = createMetrics(new Registry(), { defaultMetrics: false });
    const platform = await againstSimulator(3, metrics);

    const answer = await platform.call("listAlerts", { limit: "2", offset: "1" }, undefined);
    const bare = await platform.call("listAlerts", {}, undefined);

    expect(sim?.requests.map((r) => [r.path, r.query])).toEqual([
      ["/api/v2/alerts", { limit: "2", offset: "1" }],
      ["/api/v2/alerts", {}],
    ]);
    expect(answer.result.meta).toEqual({ total: 4, limit: 2, offset: 1 });
    expect(answer.result.data).toHaveLength(2);
    expect(bare.result.data).toHaveLength(4);
    const counted = await metrics.apiRequests.get();
    expect(counted.values.map((v) => v.labels.route)).toEqual(["/api/v2/alerts"]);
  });
});

describe("a delete's answer", () => {
  it("is the management envelope without a result, or the observability {}", async () => {
    const platform = await againstServer();
    server?.reply({ body: { status: 200, requestId: "req-delete" } }, { body: {} });

    const key = await platform.call(
      "deleteApiKey",
      { organizationId: ids.organizationId, keyId: ids.ciDeployerKeyId },
      undefined,
    );
    const dashboard = await platform.call("deleteDashboard", { id: ids.dashboardId }, undefined);

    expect(server?.requests.map((r) => [r.method, r.url])).toEqual([
      ["DELETE", `/v1/organizations/${ids.organizationId}/keys/${ids.ciDeployerKeyId}`],
      ["DELETE", `/api/v2/dashboards/${ids.dashboardId}`],
    ]);
    expect(key).toMatchObject({ result: undefined, requestId: "req-delete" });
    expect(dashboard.result).toBeUndefined();
  });
});

describe("reading every page", () => {
  it("reads a list larger than a page, a page at a time, every alert once, and stops at the total", async () => {
    const platform = await againstSimulator(5);

    const alerts = await readAllPages(platform, "listAlerts", { limit: 3 });

    const every = [ids.alertId, ...Array.from({ length: 5 }, (_, n) => estateIds.alert(n))].sort();
    expect(alerts.map((a) => a.id)).toEqual(every);
    expect(sim?.requests.map((r) => r.query)).toEqual([
      { limit: "3", offset: "0" },
      { limit: "3", offset: "3" },
    ]);
  });

  it("stops at a short page when the platform answers no meta", async () => {
    const platform = await againstServer();
    server?.reply(page([{ id: "a" }, { id: "b" }]), page([{ id: "c" }]));

    const items = await readAllPages(platform, "listWebhooks", { limit: 2 });

    expect(items.map((item) => item.id)).toEqual(["a", "b", "c"]);
    expect(server?.requests.map((r) => r.url)).toEqual([
      "/api/v2/webhooks?limit=2&offset=0",
      "/api/v2/webhooks?limit=2&offset=2",
    ]);
  });

  it("stops when a page brings nothing new (a platform that ignores offset)", async () => {
    const platform = await againstServer();
    const same = page([{ id: "a" }, { id: "b" }], { total: 100, limit: 2, offset: 0 });
    server?.reply(same, same, same);

    const items = await readAllPages(platform, "listAlerts", { limit: 2 });

    expect(items.map((item) => item.id)).toEqual(["a", "b"]);
    expect(server?.requests).toHaveLength(2);
  });
});

describe("the key hashes of a key create", () => {
  it("are the base64 of the SHA-256 digests, and the id's last four characters", () => {
    expect(keyHashes("abc", "")).toEqual({
      keyIdHash: "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=",
      keyIdSuffix: "abc",
      keySecretHash: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    });
    expect(keyHashes("KEYID7Q2X", "s").keyIdSuffix).toBe("7Q2X");
  });
});
