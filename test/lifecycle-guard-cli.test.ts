import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { type DaemonProcess, startDaemonProcess } from "./helpers/daemon-process.js";
import { statusOf as daemonStatus, metricsOf, type StatusBody } from "./helpers/daemon-run.js";
import { createGitSyncLayout } from "./helpers/git-sync-layout.js";
import {
  adoptedKey,
  createdBoard,
  createdKey,
  ROUTE,
  statusLines,
  statusOf,
  useLifecycleCli,
} from "./helpers/lifecycle-cli.js";
import { platformEnv } from "./helpers/platform-env.js";
import { until } from "./helpers/wait.js";

/**
 * The mass-deletion guard: a pass that would delete more than DRIFTLESS_MAX_DELETES objects deletes
 * none, each Pending saying why, until an operator lets them go with `apply --allow-deletes N`; a
 * git-sync checkout that comes up empty under the daemon deletes nothing beyond it, and
 * driftless_deletes_held says how many wait. Through the built CLI and the built daemon.
 */

const cli = useLifecycleCli();
const HELD = "held by the mass-deletion guard";

/** Writes `n` keys and `n` dashboards that driftless creates; their file names. */
async function createdObjects(n: number): Promise<string[]> {
  const files: string[] = [];
  for (let i = 0; i < n; i++) {
    await cli.write(`key-${i}.yaml`, createdKey(`key-${i}`));
    await cli.write(`board-${i}.yaml`, createdBoard(`board-${i}`));
    files.push(`key-${i}.yaml`, `board-${i}.yaml`);
  }
  return files;
}

describe("apply and the mass-deletion guard", () => {
  it("sends none of more deletes than DRIFTLESS_MAX_DELETES: each Pending saying why, exit 1, until --allow-deletes lets them go", async () => {
    const files = await createdObjects(3);
    expect((await cli.apply()).code).toBe(0);
    await cli.remove(...files);
    cli.sim.clearRequests();

    const held = await cli.apply();
    const short = await cli.apply(["--allow-deletes", "5"]);

    expect(cli.writes()).toEqual([]);
    expect(held.code).toBe(1);
    expect(held.doc.statuses).toHaveLength(6);
    for (const status of held.doc.statuses ?? []) {
      expect(status).toMatchObject({ status: "Pending", next: "operator" });
      expect(status.message).toContain(`${HELD}: this pass would delete 6 objects, more than 5`);
      expect(status.message).toContain("driftless apply --allow-deletes 6");
    }
    expect(short.code).toBe(1);
    expect(statusLines(short).every((line) => line.endsWith("Pending"))).toBe(true);

    const allowed = await cli.apply(["--allow-deletes", "6"]);

    expect(allowed.code, allowed.stdout).toBe(0);
    expect(cli.writes().sort()).toEqual([
      ...Array(3).fill(`DELETE ${ROUTE.dashboard}`),
      ...Array(3).fill(`DELETE ${ROUTE.key}`),
    ]);
    expect(statusLines(allowed).every((line) => line.endsWith("Deleted"))).toBe(true);
  });

  it("sends exactly DRIFTLESS_MAX_DELETES deletes, and holds one more", async () => {
    await createdObjects(3);
    expect((await cli.apply()).code).toBe(0);
    await cli.remove("key-0.yaml", "board-0.yaml");
    cli.sim.clearRequests();

    const atLimit = await cli.apply([], { DRIFTLESS_MAX_DELETES: "2" });

    expect(atLimit.code, atLimit.stdout).toBe(0);
    expect(cli.writes().sort()).toEqual([`DELETE ${ROUTE.dashboard}`, `DELETE ${ROUTE.key}`]);

    await cli.remove("key-1.yaml", "board-1.yaml", "key-2.yaml");
    cli.sim.clearRequests();
    const over = await cli.apply([], { DRIFTLESS_MAX_DELETES: "2" });

    expect(over.code).toBe(1);
    expect(cli.writes()).toEqual([]);
    expect(statusOf(over, "ApiKey/key-2")?.message).toContain(
      `${HELD}: this pass would delete 3 objects, more than 2`,
    );
  });

  it("counts only the deletes it would send: an object never deleted is orphaned, not counted", async () => {
    const files = await createdObjects(2);
    await cli.write("extra.yaml", createdKey("extra"));
    await cli.write(
      "own.yaml",
      adoptedKey("own", ids.managementKeyId, { annotations: { "driftless/deletion-policy": "delete" } }),
    );
    expect((await cli.apply()).code).toBe(0);
    await cli.remove(...files, "extra.yaml", "own.yaml");
    cli.sim.clearRequests();

    const result = await cli.apply();

    expect(result.code, result.stdout).toBe(0);
    expect(cli.writes().filter((w) => w.startsWith("DELETE"))).toHaveLength(5);
    expect(statusOf(result, "ApiKey/own")).toMatchObject({ status: "Unmanaged" });
  });

  it("shows in plan what it holds, and what --allow-deletes would send", async () => {
    const files = await createdObjects(3);
    expect((await cli.apply()).code).toBe(0);
    await cli.remove(...files);
    cli.sim.clearRequests();

    const held = await cli.plan();
    const allowed = await cli.plan(["--allow-deletes", "6"]);

    expect(cli.writes()).toEqual([]);
    expect(held.doc.resources?.map((r) => [r.outcome, r.action])).toEqual(Array(6).fill(["wait", "delete"]));
    expect(held.doc.resources?.[0]?.reason).toContain(HELD);
    expect(allowed.doc.resources?.map((r) => [r.outcome, r.action])).toEqual(
      Array(6).fill(["send", "delete"]),
    );
  });
});

describe("the daemon and a checkout that comes up empty", () => {
  let sim: Simulator;
  let root: string;
  let daemon: DaemonProcess | undefined;

  beforeEach(async () => {
    sim = await startSimulator({ contract: "full", rateLimit: { management: false, observability: false } });
    root = await mkdtemp(join(tmpdir(), "driftless-guard-"));
  });
  afterEach(async () => {
    await daemon?.stop("SIGKILL");
    daemon = undefined;
    await sim.close();
    await rm(root, { recursive: true, force: true });
  });

  const boards = (n: number) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`board-${i}.yaml`, createdBoard(`board-${i}`)]));
  const passOf = (d: DaemonProcess, revision: string) =>
    until(async () => {
      const body = await daemonStatus(d);
      return body.revision === revision && body.resources.length > 0 ? body : undefined;
    });
  const heldMetric = async (d: DaemonProcess) =>
    /^driftless_deletes_held (\d+)$/m.exec(await metricsOf(d))?.[1];

  it("deletes nothing beyond the guard: every delete held, Pending, and driftless_deletes_held the count", async () => {
    const layout = await createGitSyncLayout(join(root, "git"), boards(7));
    daemon = await startDaemonProcess({
      ...platformEnv(sim),
      DRIFTLESS_MANIFESTS: layout.link,
      DRIFTLESS_STATE_DIR: join(root, "state"),
      DRIFTLESS_RECONCILE_SCHEDULE: "off",
      DRIFTLESS_POLL_SCHEDULE: "off",
      DRIFTLESS_REASSERT_SCHEDULE: "off",
    });
    const created = await passOf(daemon, layout.revision);
    expect(created.resources.map((r) => r.status)).toEqual(Array(7).fill("Synced"));
    expect(await heldMetric(daemon)).toBe("0");
    sim.clearRequests();

    const empty = await layout.publish({});
    const body: StatusBody = await passOf(daemon, empty);

    expect(sim.requests.filter((r) => r.method === "DELETE")).toEqual([]);
    expect(sim.state.dashboards.filter((d) => d.name.startsWith("board-"))).toHaveLength(7);
    expect(body.resources).toHaveLength(7);
    for (const resource of body.resources) {
      expect(resource.status).toBe("Pending");
      expect(resource.lastError).toContain(`${HELD}: this pass would delete 7 objects, more than 5`);
    }
    expect(await heldMetric(daemon)).toBe("7");

    const back = await layout.publish(boards(7));
    await until(async () => (await daemonStatus(daemon as DaemonProcess)).revision === back);

    expect(await until(async () => (await heldMetric(daemon as DaemonProcess)) === "0")).toBe(true);
    expect(sim.requests.filter((r) => r.method !== "GET")).toEqual([]);
  });
});
