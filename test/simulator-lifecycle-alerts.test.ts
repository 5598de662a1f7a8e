import { describe, expect, it } from "vitest";
import { defaultIds as ids } from "../src/simulator/index.js";
import { estateFixture, estateIds } from "./helpers/estate.js";
import { useFullSimulator } from "./helpers/simulator-http.js";

/**
 * The published contract's alerts and webhooks in the simulator's full mode: the paged list, the
 * create's rules and reference checks, the replace that is whole but for three fields, the deletes,
 * and the webhooks an alert's channel names.
 */

const platform = useFullSimulator();
const alerts = "/api/v2/alerts";
const webhooks = "/api/v2/webhooks";
const channel = { type: "webhook", webhookId: ids.webhookId };

const tileAlert = (extra: Record<string, unknown> = {}) => ({
  source: "tile",
  dashboardId: ids.dashboardId,
  tileId: ids.tileIds[1],
  interval: "5m",
  threshold: 10,
  thresholdType: "above",
  channel,
  name: "Errors",
  message: "Too many errors",
  ...extra,
});

describe("the alert list", () => {
  it("answers pages by id, with the total in meta and in X-Total-Count", async () => {
    await platform.start({ fixture: estateFixture({ dashboards: 3, alerts: 7 }) });

    const first = await platform.observability("GET", `${alerts}?limit=3`);
    const last = await platform.observability("GET", `${alerts}?limit=3&offset=6`);
    const all = await platform.observability("GET", alerts);

    const everyId = [ids.alertId, ...Array.from({ length: 7 }, (_, n) => estateIds.alert(n))].sort();
    expect(first.json.data.map((a: { id: string }) => a.id)).toEqual(everyId.slice(0, 3));
    expect(first.json.meta).toEqual({ total: 8, limit: 3, offset: 0 });
    expect(first.headers.get("x-total-count")).toBe("8");
    expect(last.json.data.map((a: { id: string }) => a.id)).toEqual(everyId.slice(6));
    expect(all.json.meta).toEqual({ total: 8, limit: 1000, offset: 0 });
    expect(all.json.data).toHaveLength(8);
    expect([first.requestIssues, first.answerIssues, all.answerIssues]).toEqual([[], [], []]);
  });

  it("refuses a limit outside 1 to 1000 and a negative offset", async () => {
    await platform.start();

    const answers = [
      await platform.observability("GET", `${alerts}?limit=0`),
      await platform.observability("GET", `${alerts}?limit=1001`),
      await platform.observability("GET", `${alerts}?offset=-1`),
      await platform.observability("GET", `${alerts}?limit=ten`),
    ];

    expect(answers.map((a) => a.status)).toEqual([400, 400, 400, 400]);
    expect(answers.map((a) => a.json.message)).toEqual([
      "Query validation failed: limit: must be at least 1",
      "Query validation failed: limit: must be at most 1000",
      "Query validation failed: offset: must be at least 0",
      "Query validation failed: limit: must be integer",
    ]);
  });
});

describe("creating an alert", () => {
  it("makes an alert on a tile, answered with the published names, and read alike", async () => {
    await platform.start();

    const created = await platform.observability("POST", alerts, tileAlert());
    const read = await platform.observability("GET", `${alerts}/${created.json.data.id}`);

    expect(created.status).toBe(200);
    expect([created.requestIssues, created.answerIssues]).toEqual([[], []]);
    expect(created.json.data).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      source: "tile",
      dashboardId: ids.dashboardId,
      tileId: ids.tileIds[1],
      teamId: ids.teamId,
      channel,
      channels: [channel],
      state: "OK",
      savedSearchId: null,
      note: null,
    });
    expect(read.json).toEqual(created.json);
  });

  it.each([
    ["a dashboard id that is no object id", { dashboardId: "board" }, "Invalid dashboard ID"],
    [
      "a dashboard the team does not have",
      { dashboardId: "65f1a2b3c4d5e6f7081929ff" },
      "Dashboard not found",
    ],
    ["a tile the dashboard does not have", { tileId: "65f1a2b3c4d5e6f7081929ff" }, "Tile not found"],
    [
      "a tile that cannot carry alerts",
      { tileId: "search" },
      "Alerts are only supported on line, stacked_bar and number tiles",
    ],
    [
      "a saved search the team does not have",
      { source: "saved_search", savedSearchId: "65f1a2b3c4d5e6f7081929ff", dashboardId: null, tileId: null },
      "Saved search not found",
    ],
    [
      "a webhook the team does not have",
      { channel: { type: "webhook", webhookId: "65f1a2b3c4d5e6f7081929ff" } },
      "Webhook not found",
    ],
    [
      "a webhook id that is no object id",
      { channels: [{ type: "webhook", webhookId: "hook" }], channel: undefined },
      "Invalid webhook ID",
    ],
  ])("refuses %s", async (_name, extra, message) => {
    const sim = await platform.start();
    const board = sim.state.dashboards[0];
    if (board)
      board.tiles.push({
        id: "search",
        name: "Logs",
        x: 0,
        y: 6,
        w: 24,
        h: 4,
        config: { displayType: "search" },
      });

    const answer = await platform.observability("POST", alerts, tileAlert(extra));

    expect(answer.status).toBe(400);
    expect(answer.requestIssues).toEqual([]);
    expect(answer.json).toEqual({ message });
    expect(sim.state.alerts).toHaveLength(1);
  });

  it("makes a saved-search alert, keeping its groupBy", async () => {
    await platform.start();

    const created = await platform.observability("POST", alerts, {
      ...tileAlert({ dashboardId: undefined, tileId: undefined }),
      source: "saved_search",
      savedSearchId: ids.savedSearchId,
      groupBy: "service",
    });

    expect(created.json.data).toMatchObject({
      savedSearchId: ids.savedSearchId,
      groupBy: "service",
      tileId: null,
    });
  });

  it.each([
    [
      "channel that is not channels[0]",
      { channels: [{ type: "webhook", webhookId: "65f1a2b3c4d5e6f7081929ff" }] },
      "channel: must equal channels[0] when both are sent",
    ],
    [
      "thresholdMax below threshold",
      { thresholdType: "between", thresholdMax: 5 },
      "thresholdMax: must be at least threshold",
    ],
    [
      "an offset as long as the interval",
      { scheduleOffsetMinutes: 5 },
      "scheduleOffsetMinutes: must be less than the interval (5 minutes)",
    ],
    [
      "an offset beside scheduleStartAt",
      { scheduleOffsetMinutes: 2, scheduleStartAt: new Date().toISOString() },
      "scheduleOffsetMinutes: must be 0 when scheduleStartAt is set",
    ],
    [
      "a start more than a year ahead",
      { scheduleStartAt: "2999-01-01T00:00:00Z" },
      "scheduleStartAt: must be at most 1 year ahead and 10 years back",
    ],
  ])("refuses a %s", async (_name, extra, rule) => {
    await platform.start();

    const answer = await platform.observability("POST", alerts, tileAlert(extra));

    expect(answer.status).toBe(400);
    expect(answer.requestIssues).toEqual([]);
    expect(answer.json.message).toBe(`Body validation failed: ${rule}`);
  });

  it("refuses a body without source, whatever default the document declares", async () => {
    await platform.start();

    const answer = await platform.observability("POST", alerts, tileAlert({ source: undefined }));

    expect(answer.status).toBe(400);
    expect(answer.json.message).toMatch(/^Body validation failed: .*source: is required/);
  });
});

describe("replacing an alert", () => {
  const alert = `${alerts}/${ids.alertId}`;
  const whole = {
    source: "tile",
    dashboardId: ids.dashboardId,
    tileId: ids.tileIds[0],
    interval: "15m",
    threshold: 150,
    thresholdType: "above",
    channel,
  };

  it("clears what the body leaves out, and channel alone drops the other channels", async () => {
    const sim = await platform.start();
    sim.state.webhooks.push({
      ...sim.state.webhooks[0],
      id: "65f1a2b3c4d5e6f708192a62",
      name: "second",
    } as never);
    const first = await platform.observability("PUT", alert, {
      ...whole,
      channels: [channel, { type: "webhook", webhookId: "65f1a2b3c4d5e6f708192a62" }],
      note: "see the runbook",
      numConsecutiveWindows: 3,
    });

    const replaced = await platform.observability("PUT", alert, whole);

    expect(first.json.data).toMatchObject({ note: "see the runbook", numConsecutiveWindows: 3 });
    expect(first.json.data.channels).toHaveLength(2);
    expect(replaced.status).toBe(200);
    expect([replaced.requestIssues, replaced.answerIssues]).toEqual([[], []]);
    expect(replaced.json.data).toMatchObject({
      threshold: 150,
      interval: "15m",
      name: null,
      message: null,
      note: null,
      numConsecutiveWindows: null,
      channels: [channel],
      state: "OK",
    });
  });

  it("keeps thresholdMax and scheduleStartAt when left out, and the offset only while scheduleStartAt is", async () => {
    await platform.start();
    const startAt = new Date(Date.now() - 3_600_000).toISOString();
    await platform.observability("PUT", alert, {
      ...whole,
      thresholdType: "between",
      thresholdMax: 200,
      scheduleOffsetMinutes: 4,
    });

    const leftOut = await platform.observability("PUT", alert, {
      ...whole,
      thresholdType: "between",
      thresholdMax: 200,
    });
    const maxLeftOut = await platform.observability("PUT", alert, whole);
    const started = await platform.observability("PUT", alert, { ...whole, scheduleStartAt: startAt });
    const startKept = await platform.observability("PUT", alert, { ...whole, scheduleOffsetMinutes: 0 });
    const cleared = await platform.observability("PUT", alert, { ...whole, scheduleStartAt: null });

    expect(leftOut.json.data.scheduleOffsetMinutes).toBe(4);
    expect(maxLeftOut.json.data.thresholdMax).toBe(200);
    expect(started.json.data).toMatchObject({ scheduleStartAt: startAt, scheduleOffsetMinutes: 0 });
    expect(startKept.json.data.scheduleStartAt).toBe(startAt);
    expect(cleared.json.data.scheduleStartAt).toBeNull();
  });

  it("answers 404 {message} to a replace and a delete of an unknown alert", async () => {
    await platform.start();
    const unknown = `${alerts}/65f1a2b3c4d5e6f7081929ff`;

    const put = await platform.observability("PUT", unknown, whole);
    const deleted = await platform.observability("DELETE", unknown);

    expect([put.status, deleted.status]).toEqual([404, 404]);
    expect(deleted.json).toEqual({ message: "alert 65f1a2b3c4d5e6f7081929ff does not exist" });
    expect(deleted.answerIssues).toEqual([]);
  });
});

describe("deleting an alert", () => {
  it("answers {}, after which the alert reads 404", async () => {
    await platform.start();

    const deleted = await platform.observability("DELETE", `${alerts}/${ids.alertId}`);
    const read = await platform.observability("GET", `${alerts}/${ids.alertId}`);

    expect(deleted.json).toEqual({});
    expect(deleted.answerIssues).toEqual([]);
    expect(read.status).toBe(404);
  });
});

describe("webhooks", () => {
  const generic = { name: "pager", service: "generic", url: "https://hooks.example.com/pager", body: "{}" };

  it("makes one whose headers are never answered, lists them by page, and refuses a name twice", async () => {
    const sim = await platform.start();

    const created = await platform.observability("POST", webhooks, {
      ...generic,
      headers: { authorization: "Bearer webhook-canary" },
    });
    const list = await platform.observability("GET", `${webhooks}?limit=1&offset=1`);
    const twice = await platform.observability("POST", webhooks, { ...generic, name: " pager " });

    expect(created.status).toBe(200);
    expect([created.requestIssues, created.answerIssues, list.answerIssues]).toEqual([[], [], []]);
    expect(created.json.data).toMatchObject({ name: "pager", url: generic.url, body: "{}" });
    expect(list.json).toEqual({ data: [created.json.data], meta: { total: 2, limit: 1, offset: 1 } });
    expect(twice.json).toEqual({ message: "A webhook with this service and name already exists" });
    expect(JSON.stringify([created.json, sim.state])).not.toContain("webhook-canary");
  });

  it.each([
    [
      "a private address",
      { url: "http://10.1.2.3/hook" },
      "URL must not point to a local, private or reserved address",
    ],
    [
      "this host",
      { url: "http://localhost:8080/hook" },
      "URL must not point to a local, private or reserved address",
    ],
    [
      "a Slack webhook off slack.com",
      { service: "slack", url: "https://hooks.example.com/x", body: undefined },
      "Slack webhook URLs must be on slack.com",
    ],
  ])("refuses %s", async (_name, extra, message) => {
    await platform.start();

    const answer = await platform.observability("POST", webhooks, { ...generic, ...extra });

    expect(answer.status).toBe(400);
    expect(answer.requestIssues).toEqual([]);
    expect(answer.json).toEqual({ message });
  });

  it("refuses headers on a Slack webhook, by the document", async () => {
    await platform.start();

    const answer = await platform.observability("POST", webhooks, {
      name: "team",
      service: "slack",
      url: "https://hooks.slack.com/services/T/B/X",
      headers: { "x-token": "t" },
    });

    expect(answer.status).toBe(400);
    expect(answer.requestIssues).not.toEqual([]);
  });

  it("is not deleted (409) while an alert notifies it, and is once the alert points elsewhere", async () => {
    await platform.start();
    const other = await platform.observability("POST", webhooks, generic);
    const hook = `${webhooks}/${ids.webhookId}`;

    const refused = await platform.observability("DELETE", hook);
    await platform.observability("PUT", `${alerts}/${ids.alertId}`, {
      ...tileAlert({ tileId: ids.tileIds[0] }),
      channel: { type: "webhook", webhookId: other.json.data.id },
    });
    const deleted = await platform.observability("DELETE", hook);
    const again = await platform.observability("DELETE", hook);

    expect(refused.status).toBe(409);
    expect(refused.json.message).toMatch(/channel of alert 65f1a2b3c4d5e6f708192a51/);
    expect(deleted.json).toEqual({});
    expect(again.status).toBe(404);
  });

  it("answers a body for a generic webhook only", async () => {
    await platform.start();

    const incident = await platform.observability("POST", webhooks, {
      ...generic,
      service: "incidentio",
      url: "https://api.incident.io/v2/alert_events/http/x",
    });

    expect(incident.status).toBe(200);
    expect(incident.json.data).not.toHaveProperty("body");
  });

  it("clears description and body left out of a replace", async () => {
    await platform.start();
    const created = await platform.observability("POST", webhooks, {
      ...generic,
      description: "pages the on-call",
    });

    const replaced = await platform.observability("PUT", `${webhooks}/${created.json.data.id}`, {
      name: "pager",
      service: "generic",
      url: generic.url,
    });

    expect(replaced.json.data).not.toHaveProperty("description");
    expect(replaced.json.data).not.toHaveProperty("body");
    expect(replaced.json.data.id).toBe(created.json.data.id);
  });
});
