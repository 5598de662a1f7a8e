import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Poller } from "../src/daemon/polls.js";
import type { Manifest, ManifestOf } from "../src/manifests/manifest.js";
import { createBudget } from "../src/platform/budget.js";
import { createPlatformClient } from "../src/platform/client.js";
import { createHttpClient } from "../src/platform/http.js";
import { basicAuthorization } from "../src/platform/management.js";
import { bearerAuthorization } from "../src/platform/observability.js";
import { defaultIds, type Simulator, startSimulator } from "../src/simulator/index.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createMetrics } from "../src/telemetry/metrics.js";

/** Alert and backup polls against the simulator over loopback, seen through the metrics exposition. */

const ids = defaultIds;
const position = { file: "watches.yaml", line: 1, col: 1 };
const logger = createLogger("silent");

const dashboard: ManifestOf<"Dashboard"> = {
  kind: "Dashboard",
  name: "platform-overview",
  labels: {},
  annotations: {},
  position,
  spec: {
    dashboardId: ids.dashboardId,
    name: "Platform overview",
    tiles: [
      { key: "ingest-lag", name: "Ingest lag", x: 0, y: 0, w: 6, h: 3, series: [] },
      { key: "errors", name: "Errors", x: 6, y: 0, w: 6, h: 3, series: [] },
    ],
  },
};

const alertWatch = (tile?: string): ManifestOf<"AlertWatch"> => ({
  kind: "AlertWatch",
  name: "ingest-lag",
  labels: {},
  annotations: {},
  position,
  spec: { alertId: ids.alertId, dashboard: "platform-overview", ...(tile ? { tile } : {}) },
});

const backupWatch = (maxAge: string): ManifestOf<"BackupWatch"> => ({
  kind: "BackupWatch",
  name: "analytics-backups",
  labels: {},
  annotations: {},
  position,
  spec: { organizationId: ids.organizationId, serviceId: ids.serviceId, maxAge },
});

let simulator: Simulator;
let registry: Registry;
let poller: Poller;
let tileIds: Record<string, string>;
const closers: Array<() => Promise<void>> = [];

beforeEach(async () => {
  simulator = await startSimulator({ rateLimit: { management: false, observability: false } });
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
  tileIds = { "ingest-lag": ids.tileIds[0], errors: ids.tileIds[1] };
  poller = new Poller({
    platform: createPlatformClient({ management, observability }),
    tileIdsOf: async (name) => (name === "platform-overview" ? { ...tileIds } : undefined),
    metrics,
    logger,
  });
});

afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  await simulator.close();
});

/** The exposition lines of one metric, without HELP/TYPE. */
async function series(name: string): Promise<string[]> {
  const text = await registry.metrics();
  return text.split("\n").filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

describe("alert polls", () => {
  it("export the alert's state and follow it, leaving no series of an old state", async () => {
    const manifests: Manifest[] = [dashboard, alertWatch("ingest-lag")];
    const first = await poller.poll(manifests);
    const before = await series("driftless_alert_state");

    simulator.setAlertState(ids.alertId, "ALERT");
    await poller.poll(manifests);
    const after = await series("driftless_alert_state");

    expect(first[0]?.status).toBe("Synced");
    expect(before).toEqual([`driftless_alert_state{alert="${ids.alertId}",name="ingest-lag",state="OK"} 1`]);
    expect(after).toEqual([
      `driftless_alert_state{alert="${ids.alertId}",name="ingest-lag",state="ALERT"} 1`,
    ]);
  });

  it("show a state the API does not name as it comes (docs/platform-apis.md#alert-states)", async () => {
    simulator.setAlertState(ids.alertId, "snoozed_until_monday");

    const [status] = await poller.poll([dashboard, alertWatch()]);

    expect(status?.observed?.state).toBe("snoozed_until_monday");
    expect(await series("driftless_alert_state")).toEqual([
      `driftless_alert_state{alert="${ids.alertId}",name="ingest-lag",state="snoozed_until_monday"} 1`,
    ]);
  });

  it("warn when the alert's tile is no longer in the dashboard the manifest names", async () => {
    tileIds = { errors: ids.tileIds[1] };

    const [status] = await poller.poll([dashboard, alertWatch()]);

    expect(status?.status).toBe("Warning");
    expect(status?.message).toContain(
      `alert watches tile ${ids.tileIds[0]}, which is no longer in Dashboard/platform-overview`,
    );
  });

  it("warn when the watch's tile key maps to another tile than the alert watches", async () => {
    const [status] = await poller.poll([dashboard, alertWatch("errors")]);

    expect(status?.status).toBe("Warning");
    expect(status?.message).toContain(`tile errors of Dashboard/platform-overview is ${ids.tileIds[1]}`);
  });

  it("fail, and drop the series, when the alert no longer exists", async () => {
    await poller.poll([dashboard, alertWatch()]);
    simulator.state.alerts.splice(0);

    const [status] = await poller.poll([dashboard, alertWatch()]);

    expect(status?.status).toBe("Failed");
    expect(status?.message).toMatch(
      /answered 404: alert \S+ does not exist; the alertId names no alert \(the platform deletes an alert when its tile disappears\): fix the id, or remove the watch$/,
    );
    expect(await series("driftless_alert_state")).toEqual([]);
    expect(await series("driftless_poll_total")).toContain('driftless_poll_total{result="error"} 1');
  });

  it("drop the series of a watch deleted from the manifests", async () => {
    await poller.poll([dashboard, alertWatch()]);

    await poller.poll([dashboard]);

    expect(await series("driftless_alert_state")).toEqual([]);
  });
});

describe("backup polls", () => {
  const labels = `organization="${ids.organizationId}",service="${ids.serviceId}"`;

  it("export the newest finished backup and whether it is older than maxAge", async () => {
    const newest = Date.parse(simulator.state.backups[0]?.finishedAt ?? "");

    const [fresh] = await poller.poll([backupWatch("26h")]);
    const freshSeries = await series("driftless_backup_stale");
    const [stale] = await poller.poll([backupWatch("30m")]);
    const staleSeries = await series("driftless_backup_stale");

    expect(fresh?.status).toBe("Synced");
    expect(await series("driftless_backup_last_finished_timestamp_seconds")).toEqual([
      `driftless_backup_last_finished_timestamp_seconds{${labels}} ${newest / 1000}`,
    ]);
    expect(await series("driftless_backup_last_size_bytes")).toEqual([
      `driftless_backup_last_size_bytes{${labels}} ${simulator.state.backups[0]?.sizeInBytes}`,
    ]);
    expect(freshSeries).toEqual([`driftless_backup_stale{${labels}} 0`]);
    expect(stale?.status).toBe("Warning");
    expect(stale?.message).toContain("older than maxAge 30m");
    expect(staleSeries).toEqual([`driftless_backup_stale{${labels}} 1`]);
  });

  it("follow a new backup as the platform adds it", async () => {
    await poller.poll([backupWatch("30m")]);

    const added = simulator.addBackup(ids.serviceId);
    const [status] = await poller.poll([backupWatch("30m")]);

    expect(status?.status).toBe("Synced");
    expect(await series("driftless_backup_last_finished_timestamp_seconds")).toEqual([
      `driftless_backup_last_finished_timestamp_seconds{${labels}} ${Date.parse(added.finishedAt) / 1000}`,
    ]);
    expect(await series("driftless_backup_stale")).toEqual([`driftless_backup_stale{${labels}} 0`]);
  });

  it("is stale with no finished backup at all", async () => {
    simulator.state.backups.splice(0);

    const [status] = await poller.poll([backupWatch("26h")]);

    expect(status?.status).toBe("Warning");
    expect(status?.message).toContain("no finished backup");
    expect(await series("driftless_backup_stale")).toEqual([`driftless_backup_stale{${labels}} 1`]);
    expect(await series("driftless_backup_last_finished_timestamp_seconds")).toEqual([]);
  });

  it("drop every backup series of a watch deleted from the manifests", async () => {
    await poller.poll([backupWatch("26h")]);

    await poller.poll([]);

    expect(await series("driftless_backup_stale")).toEqual([]);
    expect(await series("driftless_backup_last_finished_timestamp_seconds")).toEqual([]);
    expect(await series("driftless_backup_last_size_bytes")).toEqual([]);
  });
});

describe("a replica that stops leading", () => {
  it("removes every alert and backup series it exported", async () => {
    await poller.poll([dashboard, alertWatch(), backupWatch("26h")]);

    poller.clear();

    expect(await series("driftless_alert_state")).toEqual([]);
    expect(await series("driftless_backup_stale")).toEqual([]);
    expect(await series("driftless_backup_last_finished_timestamp_seconds")).toEqual([]);
  });
});
