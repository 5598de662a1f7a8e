import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { keyHashes } from "../src/platform/management.js";
import { defaultIds as ids, startSimulator } from "../src/simulator/index.js";
import { estateFixture, estateIds } from "./helpers/estate.js";
import { basic, org, service, useFullSimulator } from "./helpers/simulator-http.js";

/**
 * The lifecycle's objects beyond their endpoints: a create or delete whose answer is lost (the unknown
 * outcome driftless must settle), console edits of alerts and webhooks (drift), the state file that
 * keeps them between runs, and an estate built through the fixture.
 */

const platform = useFullSimulator();

describe("a lost answer to a create or a delete", () => {
  it("with applied, the key exists and its secret works, though the caller never heard", async () => {
    const sim = await platform.start();
    sim.inject({
      api: "management",
      method: "POST",
      route: "/v1/organizations/{organizationId}/keys",
      kind: "drop",
      applied: true,
    });
    const made = { keyId: "LOSTANSWERKEY0001", keySecret: "lost-answer-secret" };

    const create = platform.management("POST", `${org}/keys`, {
      name: "lost",
      roles: ["developer"],
      hashData: keyHashes(made.keyId, made.keySecret),
    });

    await expect(create).rejects.toThrow();
    const list = await platform.management(
      "GET",
      `${org}/keys`,
      undefined,
      basic(made.keyId, made.keySecret),
    );
    expect(list.status).toBe(200);
    expect(list.json.result.map((k: { name: string }) => k.name)).toContain("lost");
  });

  it("without applied, a dropped delete deletes nothing; with applied, the dashboard and its alerts are gone", async () => {
    const sim = await platform.start();
    const route = "/api/v2/dashboards/{id}";
    sim.inject({ api: "observability", method: "DELETE", route, kind: "drop" });
    sim.inject({ api: "observability", method: "DELETE", route, kind: "drop", applied: true });
    const path = `/api/v2/dashboards/${ids.dashboardId}`;

    await expect(platform.observability("DELETE", path)).rejects.toThrow();
    const kept = sim.state.dashboards.length;
    await expect(platform.observability("DELETE", path)).rejects.toThrow();

    expect(kept).toBe(1);
    expect(sim.state.dashboards).toEqual([]);
    expect(sim.state.alerts).toEqual([]);
  });
});

describe("console edits of the lifecycle's objects", () => {
  it("change an alert's threshold and a webhook's url as the next read sees them, in process and over HTTP", async () => {
    const sim = await platform.start();

    const edit = (path: string, patch: unknown) =>
      fetch(`${sim.observabilityUrl}/__console/${path}`, { method: "PATCH", body: JSON.stringify(patch) });

    const edits = [
      await edit(`alerts/${ids.alertId}`, { threshold: 250 }),
      await edit(`webhooks/${ids.webhookId}`, { url: "https://hooks.example.com/changed" }),
    ];
    sim.consoleEdit({ collection: "alerts", id: ids.alertId }, { interval: "1h" });
    const alert = await platform.observability("GET", `/api/v2/alerts/${ids.alertId}`);
    const hooks = await platform.observability("GET", "/api/v2/webhooks");

    expect(edits.map((e) => e.status)).toEqual([200, 200]);
    expect(alert.json.data.interval).toBe("1h");
    expect(alert.json.data.threshold).toBe(250);
    expect(hooks.json.data[0].url).toBe("https://hooks.example.com/changed");
  });
});

describe("the state file", () => {
  it("keeps the objects the lifecycle made and deleted for the next run", async () => {
    const stateFile = join(await mkdtemp(join(tmpdir(), "driftless-sim-lifecycle-")), "platform.json");
    const first = await platform.start({ stateFile });
    const board = await platform.observability("POST", "/api/v2/dashboards", {
      name: "Kept",
      tiles: [
        {
          name: "t",
          x: 0,
          y: 0,
          w: 6,
          h: 3,
          config: { displayType: "number", sourceId: ids.sourceIds[0], select: [{ aggFn: "count" }] },
        },
      ],
    });
    const { id, tiles } = board.json.data;
    const alert = await platform.observability("POST", "/api/v2/alerts", {
      source: "tile",
      dashboardId: id,
      tileId: tiles[0].id,
      interval: "1h",
      threshold: 1,
      thresholdType: "above",
      channel: { type: "webhook", webhookId: ids.webhookId },
    });
    await platform.management("PATCH", `${service}/datapipes/${ids.kafkaPipeId}/state`, { command: "stop" });
    await platform.management("DELETE", `${service}/datapipes/${ids.kinesisPipeId}`);
    await first.close();

    const second = await startSimulator({ contract: "full", stateFile });
    const saved = JSON.parse(await readFile(stateFile, "utf8"));
    await second.close();

    expect(second.state.alerts.map((a) => a.id)).toContain(alert.json.data.id);
    expect(second.state.dashboards.map((d) => d.id)).toContain(id);
    expect(second.state.pipes.find((p) => p.id === ids.kafkaPipeId)?.state).toBe("Stopped");
    expect(second.state.pipes.map((p) => p.id)).not.toContain(ids.kinesisPipeId);
    expect(second.state.webhooks.map((w) => w.id)).toEqual([ids.webhookId]);
    expect(saved.keys.some((k: Record<string, unknown>) => "secret" in k)).toBe(false);
  });
});

describe("an estate through the fixture", () => {
  it("serves keys, pipes of every kind, dashboards in config form and more alerts than a page", async () => {
    await platform.start({ fixture: estateFixture({ keys: 40, pipes: 30, dashboards: 20, alerts: 1005 }) });

    const keys = await platform.management("GET", `${org}/keys`);
    const pipes = await platform.management("GET", `${service}/datapipes`);
    const dashboards = await platform.observability("GET", "/api/v2/dashboards");
    const firstPage = await platform.observability("GET", "/api/v2/alerts");
    const secondPage = await platform.observability("GET", "/api/v2/alerts?offset=1000");

    expect(keys.json.result).toHaveLength(42);
    expect(pipes.json.result).toHaveLength(34);
    expect(dashboards.json.data).toHaveLength(21);
    expect(
      dashboards.json.data.find((d: { id: string }) => d.id === estateIds.dashboard(0)).tiles[0].config,
    ).toMatchObject({ displayType: "line" });
    expect(firstPage.json.data).toHaveLength(1000);
    expect(firstPage.json.meta.total).toBe(1006);
    expect(secondPage.json.data).toHaveLength(6);
    expect([keys.answerIssues, pipes.answerIssues, dashboards.answerIssues, firstPage.answerIssues]).toEqual([
      [],
      [],
      [],
      [],
    ]);
  });
});
