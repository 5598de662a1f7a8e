import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";
import { platformEnv } from "./helpers/platform-env.js";

/**
 * A plan names the alerts the platform deletes with what it sends: the managed Alert whose tile a
 * dashboard's PUT leaves out (from the state), and with reads on the alerts driftless does not manage
 * (from the team's alert list); a dashboard's delete names the alerts on all its tiles.
 */

let sim: Simulator;
let root: string;
let env: Record<string, string>;

beforeEach(async () => {
  sim = await startSimulator({ contract: "full", rateLimit: { management: false, observability: false } });
  root = await mkdtemp(join(tmpdir(), "driftless-cascade-"));
  await mkdir(join(root, "manifests"));
  env = {
    ...platformEnv(sim),
    DRIFTLESS_MANIFESTS: join(root, "manifests"),
    DRIFTLESS_STATE_DIR: join(root, "state"),
  };
});
afterEach(async () => {
  await sim.close();
  await rm(root, { recursive: true, force: true });
});

const write = (file: string, yaml: string) => writeFile(join(root, "manifests", file), yaml);
const run = (...args: string[]) => driftlessAsync(args, env);

const tile = (key: string, id: string, name: string, x: number, type: string) => `
    - key: ${key}
      id: ${id}
      name: ${name}
      x: ${x}
      y: 0
      w: 4
      h: 3
      series: [{ type: ${type}, aggFn: count, where: "level:error", sourceId: ${ids.sourceIds[0]} }]`;

/** The fixture's dashboard, adopted, with the tiles of `keys` (ingest-lag holds the fixture's own alert). */
const board = (keys: string[], annotations = "") => {
  const tiles = {
    "ingest-lag": tile("ingest-lag", ids.tileIds[0], "Ingest lag", 0, "number"),
    "error-count": tile("error-count", ids.tileIds[1], "Errors", 4, "number"),
    events: tile("events", ids.tileIds[2], "Events", 8, "number"),
  };
  return `apiVersion: driftless/v1
kind: Dashboard
metadata: { name: overview${annotations} }
spec:
  dashboardId: ${ids.dashboardId}
  name: Platform overview
  tiles:${keys.map((key) => tiles[key as keyof typeof tiles]).join("")}
`;
};

const ALERT = `apiVersion: driftless/v1
kind: Alert
metadata: { name: errors }
spec:
  name: Errors
  dashboard: overview
  tile: error-count
  interval: 5m
  thresholdType: above
  threshold: 10
  channel: { type: webhook, webhookId: ${ids.webhookId} }
`;

const notes = (stdout: string) => stdout.split("\n").filter((line) => line.includes("note:"));

describe("a plan's alert cascade", () => {
  beforeEach(async () => {
    await write("board.yaml", board(["ingest-lag", "error-count", "events"]));
    await write("alert.yaml", ALERT);
    const applied = await run("apply");
    expect(applied.code, applied.stdout).toBe(0);
  });

  it("names the managed Alert and, with reads on, the unmanaged alert on the tiles a dashboard leaves out", async () => {
    await write("board.yaml", board(["events"]));
    await rm(join(root, "manifests", "alert.yaml"));

    const off = await run("plan");
    const on = await run("plan", "--reads", "on");

    expect(off.code, off.stdout).toBe(2);
    expect(notes(off.stdout)).toEqual([
      "    note: the platform deletes Alert/errors (tile error-count) with the tiles its PUT leaves out",
    ]);
    expect(on.code, on.stdout).toBe(2);
    expect(notes(on.stdout)).toEqual([
      "    note: the platform deletes Alert/errors (tile error-count) with the tiles its PUT leaves out",
      `    note: the platform also deletes 1 alert(s) driftless does not manage with the tiles its PUT leaves out: ${ids.alertId} "Ingest lag" (tile ingest-lag)`,
    ]);
  });

  it("names every alert on a dashboard its plan deletes", async () => {
    await write(
      "board.yaml",
      board(["ingest-lag", "error-count", "events"], ", annotations: { driftless/deletion-policy: delete }"),
    );
    await run("apply");
    await rm(join(root, "manifests", "board.yaml"));
    await rm(join(root, "manifests", "alert.yaml"));

    const on = await run("plan", "--reads", "on");

    expect(on.code, on.stdout).toBe(2);
    expect(notes(on.stdout)).toEqual(
      expect.arrayContaining([
        "    note: the platform deletes Alert/errors with the dashboard",
        `    note: the platform also deletes 1 alert(s) driftless does not manage with the dashboard: ${ids.alertId} "Ingest lag"`,
      ]),
    );
  });
});
