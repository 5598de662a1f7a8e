import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPlatform } from "../src/commands/platform.js";
import { Config, cleartextUrls, isLoopbackHost } from "../src/config.js";
import { createLogger } from "../src/telemetry/logger.js";
import { driftless } from "./helpers/cli.js";

/**
 * An `http://` platform URL to another machine sends the credentials in clear: refused unless
 * DRIFTLESS_ALLOW_INSECURE=true, and then warned of. No test here sends a request anywhere: the
 * commands run are `plan`, which never talks to the platform, and the platform is built but not used.
 */

// TEST-NET-3 (RFC 5737): documentation only, never routed. Nothing connects to it below.
const REMOTE = "http://203.0.113.10:8124";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-insecure-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("which platform URLs send credentials in clear", () => {
  it("accepts https and loopback http, and names the variable of any other http URL", () => {
    const loopback = [
      "http://127.0.0.1:8124",
      "http://127.3.4.5/",
      "http://localhost:8124",
      "http://LOCALHOST./",
      "http://[::1]:8125",
      "https://api.analytics.example.com",
    ];
    const remote = ["http://api.analytics.example.com", "http://10.0.0.5:80", "http://localhost.example.com"];

    const accepted = loopback.flatMap((url) => cleartextUrls({ managementUrl: url }));
    const refused = remote.map((url) => cleartextUrls({ observabilityUrl: url }));

    expect(accepted).toEqual([]);
    expect(refused.map((found) => found.map((f) => f.env))).toEqual(
      remote.map(() => ["DRIFTLESS_OBSERVABILITY_URL"]),
    );
    expect(isLoopbackHost("127.0.0.1.nip.io")).toBe(false);
  });
});

describe("an http:// platform URL that is not loopback", () => {
  const env = () => ({
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_MANAGEMENT_URL: REMOTE,
    DRIFTLESS_MANAGEMENT_KEY_ID: "key-id",
    DRIFTLESS_MANAGEMENT_KEY_SECRET: "key-secret",
    // Both URLs or neither: plan never reaches either.
    DRIFTLESS_OBSERVABILITY_URL: "https://observability.analytics.example.com",
    DRIFTLESS_OBSERVABILITY_TOKEN: "token",
  });

  it("is refused with exit 1 and a message naming the variable and the override", () => {
    const result = driftless(["plan", root], env());

    expect(result.code).toBe(1);
    expect(result.stderr).toContain("DRIFTLESS_MANAGEMENT_URL");
    expect(result.stderr).toContain("in clear");
    expect(result.stderr).toContain("DRIFTLESS_ALLOW_INSECURE=true");
    expect(result.stderr).not.toContain("key-secret");
  });

  it("is accepted with DRIFTLESS_ALLOW_INSECURE=true", () => {
    const result = driftless(["plan", root], { ...env(), DRIFTLESS_ALLOW_INSECURE: "true" });

    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
  });

  it("is warned of loudly when the platform is built with the override", async () => {
    const logs: string[] = [];
    const config = Config.parse({
      stateDir: join(root, "state"),
      managementUrl: REMOTE,
      managementKeyId: { value: "key-id" },
      managementKeySecret: { value: "key-secret" },
      observabilityUrl: "https://observability.analytics.example.com",
      observabilityToken: { value: "token" },
      allowInsecure: true,
    });
    const logger = createLogger(
      "info",
      new Writable({
        write: (chunk, _encoding, done) => {
          logs.push(String(chunk));
          done();
        },
      }),
    );

    const platform = await createPlatform(config, { logger });
    await platform.close();

    const warnings = logs.map((line) => JSON.parse(line) as { level: number; msg: string; setting: string });
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 40,
        setting: "DRIFTLESS_MANAGEMENT_URL",
        msg: expect.stringMatching(/^DRIFTLESS_MANAGEMENT_URL is .* IN CLEAR/),
      }),
    ]);
    expect(logs.join("")).not.toContain("key-secret");
  });
});
