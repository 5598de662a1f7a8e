import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { isApiError, isUnknownOutcomeError } from "../src/errors.js";
import type { HttpRequest } from "../src/platform/http.js";
import { clientOf, createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";

/**
 * An answer is read into memory only up to `maxAnswerBytes` (default 4 MiB): a platform (or a proxy in
 * front of it) sending more is an error, never a process that buffers without limit.
 */

let server: HttpTestServer;
beforeEach(async () => {
  server = await createHttpTestServer();
});
afterEach(() => server.close());

const request = (method: "GET" | "POST"): HttpRequest<unknown> => ({
  method,
  route: "/v1/things",
  ...(method === "POST" ? { body: { name: "x" } } : {}),
  schema: z.unknown(),
  priority: "change",
});

async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error as Error,
  );
}

const MIB = 1024 * 1024;

describe("answers larger than the limit", () => {
  it("are an ApiError naming the limit, by default above 4 MiB", async () => {
    server.reply({ status: 200, body: { items: "z".repeat(5 * MIB) } });

    const error = await rejection(clientOf(server).request(request("GET")));

    expect(isApiError(error)).toBe(true);
    expect(error.message).toContain(`answer larger than ${4 * MIB} bytes`);
    expect(server.requests).toHaveLength(1);
  });

  it("leave a POST's outcome unknown: it may have been carried out", async () => {
    server.reply({ status: 201, body: { id: "e1", padding: "z".repeat(2000) } });

    const error = await rejection(clientOf(server, { maxAnswerBytes: 1000 }).request(request("POST")));

    expect(isUnknownOutcomeError(error)).toBe(true);
    expect(error.message).toContain("may or may not have taken effect");
    expect(error.message).toContain("answer larger than 1000 bytes");
    expect(server.requests).toHaveLength(1);
  });

  it("keep the status of an error answer, and its retries", async () => {
    server.reply({ status: 503, body: "<html>".padEnd(5000, "z") });

    const answer = await clientOf(server, { maxAnswerBytes: 1000 }).request(request("GET"));

    expect(answer.status).toBe(200);
    expect(server.requests).toHaveLength(2);
  });
});

describe("answers within the limit", () => {
  it("are read whole", async () => {
    server.reply({ status: 200, body: { items: "z".repeat(900) } });

    const answer = await clientOf(server, { maxAnswerBytes: 1000 }).request(request("GET"));

    expect(answer.data).toEqual({ items: "z".repeat(900) });
  });
});
