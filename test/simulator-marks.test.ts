import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";
import { type DaemonProcess, startDaemonProcess } from "./helpers/daemon-process.js";
import { apiKey } from "./helpers/daemon-run.js";
import { platformEnv } from "./helpers/platform-env.js";

/**
 * Wherever the built-in simulator stands in for the platform, every output says so: the daemon's first
 * line, /status, /metrics and `driftless status`, and plan's and apply's outputs; against a platform,
 * none of them does, and /status names the platform. Through the built CLI (`npm run build`).
 */

let root: string;
let daemon: DaemonProcess | undefined;
let simulator: Simulator | undefined;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-marks-"));
  // One key the default fixture holds: a pass is one request, well within the simulator's rate limit.
  await mkdir(join(root, "manifests"));
  await writeFile(join(root, "manifests", "key.yaml"), apiKey("ci-deployer"));
});
afterEach(async () => {
  await daemon?.stop("SIGKILL");
  daemon = undefined;
  await simulator?.close();
  simulator = undefined;
  await rm(root, { recursive: true, force: true });
});

/** The settings of every command here: the test's manifests and state. */
const base = () => ({
  DRIFTLESS_MANIFESTS: join(root, "manifests"),
  DRIFTLESS_STATE_DIR: join(root, "state"),
  DRIFTLESS_RECONCILE_SCHEDULE: "off",
  DRIFTLESS_POLL_SCHEDULE: "off",
  DRIFTLESS_REASSERT_SCHEDULE: "off",
});

/** The first value of `metric` in a scrape of the daemon. */
async function gauge(d: DaemonProcess, metric: string): Promise<string | undefined> {
  const text = await (await fetch(`${d.url}/metrics`)).text();
  return new RegExp(`^${metric} (\\S+)$`, "m").exec(text)?.[1];
}

const statusOf = async (d: DaemonProcess) =>
  (await (await fetch(`${d.url}/status`)).json()) as { platform?: string };

describe("a daemon on the built-in simulator", () => {
  it("says so in its first line, /status, /metrics and driftless status, also in a pod where it was asked for by name", async () => {
    daemon = await startDaemonProcess({
      ...base(),
      DRIFTLESS_SIMULATOR: "builtin",
      KUBERNETES_SERVICE_HOST: "10.96.0.1",
      KUBERNETES_SERVICE_PORT: "443",
    });

    const status = await statusOf(daemon);
    const simulatorGauge = await gauge(daemon, "driftless_simulator");
    const table = await driftlessAsync(["status", "--url", daemon.url]);
    const warning = await daemon.waitForLog((line) => /BUILT-IN SIMULATOR/.test(String(line.msg)));

    expect(daemon.stdout().split("\n")[0]).toBe(
      `driftless run: status page ${daemon.url}/ (against the BUILT-IN SIMULATOR, not a real platform)`,
    );
    expect(status.platform).toBe("simulator");
    expect(simulatorGauge).toBe("1");
    expect(table.stdout.split("\n")[0]).toBe(
      "this daemon reconciles the BUILT-IN SIMULATOR, not a real platform (set DRIFTLESS_MANAGEMENT_URL and DRIFTLESS_OBSERVABILITY_URL to reconcile the real one)",
    );
    expect(warning.msg).toMatch(
      /^DRIFTLESS_SIMULATOR=builtin: using the BUILT-IN SIMULATOR, not a real platform/,
    );
  });
});

describe("a daemon on a platform", () => {
  it("names the platform's origin in /status, and nowhere says simulator", async () => {
    simulator = await startSimulator({ rateLimit: { management: false, observability: false } });
    daemon = await startDaemonProcess({ ...base(), ...platformEnv(simulator) });

    const status = await statusOf(daemon);
    const simulatorGauge = await gauge(daemon, "driftless_simulator");
    const table = await driftlessAsync(["status", "--all", "--url", daemon.url]);

    expect(daemon.stdout()).toBe(`driftless run: status page ${daemon.url}/\n`);
    expect(status.platform).toBe(new URL(simulator.managementUrl).origin);
    expect(simulatorGauge).toBe("0");
    expect(table.stdout).not.toMatch(/SIMULATOR/);
    expect(daemon.stderr()).not.toMatch(/SIMULATOR/);
  });
});

describe("plan and apply", () => {
  it("say first that the built-in simulator is the platform, in text and in JSON", async () => {
    const applied = await driftlessAsync(["apply"], base());
    const planned = await driftlessAsync(["plan"], base());
    const plannedJson = await driftlessAsync(["plan", "-o", "json"], base());
    const markdown = await driftlessAsync(["plan", "-o", "markdown"], base());

    const mark = "the platform is the BUILT-IN SIMULATOR, not a real platform";
    expect(applied.stdout.split("\n")[0]).toMatch(new RegExp(`^NOTE: ${mark}`));
    expect(planned.stdout).toMatch(new RegExp(`^NOTE: ${mark}`, "m"));
    expect(JSON.parse(plannedJson.stdout)).toMatchObject({
      platform: "simulator",
      notices: expect.arrayContaining([expect.stringMatching(new RegExp(`^${mark}`))]),
    });
    expect(markdown.stdout).toContain(`> **Note:** ${mark}`);
  });

  it("name the platform's origin in JSON against a platform, and never the simulator", async () => {
    simulator = await startSimulator({ rateLimit: { management: false, observability: false } });
    const env = { ...base(), ...platformEnv(simulator) };

    const applied = await driftlessAsync(["apply", "-o", "json"], env);
    const planned = await driftlessAsync(["plan", "-o", "json"], env);
    const text = await driftlessAsync(["apply"], env);

    const origin = new URL(simulator.managementUrl).origin;
    expect(JSON.parse(applied.stdout).platform).toBe(origin);
    expect(JSON.parse(planned.stdout).platform).toBe(origin);
    expect(text.stdout + text.stderr).not.toMatch(/SIMULATOR/);
  });
});
