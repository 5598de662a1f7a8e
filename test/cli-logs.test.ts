import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { logFormatOf } from "../src/commands/io.js";
import { defaultIds } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";

/**
 * Logs a person can read: readable lines on a terminal, JSON for a collector, the built-in simulator's
 * warning once, and no log line among plan's and apply's report unless asked.
 */

const key = `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ci
spec:
  organizationId: ${defaultIds.organizationId}
  keyId: ${defaultIds.ciDeployerKeyId}
  name: ci deployer renamed
  roles: [developer]
`;

let root: string;
let env: Record<string, string>;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-logs-"));
  await mkdir(join(root, "manifests"));
  await writeFile(join(root, "manifests", "key.yaml"), key);
  // No platform URL: the built-in simulator stands in.
  env = { DRIFTLESS_MANIFESTS: join(root, "manifests"), DRIFTLESS_STATE_DIR: join(root, "state") };
});
afterEach(() => rm(root, { recursive: true, force: true }));

const lines = (text: string) => text.split("\n").filter(Boolean);

describe("apply's logs", () => {
  it("say the built-in simulator once, and nothing below a warning unless asked", async () => {
    const applied = await driftlessAsync(["apply"], env);

    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/Synced\s+ApiKey\/ci/);
    expect(lines(applied.stdout).filter((line) => line.startsWith("{"))).toEqual([]);
    const logged = lines(applied.stderr);
    expect(logged.filter((line) => line.includes("BUILT-IN SIMULATOR"))).toHaveLength(1);
    expect(logged.map((line) => (JSON.parse(line) as { level: number }).level)).toEqual([40]);
  });

  it("go on from info when the level is set", async () => {
    const applied = await driftlessAsync(["apply"], { ...env, DRIFTLESS_LOG_LEVEL: "info" });

    expect(applied.code).toBe(0);
    expect(applied.stderr).toContain('"msg":"resource applied"');
  });

  it("are readable lines with DRIFTLESS_LOG_FORMAT=pretty", async () => {
    const applied = await driftlessAsync(["apply"], { ...env, DRIFTLESS_LOG_FORMAT: "pretty" });

    expect(applied.code).toBe(0);
    expect(lines(applied.stderr)).toEqual([
      expect.stringMatching(
        /^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: DRIFTLESS_MANAGEMENT_URL and .* BUILT-IN SIMULATOR/,
      ),
    ]);
  });

  it("refuse a format they do not know, naming the variable", async () => {
    const applied = await driftlessAsync(["apply"], { ...env, DRIFTLESS_LOG_FORMAT: "xml" });

    expect(applied.code).toBe(1);
    expect(applied.stderr).toContain("DRIFTLESS_LOG_FORMAT");
    expect(applied.stdout).toBe("");
  });
});

describe("the log format", () => {
  it("is pretty on a terminal and JSON otherwise, unless set", () => {
    expect(logFormatOf(undefined, { errIsTerminal: true })).toBe("pretty");
    expect(logFormatOf(undefined, { errIsTerminal: false })).toBe("json");
    expect(logFormatOf(undefined, {})).toBe("json");
    expect(logFormatOf("json", { errIsTerminal: true })).toBe("json");
    expect(logFormatOf("pretty", { errIsTerminal: false })).toBe("pretty");
  });
});
