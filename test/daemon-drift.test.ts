import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { createPlatform, type Platform } from "../src/commands/platform.js";
import { Config } from "../src/config.js";
import { type Daemon, startDaemon } from "../src/daemon/daemon.js";
import type { StatusDocument } from "../src/daemon/status-board.js";
import { loadRevision } from "../src/manifests/load.js";
import type { DriftEvent } from "../src/notify/events.js";
import type { Contract } from "../src/platform/routes.js";
import { createReconciler } from "../src/reconcile/engine.js";
import type { ResourceStatus } from "../src/resources.js";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { createFileStore } from "../src/state/file-store.js";
import { SavedRecords } from "../src/state/saved-records.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createMetrics } from "../src/telemetry/metrics.js";
import { fakeDaemonDeps } from "./helpers/fake-daemon.js";
import { until } from "./helpers/wait.js";

/**
 * Drift, end to end in one process: a daemon wired as `driftless run` wires it (the real reconciler,
 * platform clients and state store) against the simulator's `full` contract. A console edit (the
 * simulator's state changed behind driftless's back) of a key, a pipe setting, an organization's
 * private endpoint and a dashboard tile is found by one read round, Drifted in /status with the
 * differing fields, counted, notified, and put back by the next write; with the report annotation it
 * is only reported; with reads off nothing is ever read, and /status says so.
 */

const GIT_ENDPOINT = { id: "vpce-0a1b2c3d4e5f60718", description: "production VPC" };

const manifests = (annotation: string) => ({
  "org.yaml": `apiVersion: driftless/v1
kind: Organization
metadata:
  name: acme${annotation}
spec:
  organizationId: ${ids.organizationId}
  name: Acme Analytics
  privateEndpoints:
    - id: ${GIT_ENDPOINT.id}
      description: ${GIT_ENDPOINT.description}
`,
  "key.yaml": `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ci-deployer${annotation}
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ci-deployer
  roles: [developer]
  ipAccessList:
    - source: 203.0.113.0/24
      description: CI runners
`,
  "pipe.yaml": `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: orders${annotation}
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.kafkaPipeId}
  name: orders from kafka
  settings:
    streaming_max_insert_wait_ms: 5000
`,
  "dashboard.yaml": `apiVersion: driftless/v1
kind: Dashboard
metadata:
  name: overview${annotation}
spec:
  dashboardId: ${ids.dashboardId}
  name: Platform overview
  tags: [platform]
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
});

/** `metadata.name` lines get the annotation appended after them. */
const REPORT = "\n  annotations:\n    driftless/drift: report";

type World = {
  sim: Simulator;
  daemon: Daemon;
  registry: Registry;
  drifts: Array<{ status: ResourceStatus; fields: DriftEvent["fields"]; action: DriftEvent["action"] }>;
  logs: string[];
  status(): StatusDocument;
};

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(options: {
  reads: "on" | "off";
  annotation?: string;
  contract?: Contract;
}): Promise<World> {
  const sim = await startSimulator({
    contract: options.contract ?? "full",
    rateLimit: { management: false, observability: false },
    backupEveryMs: 0,
  });
  cleanups.push(() => sim.close());
  const root = await mkdtemp(join(tmpdir(), "driftless-drift-"));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const folder = join(root, "manifests");
  await mkdir(folder);
  for (const [file, yaml] of Object.entries(manifests(options.annotation ?? ""))) {
    await writeFile(join(folder, file), yaml);
  }
  const logs: string[] = [];
  const logger = createLogger(
    "info",
    new Writable({
      write(chunk, _encoding, done) {
        logs.push(String(chunk));
        done();
      },
    }),
  );
  const config = Config.parse({
    manifests: folder,
    stateDir: join(root, "state"),
    secretsDir: join(root, "secrets"),
    managementUrl: sim.managementUrl,
    observabilityUrl: sim.observabilityUrl,
    managementKeyId: { value: sim.credentials.managementKeyId },
    managementKeySecret: { value: sim.credentials.managementKeySecret },
    observabilityToken: { value: sim.credentials.observabilityToken },
    reads: options.reads,
  });
  // A wide budget: the test is about what is sent, not about waiting out the 10 s window.
  const budgets = { management: { requests: 1_000, windowMs: 1_000 } };
  const platform: Platform = await createPlatform(config, { logger, budgets });
  cleanups.push(() => platform.close());
  const store = createFileStore(config.stateDir, { logger });
  cleanups.push(() => store.close());
  const saved = new SavedRecords();
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: false });
  const drifts: World["drifts"] = [];
  const daemon = await startDaemon(
    fakeDaemonDeps(folder, {
      reconciler: createReconciler({
        manifests: folder,
        store: saved.recording(store),
        send: platform.send,
        secrets: { env: {}, secretsDir: config.secretsDir },
        logger,
        managementKeyId: platform.managementKeyId,
      }),
      loadManifests: async () => (await loadRevision(folder)).manifests,
      tileIdsOf: (name) => saved.tileIdsOf(name),
      records: () => saved.records(),
      platform: platform.client,
      registry,
      metrics,
      logger,
      notifier: {
        passFinished() {},
        drift: (status, fields, action) => drifts.push({ status, fields, action }),
      },
      settings: { reads: options.reads },
    }),
  );
  cleanups.push(async () => {
    await daemon.stop(5_000);
  });
  const status = () => daemon.board.snapshot(true);
  await until(() => daemon.board.ready && !daemon.loop.changePending);
  // The round the first pass starts (joined here): whatever it read was read before any edit.
  await daemon.poll();
  expect(status().resources.map((r) => [r.kind, r.status])).toEqual(
    expect.arrayContaining([
      ["Organization", "Synced"],
      ["ApiKey", "Synced"],
      ["DataPipe", "Synced"],
      ["Dashboard", "Synced"],
    ]),
  );
  return { sim, daemon, registry, drifts, logs, status };
}

/** Four edits made in the platform's console, behind driftless's back. */
function consoleEdits(sim: Simulator): void {
  const key = sim.state.keys.find((k) => k.id === ids.ciDeployerKeyId);
  const pipe = sim.state.pipes.find((p) => p.id === ids.kafkaPipeId);
  const org = sim.state.organizations.find((o) => o.id === ids.organizationId);
  const dashboard = sim.state.dashboards.find((d) => d.id === ids.dashboardId);
  const tile = dashboard?.tiles.find((t) => t.id === ids.tileIds[1]);
  if (!key || !pipe?.settings || !org || !tile) throw new Error("the fixture changed");
  key.name = "renamed in the console";
  pipe.settings.streaming_max_insert_wait_ms = 1;
  org.privateEndpoints = org.privateEndpoints.filter((e) => e.id !== GIT_ENDPOINT.id);
  tile.w = 12;
}

const byKind = (doc: StatusDocument, kind: string) => doc.resources.find((r) => r.kind === kind);
const driftCount = async (registry: Registry, kind: string) =>
  (await registry.getSingleMetric("driftless_drift_total")?.get())?.values.find((v) => v.labels.kind === kind)
    ?.value;

describe("drift with DRIFTLESS_READS=on against the full contract", () => {
  it("a console edit of a key, a pipe setting, a private endpoint and a tile is Drifted within one round, counted, notified and put back", async () => {
    const world = await start({ reads: "on" });
    const { sim, daemon } = world;
    for (const kind of ["Organization", "ApiKey", "DataPipe", "Dashboard"]) {
      expect(byKind(world.status(), kind)).toMatchObject({
        status: "Synced",
        verifiedAt: expect.any(String),
      });
    }

    consoleEdits(sim);
    sim.clearRequests();
    await daemon.poll();

    const drifted = world.status();
    expect(byKind(drifted, "ApiKey")).toMatchObject({
      status: "Drifted",
      drift: [{ path: "name", want: "ci-deployer", have: "renamed in the console" }],
    });
    expect(byKind(drifted, "DataPipe")?.drift).toEqual([
      { path: "settings.streaming_max_insert_wait_ms", want: 5000, have: 1 },
    ]);
    expect(byKind(drifted, "Organization")?.drift).toEqual([
      { path: `privateEndpoints[${GIT_ENDPOINT.id}]`, want: GIT_ENDPOINT, have: null },
    ]);
    expect(byKind(drifted, "Dashboard")?.drift).toEqual([{ path: "tiles[errors].w", want: 6, have: 12 }]);
    expect(byKind(drifted, "ApiKey")?.lastError).toContain(
      'name: git "ci-deployer", live "renamed in the console"',
    );
    // Only reads were sent to find it, each read once.
    expect(sim.requests.map((r) => r.method)).toEqual(["GET", "GET", "GET", "GET"]);
    for (const kind of ["Organization", "ApiKey", "DataPipe", "Dashboard"]) {
      expect(await driftCount(world.registry, kind)).toBe(1);
    }
    expect(world.drifts.map((d) => [d.status.kind, d.status.status, d.action]).sort()).toEqual([
      ["ApiKey", "Drifted", "correct"],
      ["Dashboard", "Drifted", "correct"],
      ["DataPipe", "Drifted", "correct"],
      ["Organization", "Drifted", "correct"],
    ]);

    // The next write puts every field back.
    await until(() => world.status().resources.every((r) => r.status === "Synced"));
    expect(sim.state.keys.find((k) => k.id === ids.ciDeployerKeyId)?.name).toBe("ci-deployer");
    expect(
      sim.state.pipes.find((p) => p.id === ids.kafkaPipeId)?.settings?.streaming_max_insert_wait_ms,
    ).toBe(5000);
    expect(sim.state.organizations[0]?.privateEndpoints).toContainEqual(GIT_ENDPOINT);
    const tile = sim.state.dashboards[0]?.tiles.find((t) => t.id === ids.tileIds[1]);
    expect(tile?.w).toBe(6);
    // A re-sent write names what it sent again.
    const applied = world.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === "resource applied");
    expect(applied.findLast((l) => l.resource === "ApiKey/ci-deployer")).toMatchObject({
      reasserted: true,
      fields: expect.arrayContaining(["name", "roles"]),
    });

    // The next round verifies it, and counts nothing more.
    await daemon.poll();
    expect(byKind(world.status(), "ApiKey")).toMatchObject({
      status: "Synced",
      verifiedAt: expect.any(String),
    });
    expect(byKind(world.status(), "ApiKey")?.drift).toBeUndefined();
    expect(await driftCount(world.registry, "ApiKey")).toBe(1);
  });

  it("with driftless/drift: report, a drift is reported and left as it is", async () => {
    const world = await start({ reads: "on", annotation: REPORT });
    consoleEdits(world.sim);
    world.sim.clearRequests();
    await world.daemon.poll();
    await until(() => !world.daemon.loop.changePending);
    await world.daemon.loop.idle();

    const doc = world.status();
    for (const kind of ["Organization", "ApiKey", "DataPipe", "Dashboard"]) {
      expect(byKind(doc, kind)).toMatchObject({ status: "Drifted", next: "operator" });
    }
    expect(byKind(doc, "ApiKey")?.lastError).toContain("reported, not corrected");
    expect(world.drifts.map((d) => d.action)).toEqual(["report", "report", "report", "report"]);
    expect(world.sim.requests.filter((r) => r.method !== "GET")).toEqual([]);
    expect(world.sim.state.keys.find((k) => k.id === ids.ciDeployerKeyId)?.name).toBe(
      "renamed in the console",
    );

    // Found again next round: still Drifted, counted and told once.
    await world.daemon.poll();
    expect(byKind(world.status(), "ApiKey")?.status).toBe("Drifted");
    expect(await driftCount(world.registry, "ApiKey")).toBe(1);
    expect(world.drifts).toHaveLength(4);
  });
});

describe("with DRIFTLESS_READS=on against a platform without reads", () => {
  it("a read that fails is that resource's transient problem: Synced, not verified, never Drifted nor a crash", async () => {
    const world = await start({ reads: "on", contract: "minimal" });
    await world.daemon.poll();

    const key = byKind(world.status(), "ApiKey");
    expect(key).toMatchObject({ status: "Synced", verifiedAt: null });
    expect(key?.note).toMatch(
      /^applied; not verified: its last read failed \(.*405.*does not serve the published contract's reads/,
    );
    expect(await driftCount(world.registry, "ApiKey")).toBe(0);
    expect(world.drifts).toEqual([]);
    expect(world.logs.some((line) => line.includes("read failed: tried again next round"))).toBe(true);
  });
});

describe("with DRIFTLESS_READS=off", () => {
  it("no read is ever sent, and /status says the live objects were not verified", async () => {
    const world = await start({ reads: "off" });
    consoleEdits(world.sim);
    world.sim.clearRequests();
    await world.daemon.poll();
    await world.daemon.poll();

    // No watches here: every request would be a read.
    expect(world.sim.requests).toEqual([]);
    const doc = world.status();
    expect(doc.reads).toBe("off");
    for (const kind of ["Organization", "ApiKey", "DataPipe", "Dashboard"]) {
      expect(byKind(doc, kind)).toMatchObject({
        status: "Synced",
        verifiedAt: null,
        note: expect.stringContaining("not verified"),
      });
    }
    expect(world.drifts).toEqual([]);
  });
});
