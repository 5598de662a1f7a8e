import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ONE_BY_ONE, readAlertStates } from "../src/daemon/alert-states.js";
import type { ManifestOf } from "../src/manifests/manifest.js";
import { createBudget } from "../src/platform/budget.js";
import { createPlatformClient, type PlatformClient } from "../src/platform/client.js";
import { createHttpClient } from "../src/platform/http.js";
import { basicAuthorization } from "../src/platform/management.js";
import { bearerAuthorization } from "../src/platform/observability.js";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createMetrics } from "../src/telemetry/metrics.js";
import { estateFixture, estateIds } from "./helpers/estate.js";

/**
 * The live state of managed Alerts, read on the poll schedule for the status: a few by their GETs, many
 * from the team's alert list (every page), an alert driftless created by the id its record holds.
 */

const logger = createLogger("silent");
let simulator: Simulator;
let platform: PlatformClient;
const closers: Array<() => Promise<void>> = [];

beforeEach(async () => {
  simulator = await startSimulator({
    contract: "full",
    rateLimit: { management: false, observability: false },
    fixture: estateFixture({ dashboards: 2, alerts: 12 }),
  });
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
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
  platform = createPlatformClient({ management, observability });
});

afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  await simulator.close();
});

const position = { file: "alerts.yaml", line: 1, col: 1 };

/** A managed Alert of the n-th alert of the estate: adopted by id, or (created) known by its record. */
const managed = (n: number, adopted = true): ManifestOf<"Alert"> => ({
  kind: "Alert",
  name: `alert-${n}`,
  labels: {},
  annotations: {},
  position,
  spec: {
    ...(adopted ? { alertId: estateIds.alert(n) } : {}),
    interval: "5m",
    thresholdType: "above",
    threshold: n,
    savedSearchId: ids.savedSearchId,
    channel: { type: "webhook", webhookId: ids.webhookId },
  },
});

const reads = () => simulator.requests.map((r) => `${r.method} ${r.route}`);

describe("the live state of managed alerts", () => {
  it("reads a few alerts one GET each; an alert driftless created by its record's id", async () => {
    simulator.setAlertState(estateIds.alert(1), "ALERT");
    const records = async () => ({
      "Alert/alert-1": { kind: "Alert", name: "alert-1", serverId: estateIds.alert(1) },
    });

    const states = await readAlertStates([managed(0), managed(1, false)], { platform, records });

    expect(reads()).toEqual(["GET /api/v2/alerts/{id}", "GET /api/v2/alerts/{id}"]);
    expect(states.get("Alert/alert-0")?.observed).toEqual({
      state: "OK",
      tileId: estateIds.tile(0),
      dashboard: estateIds.dashboard(0),
    });
    expect(states.get("Alert/alert-1")?.observed).toMatchObject({ state: "ALERT" });
  });

  it(`picks more than ${ONE_BY_ONE} alerts from the team's list, every page, not a GET each`, async () => {
    const alerts = Array.from({ length: 12 }, (_, n) => managed(n));

    const states = await readAlertStates(alerts, { platform });

    expect(reads().every((read) => read === "GET /api/v2/alerts")).toBe(true);
    expect(reads().length).toBeGreaterThanOrEqual(1);
    expect([...states.keys()].sort()).toEqual(alerts.map((a) => `Alert/${a.name}`).sort());
    expect(states.get("Alert/alert-11")?.observed).toMatchObject({
      state: "OK",
      tileId: estateIds.tile(11 % 4),
    });
  });

  it("shows a failed read as that alert's state, and reads nothing for an alert not created yet", async () => {
    const gone = { ...managed(0), spec: { ...managed(0).spec, alertId: "65f1a2b3c4d5e6f7081900ff" } };

    const states = await readAlertStates([gone, managed(3, false)], { platform, records: async () => ({}) });

    expect(states.get("Alert/alert-0")?.observed.error).toMatch(/404/);
    expect(states.has("Alert/alert-3")).toBe(false);
  });
});
