import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { ROUTES } from "../src/platform/routes.js";
import { type Simulator, startSimulator } from "../src/simulator/index.js";
import { type DaemonProcess, startDaemonProcess } from "./helpers/daemon-process.js";
import { header, ids } from "./helpers/engine-world.js";

/**
 * `driftless run` with reads on hands its engine the reader: an organization's first contact reads the
 * live list and sends its sets in its first PATCH, with no request that only learns the list.
 */

let sim: Simulator;
let root: string;
let daemon: DaemonProcess | undefined;

beforeEach(async () => {
  sim = await startSimulator({ contract: "full", rateLimit: { management: false, observability: false } });
  root = await mkdtemp(join(tmpdir(), "driftless-reads-"));
  await mkdir(join(root, "manifests"));
  await writeFile(
    join(root, "manifests", "org.yaml"),
    `${header("Organization", "acme")}  organizationId: ${ids.organizationId}
  name: Acme Analytics
  privateEndpoints:
    - {id: vpce-a, description: "vpce-a desc"}
`,
  );
});

afterEach(async () => {
  await daemon?.stop("SIGKILL");
  daemon = undefined;
  await sim.close();
  await rm(root, { recursive: true, force: true });
});

const start = (reads: "on" | "off") =>
  startDaemonProcess({
    DRIFTLESS_MANIFESTS: join(root, "manifests"),
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_SECRETS_DIR: root,
    DRIFTLESS_MANAGEMENT_URL: sim.managementUrl,
    DRIFTLESS_MANAGEMENT_KEY_ID: ids.managementKeyId,
    DRIFTLESS_MANAGEMENT_KEY_SECRET: ids.managementKeySecret,
    DRIFTLESS_OBSERVABILITY_URL: sim.observabilityUrl,
    DRIFTLESS_OBSERVABILITY_TOKEN: ids.observabilityToken,
    DRIFTLESS_RECONCILE_SCHEDULE: "off",
    DRIFTLESS_POLL_SCHEDULE: "off",
    DRIFTLESS_REASSERT_SCHEDULE: "off",
    DRIFTLESS_READS: reads,
  });

const organizationRequests = () =>
  sim.requests
    .filter(
      (r) => r.route === ROUTES.getOrganization.template || r.route === ROUTES.updateOrganization.template,
    )
    .map((r) => r.method);

it("reads the organization's live list before its first PATCH, which carries the sets", async () => {
  daemon = await start("on");
  await daemon.waitForLog((l) => l.msg === "pass finished");

  expect(organizationRequests()).toEqual(["GET", "PATCH"]);
  const live = sim.state.organizations.find((o) => o.id === ids.organizationId);
  expect(live?.privateEndpoints.map((e) => e.id)).toContain("vpce-a");
});

it("sends no read with reads off", async () => {
  daemon = await start("off");
  await daemon.waitForLog((l) => l.msg === "pass finished");

  expect(organizationRequests()).not.toContain("GET");
  expect(sim.requests.filter((r) => r.method === "GET" && r.route !== "/healthz")).toEqual([]);
});
