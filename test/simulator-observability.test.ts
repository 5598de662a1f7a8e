import { afterEach, describe, expect, it } from "vitest";
import {
  defaultIds as ids,
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "../src/simulator/index.js";
import { until } from "./helpers/wait.js";

let sim: Simulator | undefined;
afterEach(() => sim?.close());

async function start(options: SimulatorOptions = {}) {
  sim = await startSimulator({ rateLimit: { observability: false }, ...options });
  return sim;
}

/** The fields these tests read of an answer (a dashboard, an alert, or an error's message). */
type Answer = {
  message: string;
  data: {
    id: string;
    name: string;
    state: string;
    tileId: string;
    updatedAt: string;
    tiles: { id: string }[];
  };
};

async function call(
  method: string,
  path: string,
  body?: unknown,
  authorization = "Bearer sim-observability-token",
) {
  if (!sim) throw new Error("start the simulator first");
  const response = await fetch(`${sim.observabilityUrl}${path}`, {
    method,
    headers: { authorization, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Answer };
}

const dashboard = `/api/v2/dashboards/${ids.dashboardId}`;
const alert = `/api/v2/alerts/${ids.alertId}`;
const [lagTile, errorsTile, eventsTile] = ids.tileIds;
const tile = (name: string, id?: string) => ({
  ...(id ? { id } : {}),
  name,
  x: 0,
  y: 0,
  w: 6,
  h: 3,
  series: [{ type: "time", dataSource: "events", aggFn: "count", where: "kind:lag", groupBy: [] }],
});

describe("PUT dashboard", () => {
  it("keeps the ids of known tiles and gives new ids to tiles without one", async () => {
    await start();

    const answer = await call("PUT", dashboard, {
      name: "Overview",
      tags: ["a"],
      tiles: [tile("Ingest lag", lagTile), tile("New")],
    });

    expect(answer.status).toBe(200);
    expect(answer.json.data).toMatchObject({ id: ids.dashboardId, name: "Overview", tags: ["a"] });
    expect(answer.json.data.tiles[0]?.id).toBe(lagTile);
    expect(answer.json.data.tiles[1]?.id).toMatch(/^[0-9a-f]{24}$/);
    expect(ids.tileIds).not.toContain(answer.json.data.tiles[1]?.id);
  });

  it("gives a new id to a tile whose id is unknown to the dashboard", async () => {
    await start();

    const answer = await call("PUT", dashboard, {
      name: "Overview",
      tiles: [tile("Lag", "65f1a2b3c4d5e6f7081929ff")],
    });

    expect(answer.json.data.tiles[0]?.id).not.toBe("65f1a2b3c4d5e6f7081929ff");
  });

  it("keeps an id once: a second tile sending the same id gets a new one", async () => {
    await start();

    const answer = await call("PUT", dashboard, {
      name: "Overview",
      tiles: [tile("A", lagTile), tile("B", lagTile)],
    });

    expect(answer.json.data.tiles[0]?.id).toBe(lagTile);
    expect(answer.json.data.tiles[1]?.id).not.toBe(lagTile);
  });

  it("deletes the alerts of a tile that is gone, so reading them answers 404", async () => {
    await start();

    await call("PUT", dashboard, {
      name: "Overview",
      tiles: [tile("Ingest lag"), tile("Errors", errorsTile)],
    });
    const read = await call("GET", alert);

    expect(read.status).toBe(404);
    expect(read.json).toEqual({ message: expect.stringContaining(ids.alertId) });
  });

  it("keeps the alerts of a tile that kept its id", async () => {
    await start();

    await call("PUT", dashboard, {
      name: "Overview",
      tiles: [tile("Ingest lag", lagTile), tile("Events", eventsTile)],
    });
    const read = await call("GET", alert);

    expect(read.status).toBe(200);
    expect(read.json.data.tileId).toBe(lagTile);
  });

  it.each([
    [{ name: "x", tiles: [{ ...tile("a"), x: 1.5 }] }, "tiles.0.x"],
    [{ name: "x", tiles: [{ ...tile("a"), colour: "red" }] }, "tiles.0.colour"],
    [
      { name: "x", tiles: [{ ...tile("a"), series: [{ type: "time", dataSource: "events" }] }] },
      "tiles.0.series.0.aggFn",
    ],
    [{ tiles: [] }, "name"],
    [{ name: "x", tiles: [], owner: "me" }, "owner"],
  ])("answers 400 {message} to %j naming %s", async (body, field) => {
    await start();

    const answer = await call("PUT", dashboard, body);

    expect(answer.status).toBe(400);
    expect(Object.keys(answer.json)).toEqual(["message"]);
    expect(answer.json.message.startsWith(`${field}:`)).toBe(true);
  });

  it("answers 404 {message} for an unknown route", async () => {
    await start();

    const answer = await call("GET", "/api/v2/dashboards");

    expect(answer.status).toBe(404);
    expect(Object.keys(answer.json)).toEqual(["message"]);
  });

  it("answers 404 for an unknown dashboard", async () => {
    await start();

    const answer = await call("PUT", "/api/v2/dashboards/000000000000000000000000", { name: "x", tiles: [] });

    expect(answer.status).toBe(404);
    expect(answer.json).toHaveProperty("message");
  });
});

describe("GET alert and auth", () => {
  it("reads an alert as {data}", async () => {
    await start();

    const answer = await call("GET", alert);

    expect(answer.status).toBe(200);
    expect(answer.json.data).toMatchObject({ id: ids.alertId, state: "OK", dashboard: ids.dashboardId });
  });

  it.each([
    ["no token", ""],
    ["a wrong token", "Bearer nope"],
    [
      "Basic credentials",
      `Basic ${Buffer.from(`${ids.managementKeyId}:sim-management-secret`).toString("base64")}`,
    ],
  ])("answers 401 {message} with %s", async (_name, authorization) => {
    await start();

    const answer = await call("GET", alert, undefined, authorization);

    expect(answer.status).toBe(401);
    expect(answer.json).toHaveProperty("message");
  });

  it("follows the alert script over time and out-of-band state changes", async () => {
    await start({
      alertScript: [
        { alertId: ids.alertId, afterMs: 20, state: "ALERT" },
        // Not reached while the test runs: what it checks is the first step, then a change by hand.
        { alertId: ids.alertId, afterMs: 600_000, state: "OK" },
      ],
    });

    const scripted = await until(async () => {
      const answer = await call("GET", alert);
      return answer.json.data.state === "ALERT" ? answer : undefined;
    });
    sim?.setAlertState(ids.alertId, "DISABLED");
    const changed = await call("GET", alert);

    expect(scripted.json.data.state).toBe("ALERT");
    expect(changed.json.data.state).toBe("DISABLED");
    expect(changed.json.data.updatedAt).not.toBe("2025-01-15T09:30:00.000Z");
  });

  it("refuses an alert script that names an unknown alert", async () => {
    await expect(
      startSimulator({ alertScript: [{ alertId: "nope", afterMs: 1, state: "ALERT" }] }),
    ).rejects.toThrow(/alert nope/);
  });
});
