import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds, type Simulator, startSimulator } from "../src/simulator/index.js";
import { type FakeKubernetes, startFakeKubernetes } from "./helpers/fake-kubernetes.js";
import { until } from "./helpers/wait.js";

/**
 * SIGTERM while `driftless run` is still starting (here: loading its state from a slow Kubernetes API),
 * as when a rollout or a drain replaces a pod that has just started. Needs the built CLI.
 */

const CLI = fileURLToPath(new URL("../dist/cli.js", import.meta.url));

let fake: FakeKubernetes;
let simulator: Simulator;
let root: string;

beforeEach(async () => {
  fake = await startFakeKubernetes();
  simulator = await startSimulator({ rateLimit: { management: false, observability: false } });
  root = await mkdtemp(join(tmpdir(), "driftless-startup-"));
});

afterEach(async () => {
  await simulator.close();
  await fake.close();
  await rm(root, { recursive: true, force: true });
});

describe("driftless run, stopped while starting", () => {
  it("shuts down cleanly and exits 0 on SIGTERM during startup", async () => {
    // The meta Secret's read is slow; a new state's load also reads the 512 shards (quickly here).
    fake.setFault(
      { delayMs: 1_500 },
      (r) => r.method === "GET" && r.path.endsWith("/secrets/driftless-state"),
    );
    const child = spawn(process.execPath, [CLI, "run"], {
      env: {
        PATH: process.env.PATH ?? "",
        DRIFTLESS_LISTEN: "127.0.0.1:0",
        DRIFTLESS_MANIFESTS: root,
        DRIFTLESS_STATE_STORE: "kubernetes",
        DRIFTLESS_NAMESPACE: "driftless-startup",
        KUBECONFIG: fake.kubeconfigPath,
        DRIFTLESS_MANAGEMENT_URL: simulator.managementUrl,
        DRIFTLESS_MANAGEMENT_KEY_ID: defaultIds.managementKeyId,
        DRIFTLESS_MANAGEMENT_KEY_SECRET: defaultIds.managementKeySecret,
        DRIFTLESS_OBSERVABILITY_URL: simulator.observabilityUrl,
        DRIFTLESS_OBSERVABILITY_TOKEN: defaultIds.observabilityToken,
        DRIFTLESS_RECONCILE_SCHEDULE: "off",
        DRIFTLESS_POLL_SCHEDULE: "off",
        DRIFTLESS_REASSERT_SCHEDULE: "off",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    // Seen well within the read's 1.5 s: this process's own timers run in order.
    await until(() => fake.requests.some((r) => r.path.includes("/secrets/")));

    child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    const code = await exited;
    clearTimeout(killer);

    expect(code, stderr.slice(-2000)).toBe(0);
  });
});
