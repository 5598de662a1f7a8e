import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Daemon, startDaemon } from "../src/daemon/daemon.js";
import { StateError } from "../src/errors.js";
import type { ManifestOf } from "../src/manifests/manifest.js";
import type { Answer, PlatformClient } from "../src/platform/client.js";
import type { AlertAnswer } from "../src/platform/observability.js";
import { createFileStore } from "../src/state/file-store.js";
import { SavedRecords } from "../src/state/saved-records.js";
import type { State, StateStore } from "../src/state/store.js";
import { fakeDaemonDeps, passResult } from "./helpers/fake-daemon.js";
import { until } from "./helpers/wait.js";

/**
 * The tile ids an alert poll checks a watch against come from what the reconciler last loaded or saved
 * (SavedTileIds, as `driftless run` wires it): the daemon's poll rounds over a real folder store whose
 * loads are counted, a reconciler that records a dashboard's tile ids, and an alert API the test plays.
 */

const TILE = "65f1a2b3c4d5e6f708192a41";
const position = { file: "m.yaml", line: 1, col: 1 };
const dashboard = {
  kind: "Dashboard",
  name: "edge",
  labels: {},
  annotations: {},
  position,
  spec: {
    dashboardId: "65f1a2b3c4d5e6f708192a31",
    name: "Edge",
    tiles: [{ key: "lag", name: "Lag", x: 0, y: 0, w: 6, h: 3, series: [] }],
  },
} as ManifestOf<"Dashboard">;
const watch = {
  kind: "AlertWatch",
  name: "ingest-lag",
  labels: {},
  annotations: {},
  position,
  spec: { alertId: "65f1a2b3c4d5e6f708192a51", dashboard: "edge", tile: "lag" },
} as ManifestOf<"AlertWatch">;

/** The alert API, counting its reads: the watched alert is on `TILE` of the dashboard. */
function alertApi() {
  const reads = { count: 0 };
  const platform = {
    call: ((name: string, params: { id: string }): Promise<Answer<AlertAnswer>> => {
      if (name !== "getAlert") return Promise.reject(new Error("no backups here"));
      reads.count += 1;
      return Promise.resolve({ result: { id: params.id, state: "OK", tileId: TILE } });
    }) as PlatformClient["call"],
  };
  return { platform, reads };
}

const daemons: Daemon[] = [];
const stores: StateStore[] = [];
const roots: string[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop(1_000)));
  await Promise.all(stores.splice(0).map((s) => s.close()));
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});

/** The dashboard's record once applied. */
const applied = { kind: "Dashboard", name: "edge", tileIds: { lag: TILE } };

/**
 * A daemon whose passes load the state, record the dashboard's tile ids and save, through a folder
 * store whose loads are counted; `gate` holds each pass back until it resolves. `saved`: the folder
 * holds the dashboard's record from an earlier process.
 */
async function start(gate: () => Promise<void> = async () => {}, saved = false) {
  const [manifests, stateDir] = await Promise.all(
    ["driftless-poll-tile-ids-", "driftless-poll-tile-ids-state-"].map((prefix) =>
      mkdtemp(join(tmpdir(), prefix)),
    ),
  );
  roots.push(manifests as string, stateDir as string);
  if (saved) {
    const earlier = createFileStore(stateDir as string);
    const state = await earlier.load();
    await earlier.save({ ...state, resources: { "Dashboard/edge": applied } });
    await earlier.close();
  }
  const folder = createFileStore(stateDir as string);
  stores.push(folder);
  const counted = { loads: 0 };
  const tileIds = new SavedRecords();
  const store = tileIds.recording({
    ...folder,
    load: () => {
      counted.loads += 1;
      return folder.load();
    },
  });
  const { platform, reads } = alertApi();
  const daemon = await startDaemon(
    fakeDaemonDeps(manifests as string, {
      reconciler: {
        async pass() {
          await gate();
          const state = await store.load();
          state.resources["Dashboard/edge"] = applied;
          await store.save(state);
          return passResult([{ kind: "Dashboard", name: "edge", status: "Synced", next: "done" }]);
        },
      },
      loadManifests: async () => [dashboard, watch],
      tileIdsOf: (name) => tileIds.tileIdsOf(name),
      platform,
    }),
  );
  daemons.push(daemon);
  const watchStatus = () => daemon.board.statuses().find((s) => s.kind === "AlertWatch");
  return { daemon, counted, reads, watchStatus };
}

describe("an alert poll round checking a watch's tile", () => {
  it("never loads the state: it takes the tile ids the last pass saved", async () => {
    const { daemon, counted, watchStatus } = await start();
    await until(() => daemon.board.ready);
    const loadsAfterPass = counted.loads;

    for (let round = 0; round < 5; round++) await daemon.poll();

    expect(loadsAfterPass).toBe(1);
    expect(counted.loads).toBe(1);
    expect(watchStatus()).toMatchObject({ status: "Synced" });
  });

  it("asked for before the first pass has loaded, waits for that pass's load rather than loading", async () => {
    // The tile ids are in the state from an earlier process: the pass's load brings them.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { daemon, counted, reads, watchStatus } = await start(() => held, true);

    let answered = false;
    const round = daemon.poll().then(() => {
      answered = true;
    });
    await until(() => reads.count > 0);
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    const loadsWhileWaiting = counted.loads;
    const answeredBeforePass = answered;
    release();
    await round;

    expect(answeredBeforePass).toBe(false);
    expect(loadsWhileWaiting).toBe(0);
    expect(counted.loads).toBe(1);
    expect(watchStatus()).toMatchObject({ status: "Synced" });
    expect(watchStatus()?.message).toBeUndefined();
  });
});

describe("the tile ids kept for the polls", () => {
  /** A store in memory whose next load fails when `failing` is set. */
  function memoryStore(resources: State["resources"]) {
    const control = { failing: false };
    const store: StateStore = {
      load: async () => {
        if (control.failing) throw new StateError("cannot read the state");
        return { version: 1, salt: "s", resources: { ...resources } };
      },
      save: async () => {},
      ensureWritable: async () => {},
      close: async () => {},
    };
    return { store, control };
  }

  it("are forgotten when leadership is lost: the next term's rounds wait for its first load", async () => {
    const tileIds = new SavedRecords();
    const { store } = memoryStore({ "Dashboard/edge": applied });
    const reconcilerStore = tileIds.recording(store);
    await reconcilerStore.load();

    tileIds.forget();
    let answer: Record<string, string> | undefined | "waiting" = "waiting";
    const asked = tileIds.tileIdsOf("edge").then((found) => {
      answer = found;
    });
    await new Promise((resolve) => setImmediate(resolve));
    const beforeLoad = answer;
    await reconcilerStore.load();
    await asked;

    expect(beforeLoad).toBe("waiting");
    expect(answer).toEqual({ lag: TILE });
  });

  it("answer a round waiting on a load that fails with none, as a failed read of the state did", async () => {
    const tileIds = new SavedRecords();
    const { store, control } = memoryStore({ "Dashboard/edge": applied });
    control.failing = true;

    const asked = tileIds.tileIdsOf("edge");
    await tileIds
      .recording(store)
      .load()
      .catch(() => {});

    expect(await asked).toBeUndefined();
  });

  it("are handed out as a copy: a round that adds to them changes nothing for the next", async () => {
    const tileIds = new SavedRecords();
    await tileIds.recording(memoryStore({ "Dashboard/edge": applied }).store).load();

    const first = await tileIds.tileIdsOf("edge");
    if (first) first.errors = "65f1a2b3c4d5e6f708192a42";

    expect(await tileIds.tileIdsOf("edge")).toEqual({ lag: TILE });
    expect(await tileIds.tileIdsOf("other")).toBeUndefined();
  });

  it("are noted from a save only once it landed", async () => {
    const tileIds = new SavedRecords();
    const { store } = memoryStore({});
    const refusing = tileIds.recording({
      ...store,
      save: async () => {
        throw new StateError("no longer the leader");
      },
    });
    await refusing.load();

    await refusing.save({ version: 1, salt: "s", resources: { "Dashboard/edge": applied } }).catch(() => {});

    expect(await tileIds.tileIdsOf("edge")).toBeUndefined();
  });
});
