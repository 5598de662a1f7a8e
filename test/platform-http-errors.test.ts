import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type ApiError, isApiError } from "../src/errors.js";
import type { HttpClientOptions } from "../src/platform/http.js";
import { clientOf, createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";

let server: HttpTestServer;
beforeEach(async () => {
  server = await createHttpTestServer();
});
afterEach(() => server.close());

function client(overrides: Partial<HttpClientOptions> = {}) {
  return clientOf(server, overrides);
}

const patch = {
  method: "PATCH" as const,
  route: "/v1/organizations/{organizationId}",
  params: { organizationId: "org-1" },
  body: { name: "Acme" },
  schema: z.looseObject({ result: z.looseObject({ id: z.string() }) }),
  priority: "change" as const,
};

async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isApiError(error)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return error;
}

describe("error answers keep the status, request id and message whatever the body", () => {
  it("reads the management shape {status, error, requestId}", async () => {
    server.reply({
      status: 404,
      body: { status: 404, error: "Organization not found", requestId: "req-404" },
    });

    const error = await failure(client().request(patch));

    expect(error.context).toMatchObject({
      status: 404,
      requestId: "req-404",
      retryable: false,
      route: patch.route,
    });
    expect(error.message).toContain("Organization not found");
    expect(error.message).toContain("req-404");
    expect(server.requests).toHaveLength(1);
  });

  it("uses the reason phrase for an empty body, and the x-request-id header for the request id", async () => {
    server.reply({ status: 400, headers: { "x-request-id": "hdr-7" } });

    const error = await failure(client().request(patch));

    expect(error.message).toContain("answered 400: Bad Request");
    expect(error.context.requestId).toBe("hdr-7");
  });
});

describe("success answers are checked against the schema", () => {
  it("keeps extra fields and unknown values", async () => {
    server.reply({ body: { status: 200, requestId: "r1", result: { id: "org-1", brandNew: { x: 1 } } } });

    const answer = await client().request(patch);

    expect(answer.status).toBe(200);
    expect(answer.data.result).toEqual({ id: "org-1", brandNew: { x: 1 } });
  });
});
