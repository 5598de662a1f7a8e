import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/** Tile ids never churn: the alert watching a tile survives edits, new tiles and restarts. */

const tile = (key: string, name: string, x: number, id?: string) =>
  `    - {key: ${key},${id ? ` id: "${id}",` : ""} name: "${name}", x: ${x}, y: 0, w: 4, h: 3, series: [{type: time, dataSource: events, aggFn: count, where: "kind:${key}"}]}`;

const dashboard = (tiles: string[], name = "Platform overview") =>
  `${header("Dashboard", "overview")}  dashboardId: ${ids.dashboardId}
  name: ${name}
  tiles:
${tiles.join("\n")}
`;

describe("dashboard tiles", () => {
  let world: EngineWorld;
  const liveTiles = () => world.sim.state.dashboards.find((d) => d.id === ids.dashboardId)?.tiles ?? [];
  const putTiles = () =>
    world
      .writes()
      .filter((r) => r.route === "/api/v2/dashboards/{id}")
      .map((r) => (r.body as { tiles: { id?: string; name: string }[] }).tiles);

  beforeEach(async () => {
    world = await startEngineWorld();
  });
  afterEach(() => world.close());

  it("keeps every tile id across edits, an added tile and restarts, and deletes no alert", async () => {
    await world.write(
      "d.yaml",
      dashboard([tile("lag", "Ingest lag", 0, ids.tileIds[0]), tile("new", "New tile", 4)]),
    );
    await world.apply();
    const firstIds = liveTiles().map((t) => t.id);

    await world.write(
      "d.yaml",
      dashboard(
        [tile("lag", "Ingest lag (renamed)", 0, ids.tileIds[0]), tile("new", "New tile, moved", 8)],
        "Renamed",
      ),
    );
    await world.apply();
    await world.write(
      "d.yaml",
      dashboard([
        tile("lag", "Ingest lag (renamed)", 0, ids.tileIds[0]),
        tile("extra", "Extra", 4),
        tile("new", "New tile, moved", 8),
      ]),
    );
    await world.apply();
    await world.apply();

    const finalTiles = liveTiles();
    expect(firstIds).toHaveLength(2);
    expect(finalTiles.find((t) => t.name === "Ingest lag (renamed)")?.id).toBe(ids.tileIds[0]);
    expect(finalTiles.find((t) => t.name === "New tile, moved")?.id).toBe(firstIds[1]);
    // Only the very first PUT carries a tile without id (each tile is new exactly once).
    const withoutId = putTiles().map((tiles) => tiles.filter((t) => t.id === undefined).map((t) => t.name));
    expect(withoutId).toEqual([["New tile"], [], ["Extra"]]);
    expect(world.sim.state.alerts.map((a) => a.id)).toContain(ids.alertId);
    const state = await world.state();
    expect(Object.keys(state.resources["Dashboard/overview"]?.tileIds ?? {}).sort()).toEqual([
      "extra",
      "lag",
      "new",
    ]);
  });

  it("never sends the tile key", async () => {
    await world.write("d.yaml", dashboard([tile("lag", "Ingest lag", 0, ids.tileIds[0])]));

    await world.apply();

    expect(JSON.stringify(world.writes().map((r) => r.body))).not.toContain('"key"');
  });
});
