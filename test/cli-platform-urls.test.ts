import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repo } from "./helpers/cli.js";

/** The built CLI, stopped after 60 s: a `run` that started instead of refusing would never end. */
function driftless(args: string[], env: Record<string, string>) {
  const result = spawnSync(process.execPath, [join(repo, "dist", "cli.js"), ...args], {
    encoding: "utf8",
    cwd: repo,
    env: { PATH: process.env.PATH ?? "", ...env },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * The built-in simulator stands in for the platform only when neither API URL is set: one URL without
 * the other is a configuration error of plan, apply and run, naming both variables, before anything
 * is started or sent. The URLs are a closed loopback port, never reached: the commands stop at their
 * settings (and a command that did not would fail to connect, or be stopped by the time-out, not hang).
 */

const MANAGEMENT = {
  DRIFTLESS_MANAGEMENT_URL: "http://127.0.0.1:9/management",
  DRIFTLESS_MANAGEMENT_KEY_ID: "key-id",
  DRIFTLESS_MANAGEMENT_KEY_SECRET: "key-secret",
};
const OBSERVABILITY = {
  DRIFTLESS_OBSERVABILITY_URL: "http://127.0.0.1:9/observability",
  DRIFTLESS_OBSERVABILITY_TOKEN: "observability-token",
};

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-urls-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const examples = join(repo, "examples");
const base = () => ({
  DRIFTLESS_STATE_DIR: join(root, "state"),
  DRIFTLESS_MANIFESTS: examples,
  DRIFTLESS_SECRETS_DIR: join(examples, "secrets"),
  EXAMPLE_KAFKA_PASSWORD: "demo",
  DRIFTLESS_LISTEN: "127.0.0.1:0",
});

describe.each([
  ["only the management URL", MANAGEMENT, "DRIFTLESS_OBSERVABILITY_URL is unset"],
  ["only the observability URL", OBSERVABILITY, "DRIFTLESS_MANAGEMENT_URL is unset"],
])("%s set", (_, half, missing) => {
  it.each([["plan"], ["apply"], ["run"]])("%s refuses with one line naming both variables", (command) => {
    const result = driftless([command], { ...base(), ...half });

    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(missing);
    expect(lines[0]).toMatch(/set both DRIFTLESS_MANAGEMENT_URL and DRIFTLESS_OBSERVABILITY_URL/);
    expect(lines[0]).toMatch(/neither .*built-in simulator/);
    expect(result.stderr).not.toMatch(/SIMULATOR|key-secret|observability-token/);
  });
});

describe("neither URL set", () => {
  it("runs against the built-in simulator, and the warning names both variables", () => {
    const result = driftless(["apply"], base());

    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(
      /"msg":"DRIFTLESS_MANAGEMENT_URL and DRIFTLESS_OBSERVABILITY_URL unset: using the BUILT-IN SIMULATOR/,
    );
  });
});

describe("neither URL set where driftless runs in production", () => {
  it.each([
    [
      "in a Kubernetes pod",
      { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
      /it runs in a Kubernetes pod \(KUBERNETES_SERVICE_HOST is set\)/,
    ],
    [
      "with the Kubernetes state store",
      { DRIFTLESS_STATE_STORE: "kubernetes" },
      /DRIFTLESS_STATE_STORE=kubernetes/,
    ],
    ["electing a leader", { DRIFTLESS_LEADER_ELECT: "true" }, /DRIFTLESS_LEADER_ELECT=true/],
  ])("run refuses to start %s, naming what to set", (_, production, why) => {
    const result = driftless(["run"], { ...base(), ...production });

    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^driftless: DRIFTLESS_MANAGEMENT_URL and DRIFTLESS_OBSERVABILITY_URL are unset, and /,
    );
    expect(lines[0]).toMatch(why);
    expect(lines[0]).toMatch(
      /Set both URLs .* or DRIFTLESS_SIMULATOR=builtin to run the simulator on purpose$/,
    );
  });

  it("plan still runs in a pod (a CI job's), saying the simulator is the platform", () => {
    const result = driftless(["plan"], { ...base(), KUBERNETES_SERVICE_HOST: "10.96.0.1" });

    expect(result.code).toBe(2);
    expect(result.stdout).toMatch(/^NOTE: the platform is the BUILT-IN SIMULATOR/m);
  });
});

describe("DRIFTLESS_SIMULATOR=builtin beside a URL", () => {
  it.each([["plan"], ["apply"], ["run"]])("%s refuses: which platform was meant?", (command) => {
    const result = driftless([command], {
      ...base(),
      ...MANAGEMENT,
      ...OBSERVABILITY,
      DRIFTLESS_SIMULATOR: "builtin",
    });

    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      "driftless: DRIFTLESS_SIMULATOR=builtin and DRIFTLESS_MANAGEMENT_URL are both set: unset DRIFTLESS_SIMULATOR to use the real platform, or both URLs to use the built-in simulator",
    );
  });
});
