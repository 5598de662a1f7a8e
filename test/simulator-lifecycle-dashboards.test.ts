import { describe, expect, it } from "vitest";
import { defaultIds as ids } from "../src/simulator/index.js";
import { useFullSimulator } from "./helpers/simulator-http.js";

/**
 * The published contract's dashboard lifecycle in the simulator's full mode: the create gives every
 * tile a new id, the delete takes the alerts of its tiles along and answers alike for an unknown id, a
 * PUT deletes the alerts of the tiles it leaves out (or makes unable to carry alerts), and the dry run
 * judges a body without storing it.
 */

const platform = useFullSimulator();
const dashboards = "/api/v2/dashboards";
const dashboard = `${dashboards}/${ids.dashboardId}`;
const [logs] = ids.sourceIds;

const tile = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  x: 0,
  y: 0,
  w: 6,
  h: 3,
  series: [{ type: "time", sourceId: logs, aggFn: "count", where: "level:error", groupBy: [] }],
  ...extra,
});
const configTile = (name: string) => ({
  name,
  x: 6,
  y: 0,
  w: 6,
  h: 3,
  config: { displayType: "number", sourceId: logs, select: [{ aggFn: "count" }] },
});

describe("creating a dashboard", () => {
  it("gives every tile a new id, keeps tags once each, and lists and reads it so", async () => {
    await platform.start();

    const created = await platform.observability("POST", dashboards, {
      name: "Checkout",
      tags: ["prod", "prod", "checkout"],
      tiles: [tile("Errors", { id: ids.tileIds[0] }), configTile("Orders")],
    });
    const { id, tiles } = created.json.data;
    const read = await platform.observability("GET", `${dashboards}/${id}`);
    const list = await platform.observability("GET", dashboards);

    expect(created.status).toBe(200);
    expect([created.requestIssues, created.answerIssues, list.answerIssues]).toEqual([[], [], []]);
    expect(tiles.map((t: { id: string }) => t.id)).not.toContain(ids.tileIds[0]);
    expect(new Set(tiles.map((t: { id: string }) => t.id)).size).toBe(2);
    expect(tiles[0].config).toMatchObject({ displayType: "line", sourceId: logs });
    expect(created.json.data.tags).toEqual(["prod", "checkout"]);
    expect(read.json).toEqual(created.json);
    expect(list.json.data.map((d: { name: string }) => d.name)).toEqual(["Platform overview", "Checkout"]);
  });

  it("refuses a source the team does not have, and two tiles with one id", async () => {
    await platform.start();
    const other = "65f1a2b3c4d5e6f7081929ff";

    const unknown = await platform.observability("POST", dashboards, {
      name: "x",
      tiles: [tile("a", { series: [{ ...tile("a").series[0], sourceId: other }] })],
    });
    const twice = await platform.observability("POST", dashboards, {
      name: "x",
      tiles: [tile("a", { id: "t1" }), tile("b", { id: "t1" })],
    });

    expect([unknown.requestIssues, twice.requestIssues]).toEqual([[], []]);
    expect(unknown.json).toEqual({ message: `Could not find the following source IDs: ${other}` });
    expect(twice.json).toEqual({ message: "Body validation failed: tiles: the id t1 is given to two tiles" });
  });
});

describe("deleting a dashboard", () => {
  it("deletes the alerts of its tiles too, and answers {} for an id the team does not have", async () => {
    const sim = await platform.start();

    const deleted = await platform.observability("DELETE", dashboard);
    const again = await platform.observability("DELETE", dashboard);
    const read = await platform.observability("GET", dashboard);

    expect([deleted.status, again.status]).toEqual([200, 200]);
    expect([deleted.json, again.json]).toEqual([{}, {}]);
    expect(deleted.answerIssues).toEqual([]);
    expect(read.status).toBe(404);
    expect(sim.state.alerts).toEqual([]);
  });
});

describe("replacing a dashboard", () => {
  const stored = () => platform.sim.state.dashboards[0]?.tiles ?? [];
  const keep = (index: number) => {
    const { id, name } = stored()[index] ?? {};
    return tile(name ?? "", { id });
  };

  it("deletes the alerts of a tile it leaves out", async () => {
    const sim = await platform.start();

    const put = await platform.observability("PUT", dashboard, {
      name: "Overview",
      tiles: [keep(1), keep(2)],
    });

    expect(put.status).toBe(200);
    expect(sim.state.alerts).toEqual([]);
  });

  it("deletes the alerts of a tile that becomes one that cannot carry alerts", async () => {
    const sim = await platform.start();
    const asTable = {
      ...keep(0),
      series: [{ type: "table", sourceId: logs, aggFn: "count", where: "", groupBy: ["service"] }],
    };

    await platform.observability("PUT", dashboard, { name: "Overview", tiles: [keep(0), keep(1), keep(2)] });
    const kept = sim.state.alerts.length;
    await platform.observability("PUT", dashboard, { name: "Overview", tiles: [asTable, keep(1), keep(2)] });

    expect(kept).toBe(1);
    expect(sim.state.alerts).toEqual([]);
  });
});

describe("the dashboard dry run", () => {
  it("judges a create body, always with 200, and stores nothing", async () => {
    const sim = await platform.start();

    const valid = await platform.observability("POST", `${dashboards}/validate`, {
      name: "Checkout",
      tiles: [configTile("Orders")],
    });
    const invalid = await platform.observability("POST", `${dashboards}/validate`, {
      name: "Checkout",
      tiles: [{ ...configTile("Orders"), x: 30 }],
    });
    const unknownSource = await platform.observability("POST", `${dashboards}/validate`, {
      name: "Checkout",
      tiles: [tile("a", { series: [{ ...tile("a").series[0], sourceId: "65f1a2b3c4d5e6f7081929ff" }] })],
    });

    expect(valid.json).toEqual({
      valid: true,
      errors: [],
      normalized: { name: "Checkout", tiles: [configTile("Orders")] },
    });
    expect(invalid.status).toBe(200);
    expect(invalid.json).toEqual({
      valid: false,
      errors: [{ path: "tiles.0.x", message: "must be at most 23" }],
      normalized: null,
    });
    expect(unknownSource.json.errors).toEqual([
      { path: "", message: "Could not find the following source IDs: 65f1a2b3c4d5e6f7081929ff" },
    ]);
    expect([valid.answerIssues, invalid.answerIssues]).toEqual([[], []]);
    expect(sim.state.dashboards).toHaveLength(1);
  });
});
