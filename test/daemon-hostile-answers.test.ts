import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { type DaemonProcess, startDaemonProcess } from "./helpers/daemon-process.js";
import type { StatusBody } from "./helpers/daemon-run.js";
import { createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";
import { ciDeployerKey } from "./helpers/manifests.js";
import { platformEnv } from "./helpers/platform-env.js";
import { until } from "./helpers/wait.js";

/**
 * `driftless run` with reads on against a platform whose reads answer strangely (the simulator's hostile
 * answers): a pipe's field mappings 6,000 levels deep, a key's access list of 20,000 entries, a
 * dashboard of 2,000 tiles, an organization's name a number, members in another order at every read. Each answer is its own
 * resource's drift (shown cut) or failed read; /status and the page answer, every pass and poll round
 * goes on, and a drift is counted and notified once, however its answer orders its members.
 */

const ROUTES = {
  organization: "/v1/organizations/{organizationId}",
  key: "/v1/organizations/{organizationId}/keys/{keyId}",
  pipe: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}",
  dashboard: "/api/v2/dashboards/{id}",
};

const manifests = (pipeAnnotations = "") => ({
  "org.yaml": `apiVersion: driftless/v1
kind: Organization
metadata:
  name: acme
spec:
  organizationId: ${ids.organizationId}
  name: Acme Analytics
`,
  "key.yaml": ciDeployerKey(
    "ci-deployer",
    "  ipAccessList:\n    - {source: 10.0.0.0/8, description: office}\n",
  ),
  "pipe.yaml": `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: orders${pipeAnnotations}
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.kafkaPipeId}
  fieldMappings:
    - {sourceField: id, destinationField: order_id}
`,
  "dashboard.yaml": `apiVersion: driftless/v1
kind: Dashboard
metadata:
  name: overview
spec:
  dashboardId: ${ids.dashboardId}
  name: Platform overview
  tiles:
    - key: errors
      id: ${ids.tileIds[1]}
      name: Errors
      x: 6
      y: 0
      w: 6
      h: 3
      series:
        - { type: time, sourceId: ${ids.sourceIds[0]}, aggFn: count, where: "level:error", groupBy: [] }
`,
  // A backup watch, polled; no alert watch: the dashboard's PUT keeps only the tile it states, and
  // the platform deletes the alerts of the others.
  "watches.yaml": `apiVersion: driftless/v1
kind: BackupWatch
metadata:
  name: analytics-backups
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  maxAge: 26h
`,
});

type Entry = StatusBody["resources"][number] & {
  drift?: Array<{ path: string; have: unknown }>;
  note?: string;
};
type Status = Omit<StatusBody, "resources"> & { resources: Entry[] };

let sim: Simulator;
let notify: HttpTestServer;
let root: string;
let daemon: DaemonProcess | undefined;

beforeEach(async () => {
  sim = await startSimulator({ contract: "full", rateLimit: { management: false, observability: false } });
  notify = await createHttpTestServer();
  root = await mkdtemp(join(tmpdir(), "driftless-hostile-"));
});

afterEach(async () => {
  await daemon?.stop("SIGKILL");
  daemon = undefined;
  await notify.close();
  await sim.close();
  await rm(root, { recursive: true, force: true });
});

/**
 * Starts the daemon on `files`, polling every `pollSeconds`: a backup watch polled every second would
 * take all but the reads' share of the management key's budget, and the reads would wait behind it.
 */
async function start(files: Record<string, string>, pollSeconds = 1): Promise<DaemonProcess> {
  await mkdir(join(root, "manifests"));
  for (const [file, text] of Object.entries(files)) await writeFile(join(root, "manifests", file), text);
  daemon = await startDaemonProcess({
    DRIFTLESS_MANIFESTS: join(root, "manifests"),
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_SECRETS_DIR: root,
    ...platformEnv(sim),
    DRIFTLESS_RECONCILE_SCHEDULE: "off",
    DRIFTLESS_POLL_SCHEDULE: pollSeconds === 1 ? "* * * * * *" : `*/${pollSeconds} * * * * *`,
    DRIFTLESS_REASSERT_SCHEDULE: "off",
    DRIFTLESS_READS: "on",
    DRIFTLESS_NOTIFY_URL: notify.url,
    DRIFTLESS_NOTIFY_SECRET: "notify-secret-for-tests",
  });
  await daemon.waitForLog((l) => l.msg === "pass finished");
  return daemon;
}

/** GET `path`: its status and text (a 500 is an answer too). */
const get = async (d: DaemonProcess, path: string) => {
  const answer = await fetch(`${d.url}${path}`);
  return { status: answer.status, text: await answer.text() };
};

const statusOf = async (d: DaemonProcess): Promise<Status> => {
  const answer = await get(d, "/status");
  expect(answer.status, answer.text).toBe(200);
  return JSON.parse(answer.text) as Status;
};

const resource = (status: Status, kind: string) => status.resources.find((r) => r.kind === kind);

const reads = (route: string) => sim.requests.filter((r) => r.method === "GET" && r.route === route).length;

const driftEvents = () =>
  notify.requests.filter((r) => (r.json as { event?: string } | undefined)?.event === "drift");

const metric = (text: string, name: string) =>
  Number(
    text
      .split("\n")
      .find((line) => line.startsWith(name))
      ?.split(" ")[1] ?? Number.NaN,
  );

describe("driftless run against hostile read answers (built daemon)", () => {
  it("keeps /status, the page, the passes and the polls going; each answer is its own resource's, shown cut", async () => {
    const d = await start(manifests(), 2);
    sim.inject({
      api: "management",
      method: "GET",
      route: ROUTES.pipe,
      kind: "deep",
      field: "fieldMappings",
      count: Infinity,
    });
    sim.inject({
      api: "management",
      method: "GET",
      route: ROUTES.key,
      kind: "huge",
      field: "ipAccessList",
      count: Infinity,
    });
    sim.inject({
      api: "observability",
      method: "GET",
      route: ROUTES.dashboard,
      kind: "huge",
      field: "tiles",
      size: 2_000,
      count: Infinity,
    });
    sim.inject({
      api: "management",
      method: "GET",
      route: ROUTES.organization,
      kind: "wrong-type",
      field: "name",
      count: Infinity,
    });
    const polls = metric((await get(d, "/metrics")).text, 'driftless_poll_total{result="success"}');

    // Each read finds the drift again and the pass after it puts it back: each is kept as it shows.
    const seen = new Map<string, Entry>();
    await until(async () => {
      for (const entry of (await statusOf(d)).resources)
        if (entry.status === "Drifted") seen.set(entry.kind, entry);
      return ["DataPipe", "ApiKey", "Dashboard"].every((kind) => seen.has(kind));
    });
    await until(() => driftEvents().length >= 3);
    const passes = d.logs.filter((l) => l.msg === "pass finished").length;
    await until(() => d.logs.filter((l) => l.msg === "pass finished").length > passes + 1);
    await until(
      async () =>
        metric((await get(d, "/metrics")).text, 'driftless_poll_total{result="success"}') > polls + 2,
    );
    const page = await get(d, "/");

    const pipe = seen.get("DataPipe");
    expect(pipe?.lastError).toMatch(
      /fieldMappings: git \[\{"sourceField":"id".*live \{"a":\{"a":.*\(cut below 12 levels\)/,
    );
    expect(pipe?.drift?.[0]?.have).toMatch(/^\{"a":\{"a":.*\(cut below 12 levels\)$/);
    const key = seen.get("ApiKey");
    expect(key?.lastError).toContain("… (cut at 200 characters; a list of 20000 entries)");
    expect(String(key?.drift?.[0]?.have)).toContain("(cut at 400 characters; a list of 20000 entries)");
    // 2,000 tiles added outside git: 50 fields shown, and how many more differ.
    const tiles = seen.get("Dashboard")?.drift ?? [];
    expect(tiles).toHaveLength(51);
    expect(tiles.at(-1)).toEqual({ path: "…", want: null, have: "(1951 more fields differ)" });
    expect(seen.get("Dashboard")?.lastError).toMatch(
      /; and 1991 more field\(s\); the next write puts it back$/,
    );
    const org = resource(await statusOf(d), "Organization");
    expect(org?.status).toBe("Synced");
    expect(org?.note).toMatch(/not verified: its last read failed \(.*unexpected body/);
    expect(page.status).toBe(200);
    const events = driftEvents().map(
      (r) => r.json as { resource: { kind: string }; fields: Array<{ have: unknown }> },
    );
    // Put back by a pass and found again at the next read: each time a new drift, told again.
    expect([...new Set(events.map((e) => e.resource.kind))].sort()).toEqual([
      "ApiKey",
      "Dashboard",
      "DataPipe",
    ]);
    for (const event of events.filter((e) => e.resource.kind !== "Dashboard")) {
      expect(String(event.fields[0]?.have)).toMatch(/\(cut (at|below) /);
    }
    expect(
      d.logs.filter((l) => /failed/.test(String(l.msg)) && l.msg !== "read failed: tried again next round"),
    ).toEqual([]);
    expect(d.stderr()).not.toContain("RangeError");
  });

  it("counts and notifies an unchanged report-only drift once, however the answer orders its members", async () => {
    // The pipe alone: it takes every read the key's budget grants reads.
    const { "pipe.yaml": pipe = "" } = manifests("\n  annotations:\n    driftless/drift: report");
    const d = await start({ "pipe.yaml": pipe });
    // A mapping added in the console: the live list is shown whole, its entries' members in the answer's order.
    sim.consoleEdit(
      { collection: "pipes", id: ids.kafkaPipeId },
      {
        fieldMappings: [
          { sourceField: "id", destinationField: "order_id" },
          { sourceField: "total", destinationField: "amount" },
        ],
      },
    );
    sim.inject({ api: "management", method: "GET", route: ROUTES.pipe, kind: "reordered", count: Infinity });
    const before = reads(ROUTES.pipe);

    await until(() => reads(ROUTES.pipe) >= before + 4);
    const metrics = (await get(d, "/metrics")).text;
    const status = await statusOf(d);

    expect(resource(status, "DataPipe")?.status).toBe("Drifted");
    expect(metric(metrics, 'driftless_drift_total{kind="DataPipe"}')).toBe(1);
    expect(driftEvents()).toHaveLength(1);
    expect(d.logs.filter((l) => String(l.msg).startsWith("drift found"))).toHaveLength(1);
  });
});
