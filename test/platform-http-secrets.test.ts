import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type ApiError, isApiError, isUnknownOutcomeError } from "../src/errors.js";
import type { HttpRequest } from "../src/platform/http.js";
import { clientOf, createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";

/**
 * A platform may echo a request's body in its error message. The HTTP client masks the request's
 * secrets (`redact`) in the raw answer before it rewrites the message for display (whitespace collapsed,
 * cut at 300 characters), so no rewriting can let a secret, or a piece of one left by the cut, through.
 */

let server: HttpTestServer;
beforeEach(async () => {
  server = await createHttpTestServer();
});
afterEach(() => server.close());

function patchWith(secret: string): HttpRequest<unknown> {
  return {
    method: "PATCH",
    route: "/v1/organizations/{organizationId}/services/{serviceId}/dataPipes/{dataPipeId}",
    params: { organizationId: "o", serviceId: "s", dataPipeId: "p" },
    body: { source: { password: secret } },
    schema: z.unknown(),
    priority: "change",
    redact: [secret],
  };
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isApiError(error) && !isUnknownOutcomeError(error))
    throw new Error(`expected an ApiError, got ${error}`);
  return error as ApiError;
}

/** Every piece of `secret` of at least 4 characters (whitespace collapsed too, as a message shows it). */
function fragments(secret: string): string[] {
  const forms = [secret, secret.replace(/\s+/g, " ")];
  const out = new Set<string>();
  for (const form of forms)
    for (let start = 0; start < form.length; start++)
      for (let end = start + 4; end <= form.length; end++) out.add(form.slice(start, end));
  return [...out].filter((piece) => piece.trim().length >= 4);
}

function expectNoPieceOf(secret: string, message: string) {
  const leaked = fragments(secret).filter((piece) => message.includes(piece));
  expect(leaked, `message: ${message}`).toEqual([]);
}

describe("secrets echoed in an error answer are masked before the message is rewritten", () => {
  it("masks a secret with two spaces in it", async () => {
    const secret = "Xq7  Pz9-kLm";
    server.reply({ status: 400, body: { status: 400, error: `invalid password '${secret}'` } });

    const error = await failure(clientOf(server).request(patchWith(secret)));

    expect(error.message).toContain("invalid password '(secret)'");
    expectNoPieceOf(secret, error.message);
  });

  it("masks a secret with a newline in it, in a JSON answer and in a plain-text one", async () => {
    const secret = "Ab3dE\nfG7hJ";
    server.reply(
      { status: 400, body: { message: `bad value ${secret} for password` } },
      { status: 400, body: `bad value ${secret} for password` },
    );

    const json = await failure(clientOf(server).request(patchWith(secret)));
    const text = await failure(clientOf(server).request(patchWith(secret)));

    expect(json.message).toContain("bad value (secret) for password");
    expect(text.message).toContain("bad value (secret) for password");
    expectNoPieceOf(secret, json.message);
    expectNoPieceOf(secret, text.message);
  });

  it("masks a secret that straddles the 300-character cut", async () => {
    const secret = "S3cr3tStr4ddl1ngTheCut";
    server.reply({ status: 422, body: { message: `${"x".repeat(290)} ${secret} and more after it` } });

    const error = await failure(clientOf(server).request(patchWith(secret)));

    expectNoPieceOf(secret, error.message);
  });

  it("masks a piece of a secret that the platform itself cut and the display cut leaves at the edge", async () => {
    const secret = "Echo3dButTrunc4ted";
    // The platform echoed only the secret's first 12 characters, and they fall on our cut.
    server.reply({ status: 400, body: { message: `${"y".repeat(295)}${secret.slice(0, 12)}` } });

    const error = await failure(clientOf(server).request(patchWith(secret)));

    expectNoPieceOf(secret, error.message);
  });

  it("masks a secret echoed JSON-escaped in a body that is not JSON", async () => {
    const secret = 'quo"te\\back';
    server.reply({ status: 502, body: `<html>upstream said {"password":${JSON.stringify(secret)}}</html>` });

    const error = await failure(clientOf(server, { retry: { maxAttempts: 1 } }).request(patchWith(secret)));

    expect(error.message).toContain("(secret)");
    expect(error.message).not.toContain(JSON.stringify(secret).slice(1, -1));
    expectNoPieceOf(secret, error.message);
  });
});
