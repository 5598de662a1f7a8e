import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { type Daemon, startDaemon } from "../src/daemon/daemon.js";
import { fakeDaemonDeps, passResult } from "./helpers/fake-daemon.js";
import { switchableLeadership } from "./helpers/switchable-leadership.js";
import { until } from "./helpers/wait.js";

/**
 * A replica that stops leading stops reporting the resources it reconciled: the new leader reports
 * them now, and alerts such as `max(driftless_resources{status="Failed"}) > 0` must follow the new
 * leader's figures, not a former leader's last ones.
 */

const daemons: Daemon[] = [];
const roots: string[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop(1_000)));
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});

async function start() {
  const manifests = await mkdtemp(join(tmpdir(), "driftless-follower-"));
  roots.push(manifests);
  const leadership = switchableLeadership(true);
  const registry = new Registry();
  let gate: Promise<void> | undefined;
  let passes = 0;
  const daemon = await startDaemon(
    fakeDaemonDeps(manifests, {
      reconciler: {
        pass: async () => {
          passes++;
          await gate;
          return passResult(
            [{ kind: "ApiKey", name: "ci-deployer", status: "Failed", next: "retry", message: "503" }],
            2,
          );
        },
      },
      leadership,
      registry,
    }),
  );
  daemons.push(daemon);
  const figures = async () =>
    (await registry.metrics())
      .split("\n")
      .filter(
        (line) =>
          line.startsWith('driftless_resources{kind="ApiKey",status="Failed"}') ||
          line.startsWith("driftless_manifest_errors "),
      );
  const status = async () =>
    (await (await fetch(`http://${daemon.address}/status`)).json()) as { resources: unknown[] };
  return {
    daemon,
    leadership,
    figures,
    status,
    passes: () => passes,
    hold: () => {
      let release = () => {};
      gate = new Promise((resolve) => {
        release = resolve;
      });
      return release;
    },
  };
}

describe("a replica that stops leading", () => {
  it("stops reporting the resources and manifest errors of its last pass", async () => {
    const { daemon, leadership, figures, status } = await start();
    await daemon.loop.idle();
    const asLeader = await figures();

    leadership.set(false);

    expect(asLeader).toEqual([
      'driftless_resources{kind="ApiKey",status="Failed"} 1',
      "driftless_manifest_errors 2",
    ]);
    expect(await figures()).toEqual([
      'driftless_resources{kind="ApiKey",status="Failed"} 0',
      "driftless_manifest_errors 0",
    ]);
    expect((await status()).resources).toEqual([]);
  });

  it("does not report the pass that was running when it lost leadership", async () => {
    const { daemon, leadership, figures, status, passes, hold } = await start();
    const release = hold();
    await until(() => passes() === 1);

    leadership.set(false);
    release();
    await daemon.loop.idle();

    expect(await figures()).toEqual([
      'driftless_resources{kind="ApiKey",status="Failed"} 0',
      "driftless_manifest_errors 0",
    ]);
    expect((await status()).resources).toEqual([]);
  });
});
