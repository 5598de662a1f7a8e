import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";
import { platformEnv } from "./helpers/platform-env.js";

/**
 * An Alert's whole life through the built CLI against the simulator's published contract: created on
 * the tile of a dashboard created in the same apply (dashboard first, the alert naming its ids), a
 * changed threshold sent as one PUT of the whole alert, a console edit found by a read and put back, and
 * both manifests removed: the alert deleted before its dashboard.
 */

let sim: Simulator;
let root: string;
let env: Record<string, string>;

beforeEach(async () => {
  sim = await startSimulator({ contract: "full", rateLimit: { management: false, observability: false } });
  root = await mkdtemp(join(tmpdir(), "driftless-alert-"));
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
const remove = (file: string) => rm(join(root, "manifests", file));
const run = (...args: string[]) => driftlessAsync(args, env);
const writes = () =>
  sim.requests
    .filter((r) => r.method !== "GET")
    .map((r) => ({ call: `${r.method} ${r.route}`, body: r.body }));

const BOARD = `apiVersion: driftless/v1
kind: Dashboard
metadata: { name: checkout }
spec:
  name: Checkout
  tiles:
    - key: errors
      name: Errors
      x: 0
      y: 0
      w: 12
      h: 4
      series:
        - { type: time, aggFn: count, where: "level:error", groupBy: [], sourceId: ${ids.sourceIds[0]} }
`;

const alertWith = (threshold: number) => `apiVersion: driftless/v1
kind: Alert
metadata: { name: checkout-errors }
spec:
  name: Checkout errors
  message: Too many checkout errors
  dashboard: checkout
  tile: errors
  interval: 5m
  thresholdType: above
  threshold: ${threshold}
  channel: { type: webhook, webhookId: ${ids.webhookId} }
`;

const theAlert = () => sim.state.alerts.find((a) => a.name === "Checkout errors");
const theBoard = () => sim.state.dashboards.find((d) => d.name === "Checkout");

describe("an Alert from git", () => {
  it("is created on a new dashboard's tile, replaced whole when it changes, put back after a console edit, deleted before its dashboard", async () => {
    await write("board.yaml", BOARD);
    await write("alert.yaml", alertWith(10));

    const created = await run("apply");

    expect(created.code, created.stdout + created.stderr).toBe(0);
    expect(writes().map((w) => w.call)).toEqual(["POST /api/v2/dashboards", "POST /api/v2/alerts"]);
    const board = theBoard();
    expect(theAlert()).toMatchObject({
      threshold: 10,
      dashboard: board?.id,
      tileId: board?.tiles[0]?.id,
      source: "tile",
    });

    // The threshold changes: one PUT, carrying the whole alert (the platform clears what it leaves out).
    sim.clearRequests();
    await write("alert.yaml", alertWith(20));
    const changed = await run("apply");

    expect(changed.code, changed.stdout).toBe(0);
    expect(writes()).toEqual([
      {
        call: "PUT /api/v2/alerts/{id}",
        body: {
          source: "tile",
          name: "Checkout errors",
          message: "Too many checkout errors",
          interval: "5m",
          thresholdType: "above",
          threshold: 20,
          channel: { type: "webhook", webhookId: ids.webhookId },
          dashboardId: board?.id,
          tileId: board?.tiles[0]?.id,
        },
      },
    ]);
    expect(theAlert()?.threshold).toBe(20);

    // Edited in the console: a plan with reads on shows it, an apply with reads on puts git's back.
    const edited = theAlert();
    if (edited) edited.threshold = 99;
    sim.clearRequests();
    const plan = await run("plan", "--reads", "on");

    expect(plan.code, plan.stdout).toBe(2);
    expect(plan.stdout).toMatch(/threshold: 99 -> 20\s+\(changed outside git\)/);
    const putBack = await run("apply", "--reads", "on");
    expect(putBack.code, putBack.stdout).toBe(0);
    expect(writes().map((w) => w.call)).toEqual(["PUT /api/v2/alerts/{id}"]);
    expect(theAlert()?.threshold).toBe(20);

    // Both leave git: created by driftless, both are deleted, the alert first.
    sim.clearRequests();
    await remove("alert.yaml");
    await remove("board.yaml");
    const deleted = await run("apply");

    expect(deleted.code, deleted.stdout).toBe(0);
    expect(writes().map((w) => w.call)).toEqual([
      "DELETE /api/v2/alerts/{id}",
      "DELETE /api/v2/dashboards/{id}",
    ]);
    expect(theAlert()).toBeUndefined();
    expect(theBoard()).toBeUndefined();
  });
});
