import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { type DaemonProcess, startDaemonProcess } from "./helpers/daemon-process.js";
import type { StatusBody } from "./helpers/daemon-run.js";
import { createGitSyncLayout, type GitSyncLayout } from "./helpers/git-sync-layout.js";
import { ciDeployerKey } from "./helpers/manifests.js";
import { platformEnv } from "./helpers/platform-env.js";
import { until } from "./helpers/wait.js";

/**
 * Drift reads leave the rate budget's headroom to changes from git: with reads on, a commit that
 * changes six resources of one management key is sent at once, as with reads off. Before, the read
 * rounds held five or six of the key's nine slots at any moment, and a burst of changes waited up to a
 * window (9.6 s) for them. The built daemon against the simulator, every request through driftless's
 * own budget (9 per 10 s per key).
 */

const PIPES = [ids.kafkaPipeId, ids.objectStoragePipeId, ids.kinesisPipeId, ids.postgresPipeId];

/** An organization, a key and four pipes of one management key, each named `<title> <suffix>`. */
const files = (suffix: string) => ({
  "org.yaml": `apiVersion: driftless/v1
kind: Organization
metadata:
  name: acme
spec:
  organizationId: ${ids.organizationId}
  name: Acme ${suffix}
`,
  "key.yaml": ciDeployerKey(`ci-deployer ${suffix}`),
  "pipes.yaml": PIPES.map(
    (id, i) => `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: pipe-${i}
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${id}
  name: pipe ${i} ${suffix}
`,
  ).join("---\n"),
});

let sim: Simulator;
let root: string;
let layout: GitSyncLayout;
let daemon: DaemonProcess | undefined;

beforeEach(async () => {
  sim = await startSimulator({ contract: "full", rateLimit: { management: false, observability: false } });
  root = await mkdtemp(join(tmpdir(), "driftless-reads-budget-"));
  layout = await createGitSyncLayout(join(root, "git"), files("one"));
});

afterEach(async () => {
  await daemon?.stop("SIGKILL");
  daemon = undefined;
  await sim.close();
  await rm(root, { recursive: true, force: true });
});

const managementBudget = async (d: DaemonProcess) => {
  const status = (await (await fetch(`${d.url}/status`)).json()) as StatusBody;
  return status.budget.find((b) => b.api === "management");
};

const patches = () => sim.requests.filter((r) => r.method === "PATCH").length;

it("sends a burst of six changes at once while the read rounds run, none waiting for the budget", async () => {
  daemon = await startDaemonProcess({
    DRIFTLESS_MANIFESTS: layout.link,
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_SECRETS_DIR: root,
    ...platformEnv(sim),
    DRIFTLESS_RECONCILE_SCHEDULE: "off",
    DRIFTLESS_POLL_SCHEDULE: "* * * * * *",
    DRIFTLESS_REASSERT_SCHEDULE: "off",
    DRIFTLESS_READS: "on",
    DRIFTLESS_LOG_LEVEL: "debug",
  });
  const d = daemon;
  await d.waitForLog((l) => l.msg === "pass finished");
  // Eight reads: reads hold at most three of the key's window, so the last two were sent once the
  // first six had left it (and with them the first pass's six writes); reads that took any slot would
  // have sent them faster and hold more of it now.
  const sent = sim.requests.length;
  await until(() => sim.requests.slice(sent).filter((r) => r.method === "GET").length >= 8, 60_000);
  const budget = await managementBudget(d);
  const before = patches();
  const logged = d.logs.length;

  await layout.publish(files("two"));
  await until(() => patches() >= before + 6);

  const waits = d.logs.slice(logged).filter((l) => l.msg === "waiting for the rate budget");
  expect(waits.filter((l) => l.priority === "change")).toEqual([]);
  expect(budget?.used).toBeLessThanOrEqual(3);
  expect(sim.state.pipes.filter((p) => p.name.endsWith(" two"))).toHaveLength(4);
});
