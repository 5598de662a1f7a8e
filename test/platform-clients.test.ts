import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isApiError, isUnknownOutcomeError } from "../src/errors.js";
import { createBudget } from "../src/platform/budget.js";
import { createPlatformClient } from "../src/platform/client.js";
import { createHttpClient, type HttpClient } from "../src/platform/http.js";
import { basicAuthorization } from "../src/platform/management.js";
import { bearerAuthorization } from "../src/platform/observability.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";

const ORG = "9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f";
const SERVICE = "2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7";
const KEY = "6d1f3b85-2a4c-4e7d-b9f0-1c2d3e4f5a6c";
const PIPE = "2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d";
const DASHBOARD = "65f1a2b3c4d5e6f708192a3b";
const ALERT = "65f1a2b3c4d5e6f708192a51";

let server: HttpTestServer;
let http: HttpClient;
beforeEach(async () => {
  server = await createHttpTestServer();
});
afterEach(async () => {
  await http?.close();
  await server.close();
});

const envelope = (result: unknown, requestId = "7d0c3f52-1111-4aaa-8bbb-123456789abc") => ({
  status: 200,
  requestId,
  result,
});

function managementClient() {
  http = createHttpClient({
    api: "management",
    baseUrl: server.url,
    authorization: () => basicAuthorization("key-id", "key-secret"),
    budget: createBudget({ requests: 100, windowMs: 1000 }),
    logger: createLogger("silent"),
    retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5, deadlineMs: 5000 },
  });
  return createPlatformClient({ management: http, observability: http });
}

function observabilityClient() {
  http = createHttpClient({
    api: "observability",
    baseUrl: server.url,
    authorization: () => bearerAuthorization("obs-token"),
    budget: createBudget({ requests: 100, windowMs: 1000 }),
    logger: createLogger("silent"),
    retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5, deadlineMs: 5000 },
  });
  return createPlatformClient({ management: http, observability: http });
}

describe("the management client", () => {
  it("PATCHes an organization and returns the result and request id of the envelope", async () => {
    server.reply({
      body: envelope({ id: ORG, name: "Acme Analytics", privateEndpoints: [], byocConfig: [] }, "req-org"),
    });

    const answer = await managementClient().call(
      "updateOrganization",
      { organizationId: ORG },
      {
        privateEndpoints: { add: [{ id: "vpce-1", description: "office" }] },
      },
    );

    expect(server.requests[0]).toMatchObject({ method: "PATCH", url: `/v1/organizations/${ORG}` });
    expect(server.requests[0]?.json).toEqual({
      privateEndpoints: { add: [{ id: "vpce-1", description: "office" }] },
    });
    expect(server.requests[0]?.headers.authorization).toBe(
      `Basic ${Buffer.from("key-id:key-secret").toString("base64")}`,
    );
    expect(answer).toEqual({
      requestId: "req-org",
      result: { id: ORG, name: "Acme Analytics", privateEndpoints: [], byocConfig: [] },
      timing: { budgetWaitMs: expect.any(Number), requestMs: expect.any(Number) },
    });
  });

  it("PATCHes an API key and keeps an unknown state value", async () => {
    server.reply({
      body: envelope({ id: KEY, name: "ci", roles: ["developer"], state: "suspended", expireAt: null }),
    });

    const answer = await managementClient().call(
      "updateApiKey",
      { organizationId: ORG, keyId: KEY },
      { roles: ["developer"], expireAt: null },
    );

    expect(server.requests[0]).toMatchObject({
      method: "PATCH",
      url: `/v1/organizations/${ORG}/keys/${KEY}`,
    });
    expect(answer.result.state).toBe("suspended");
  });

  it("PATCHes a data pipe", async () => {
    server.reply({
      body: envelope({ id: PIPE, name: "events", state: "a_state_nobody_documented", source: {} }),
    });

    const answer = await managementClient().call(
      "updateDataPipe",
      { organizationId: ORG, serviceId: SERVICE, dataPipeId: PIPE },
      { name: "events" },
    );

    expect(server.requests[0]).toMatchObject({
      method: "PATCH",
      url: `/v1/organizations/${ORG}/services/${SERVICE}/datapipes/${PIPE}`,
    });
    expect(answer.result).toMatchObject({ id: PIPE, state: "a_state_nobody_documented", source: {} });
  });

  it("POSTs a reverse private endpoint and returns the server-assigned id", async () => {
    server.reply({ body: envelope({ id: "rpe-1", status: "Provisioning", dnsNames: [] }) });

    const answer = await managementClient().call(
      "createReversePrivateEndpoint",
      { organizationId: ORG, serviceId: SERVICE },
      {
        description: "kafka",
        type: "MSK_MULTI_VPC",
        mskClusterArn: "arn:aws:kafka:eu-west-1:1:cluster/x/y",
        mskAuthentication: "SASL_IAM",
      },
    );

    expect(server.requests[0]).toMatchObject({
      method: "POST",
      url: `/v1/organizations/${ORG}/services/${SERVICE}/datapipesReversePrivateEndpoints`,
    });
    expect(answer.result).toMatchObject({ id: "rpe-1", status: "Provisioning" });
  });

  it("does not repeat the reverse endpoint POST after a 503", async () => {
    server.reply({ status: 503, body: { status: 503, error: "unavailable", requestId: "r" } });

    const error = await managementClient()
      .call(
        "createReversePrivateEndpoint",
        { organizationId: ORG, serviceId: SERVICE },
        { description: "x", type: "VPC_ENDPOINT_SERVICE" },
      )
      .catch((e: unknown) => e);

    expect(isUnknownOutcomeError(error)).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it("GETs the backups as a list", async () => {
    server.reply({
      body: envelope([
        { id: "b2", finishedAt: "2026-01-02T00:00:00Z", sizeInBytes: 10, durationInSeconds: 5, bucket: {} },
        { id: "b1", finishedAt: null },
      ]),
    });

    const answer = await managementClient().call(
      "listBackups",
      { organizationId: ORG, serviceId: SERVICE },
      undefined,
    );

    expect(server.requests[0]).toMatchObject({
      method: "GET",
      url: `/v1/organizations/${ORG}/services/${SERVICE}/backups`,
      body: "",
    });
    expect(answer.result.map((backup) => backup.id)).toEqual(["b2", "b1"]);
  });

  it("rejects an answer without the envelope's result", async () => {
    server.reply({ body: { id: ORG, name: "no envelope" } });

    const error = await managementClient()
      .call("updateOrganization", { organizationId: ORG }, { name: "x" })
      .catch((e: unknown) => e);

    expect(isApiError(error) && error.message).toContain("result");
  });
});

describe("the observability client", () => {
  it("PUTs a dashboard with a Bearer token and returns the tiles with their ids", async () => {
    const tiles = [
      { id: "65f1a2b3c4d5e6f708192a41", name: "lag", x: 0, y: 0, w: 6, h: 3, series: [] },
      { id: "new-tile-id", name: "new", x: 6, y: 0, w: 6, h: 3, series: [] },
    ];
    server.reply({ body: { data: { id: DASHBOARD, name: "Platform", tags: [], tiles } } });

    const answer = await observabilityClient().call(
      "putDashboard",
      { id: DASHBOARD },
      {
        name: "Platform",
        tags: [],
        tiles: [
          { id: "65f1a2b3c4d5e6f708192a41", name: "lag", x: 0, y: 0, w: 6, h: 3, series: [] },
          { name: "new", x: 6, y: 0, w: 6, h: 3, series: [] },
        ],
      },
    );

    expect(server.requests[0]).toMatchObject({ method: "PUT", url: `/api/v2/dashboards/${DASHBOARD}` });
    expect(server.requests[0]?.headers.authorization).toBe("Bearer obs-token");
    expect(answer.result.tiles.map((tile) => tile.id)).toEqual(["65f1a2b3c4d5e6f708192a41", "new-tile-id"]);
  });

  it("GETs an alert and keeps an unknown state", async () => {
    server.reply({
      body: {
        data: { id: ALERT, name: "ingest lag", state: "snoozed", tileId: "t", channel: { type: "pager" } },
      },
    });

    const answer = await observabilityClient().call("getAlert", { id: ALERT }, undefined);

    expect(server.requests[0]).toMatchObject({ method: "GET", url: `/api/v2/alerts/${ALERT}` });
    expect(answer.result).toMatchObject({ id: ALERT, state: "snoozed", channel: { type: "pager" } });
  });

  it("reports an observability error's message", async () => {
    server.reply({ status: 404, body: { message: "alert not found" } });

    const error = await observabilityClient()
      .call("getAlert", { id: ALERT }, undefined)
      .catch((e: unknown) => e);

    expect(isApiError(error) && error.message).toContain("alert not found");
  });
});
