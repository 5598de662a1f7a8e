import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Poller } from "../src/daemon/polls.js";
import type { ManifestOf } from "../src/manifests/manifest.js";
import { createBudget } from "../src/platform/budget.js";
import { createPlatformClient } from "../src/platform/client.js";
import { createHttpClient } from "../src/platform/http.js";
import { basicAuthorization } from "../src/platform/management.js";
import { bearerAuthorization } from "../src/platform/observability.js";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createMetrics } from "../src/telemetry/metrics.js";

/** Alert and backup polls read the published contract's answers: alert links and states, backup statuses. */

const position = { file: "watches.yaml", line: 1, col: 1 };
const logger = createLogger("silent");
const HOUR = 3_600_000;

const dashboard = (dashboardId: string): ManifestOf<"Dashboard"> => ({
  kind: "Dashboard",
  name: "platform-overview",
  labels: {},
  annotations: {},
  position,
  spec: {
    dashboardId,
    name: "Platform overview",
    tiles: [
      { key: "ingest-lag", id: ids.tileIds[0], name: "Ingest lag", x: 0, y: 0, w: 6, h: 3, series: [] },
    ],
  },
});

const alertWatch: ManifestOf<"AlertWatch"> = {
  kind: "AlertWatch",
  name: "ingest-lag",
  labels: {},
  annotations: {},
  position,
  spec: { alertId: ids.alertId, dashboard: "platform-overview", tile: "ingest-lag" },
};

const backupWatch: ManifestOf<"BackupWatch"> = {
  kind: "BackupWatch",
  name: "analytics-backups",
  labels: {},
  annotations: {},
  position,
  spec: { organizationId: ids.organizationId, serviceId: ids.serviceId, maxAge: "26h" },
};

let simulator: Simulator;
let registry: Registry;
let poller: Poller;
const closers: Array<() => Promise<void>> = [];

beforeEach(async () => {
  simulator = await startSimulator({
    contract: "full",
    rateLimit: { management: false, observability: false },
    backupEveryMs: 0,
  });
  // Only the backups each test adds.
  simulator.state.backups.splice(0);
  registry = new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: false });
  const client = (api: "management" | "observability", baseUrl: string, authorization: string) =>
    createHttpClient({
      api,
      baseUrl,
      authorization: () => authorization,
      budget: createBudget({ requests: 1_000, windowMs: 1_000 }),
      metrics,
      logger,
      retry: { maxAttempts: 1 },
    });
  const management = client(
    "management",
    simulator.managementUrl,
    basicAuthorization(ids.managementKeyId, ids.managementKeySecret),
  );
  const observability = client(
    "observability",
    simulator.observabilityUrl,
    bearerAuthorization(ids.observabilityToken),
  );
  closers.push(
    () => management.close(),
    () => observability.close(),
  );
  poller = new Poller({
    platform: createPlatformClient({ management, observability }),
    tileIdsOf: async () => ({ "ingest-lag": ids.tileIds[0] }),
    metrics,
    logger,
  });
});

afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  await simulator.close();
});

async function series(name: string): Promise<string[]> {
  const text = await registry.metrics();
  return text.split("\n").filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

describe("alert polls of the published answer", () => {
  it("check the alert's dashboardId against the dashboard the watch names", async () => {
    const [matching] = await poller.poll([dashboard(ids.dashboardId), alertWatch]);
    const [other] = await poller.poll([dashboard("65f1a2b3c4d5e6f708190000"), alertWatch]);

    expect(matching?.status).toBe("Synced");
    expect(other?.status).toBe("Warning");
    expect(other?.message).toBe(
      `alert watches dashboard ${ids.dashboardId}, not 65f1a2b3c4d5e6f708190000 (Dashboard/platform-overview)`,
    );
    expect(other?.observed).toMatchObject({ dashboard: ids.dashboardId, tileId: ids.tileIds[0] });
  });

  it.each([
    ["ALERT", 1],
    ["OK", 0],
    ["INSUFFICIENT_DATA", 0],
    ["DISABLED", 0],
    ["PENDING", 0],
  ])("export state %s, firing %i with the default firing states", async (state, firing) => {
    simulator.setAlertState(ids.alertId, state);

    await poller.poll([dashboard(ids.dashboardId), alertWatch]);

    expect(await series("driftless_alert_state")).toEqual([
      `driftless_alert_state{alert="${ids.alertId}",name="ingest-lag",state="${state}"} 1`,
    ]);
    expect(await series("driftless_alert_firing")).toEqual([
      `driftless_alert_firing{alert="${ids.alertId}",name="ingest-lag"} ${firing}`,
    ]);
  });
});

describe("backup polls of the published answer", () => {
  const labels = `organization="${ids.organizationId}",service="${ids.serviceId}"`;

  it("never count a newer failed backup as fresh, and show the newest failure", async () => {
    const done = simulator.addBackup(ids.serviceId, new Date(Date.now() - 30 * HOUR));
    const failed = simulator.addBackup(ids.serviceId, new Date(Date.now() - HOUR), "error");

    const [status] = await poller.poll([backupWatch]);

    expect(status?.status).toBe("Warning");
    expect(status?.observed).toMatchObject({
      finishedAt: done.finishedAt,
      stale: true,
      lastError: failed.finishedAt,
    });
    expect(status?.message).toContain(`the newest backup, finished ${failed.finishedAt}, failed`);
    expect(await series("driftless_backup_last_finished_timestamp_seconds")).toEqual([
      `driftless_backup_last_finished_timestamp_seconds{${labels}} ${Date.parse(done.finishedAt) / 1000}`,
    ]);
    expect(await series("driftless_backup_failed")).toEqual([`driftless_backup_failed{${labels}} 1`]);
  });

  it("never count a backup in progress as finished", async () => {
    simulator.addBackup(ids.serviceId, new Date(), "in_progress");

    const [status] = await poller.poll([backupWatch]);

    expect(status?.status).toBe("Warning");
    expect(status?.observed).toMatchObject({ finishedAt: null, stale: true, lastError: null });
    expect(await series("driftless_backup_failed")).toEqual([`driftless_backup_failed{${labels}} 0`]);
  });

  it("are fresh again once a backup after the failure is done", async () => {
    simulator.addBackup(ids.serviceId, new Date(Date.now() - 2 * HOUR), "error");
    const done = simulator.addBackup(ids.serviceId, new Date(Date.now() - HOUR));

    const [status] = await poller.poll([backupWatch]);

    expect(status?.status).toBe("Synced");
    expect(status?.observed).toMatchObject({ finishedAt: done.finishedAt, stale: false });
    expect(await series("driftless_backup_failed")).toEqual([`driftless_backup_failed{${labels}} 0`]);
  });
});
