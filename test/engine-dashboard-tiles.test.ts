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

  it("keeps the id the platform gave a tile whose adopted id named no tile, across later edits", async () => {
    const stale = "65f1a2b3c4d5e6f708192aff";
    await world.write(
      "d.yaml",
      dashboard([tile("lag", "Ingest lag", 0, ids.tileIds[0]), tile("gone", "Gone", 4, stale)]),
    );
    await world.apply();
    const given = liveTiles().find((t) => t.name === "Gone")?.id;

    await world.write(
      "d.yaml",
      dashboard([tile("lag", "Ingest lag", 0, ids.tileIds[0]), tile("gone", "Gone, moved", 8, stale)]),
    );
    await world.apply();

    expect(given).toBeDefined();
    expect(given).not.toBe(stale);
    expect(liveTiles().find((t) => t.name === "Gone, moved")?.id).toBe(given);
    const state = await world.state();
    expect(state.resources["Dashboard/overview"]?.tileIds?.gone).toBe(given);
  });

  it("keeps a tile's id when only its key is renamed", async () => {
    await world.write(
      "d.yaml",
      dashboard([tile("lag", "Ingest lag", 0, ids.tileIds[0]), tile("new", "New tile", 4)]),
    );
    await world.apply();
    const given = liveTiles().find((t) => t.name === "New tile")?.id;
    world.sim.clearRequests();

    await world.write(
      "d.yaml",
      dashboard([tile("lag", "Ingest lag", 0, ids.tileIds[0]), tile("renamed", "New tile", 6)]),
    );
    const plan = await world.plan();
    await world.apply();

    expect(putTiles().map((tiles) => tiles.map((t) => t.id))).toEqual([[ids.tileIds[0], given]]);
    expect(liveTiles().find((t) => t.name === "New tile")?.id).toBe(given);
    const state = await world.state();
    expect(state.resources["Dashboard/overview"]?.tileIds).toEqual({ lag: ids.tileIds[0], renamed: given });
    const changes = plan.resources[0]?.changes ?? [];
    expect(changes).toContainEqual({ path: "tiles[renamed].key", from: "new", to: "renamed", op: "set" });
    expect(changes.filter((c) => c.op !== "set")).toEqual([]);
  });

  it("sends a newly adopted tile id even after an earlier adoption of that tile key failed", async () => {
    const stale = "65f1a2b3c4d5e6f708192aff";
    const consoleTile = "65f1a2b3c4d5e6f708192abc";
    await world.write(
      "d.yaml",
      dashboard([tile("lag", "Ingest lag", 0, ids.tileIds[0]), tile("gone", "Gone", 4, stale)]),
    );
    await world.apply();
    // Someone adds a tile in the console, after driftless's last answer.
    const live = world.sim.state.dashboards.find((d) => d.id === ids.dashboardId);
    const [first] = live?.tiles ?? [];
    if (live && first) live.tiles.push({ ...first, id: consoleTile, name: "From the console" });
    world.sim.clearRequests();

    await world.write(
      "d.yaml",
      dashboard([tile("lag", "Ingest lag", 0, ids.tileIds[0]), tile("gone", "Adopted", 4, consoleTile)]),
    );
    await world.apply();

    expect(putTiles().map((tiles) => tiles.map((t) => t.id))).toEqual([[ids.tileIds[0], consoleTile]]);
    expect(liveTiles().find((t) => t.name === "Adopted")?.id).toBe(consoleTile);
  });
});
