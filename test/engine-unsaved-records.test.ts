import { afterEach, expect, it } from "vitest";
import { createPlatform } from "../src/commands/platform.js";
import { createReconciler } from "../src/reconcile/engine.js";
import { createFileStore } from "../src/state/file-store.js";
import type { StateStore } from "../src/state/store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/**
 * A daemon's reconciler keeps what it sent but could not save: the next pass never works from a state
 * older than what the platform has, and sends nothing more for such a resource until it is saved.
 */

const ROUTE = "/api/v2/dashboards/{id}";
const dashboard = `${header("Dashboard", "overview")}  dashboardId: ${ids.dashboardId}
  name: Platform overview
  tiles:
    - {key: lag, id: "${ids.tileIds[0]}", name: Ingest lag, x: 0, y: 0, w: 4, h: 3, series: [{type: time, dataSource: events, aggFn: count}]}
    - {key: new, name: New tile, x: 4, y: 0, w: 4, h: 3, series: [{type: time, dataSource: events, aggFn: count}]}
`;

let world: EngineWorld;
afterEach(() => world.close());

/** The file store, with saves failing while `broken.on` is true. */
function breakable(store: StateStore, broken: { on: boolean }): StateStore {
  return {
    load: () => store.load(),
    save: (state) => (broken.on ? Promise.reject(new Error("disk full")) : store.save(state)),
    close: () => store.close(),
    ensureWritable: () => store.ensureWritable(),
  };
}

it("keeps the tile id of a PUT whose save failed: no second PUT while unsaved, none after the save", async () => {
  world = await startEngineWorld();
  await world.write("d.yaml", dashboard);
  const logger = createLogger("silent");
  const broken = { on: true };
  const store = breakable(createFileStore(world.stateDir, { logger }), broken);
  const platform = await createPlatform(world.config, { logger });
  const reconciler = createReconciler({
    manifests: world.manifests,
    store,
    send: platform.send,
    secrets: { env: {}, secretsDir: world.secretsDir },
    logger,
  });
  const status = (result: { statuses: { kind: string; status: string; message?: string }[] }) =>
    result.statuses.find((s) => s.kind === "Dashboard");
  try {
    const first = await reconciler.pass({ trigger: "schedule" });
    const newTileId = world.sim.state.dashboards.find((d) => d.id === ids.dashboardId)?.tiles[1]?.id;

    const second = await reconciler.pass({ trigger: "schedule" });
    broken.on = false;
    const third = await reconciler.pass({ trigger: "schedule" });
    const fourth = await reconciler.pass({ trigger: "schedule" });

    expect(status(first)?.message).toContain("the state could not be saved");
    expect(status(second)?.status).toBe("Pending");
    expect(status(second)?.message).toContain("not saved yet");
    expect(status(third)?.status).toBe("Synced");
    expect(fourth.ok).toBe(true);
    expect(world.writes().filter((r) => r.route === ROUTE)).toHaveLength(1);
    expect(world.sim.state.dashboards.find((d) => d.id === ids.dashboardId)?.tiles[1]?.id).toBe(newTileId);
    expect((await world.state()).resources["Dashboard/overview"]?.tileIds?.new).toBe(newTileId);
  } finally {
    await platform.close();
  }
});
