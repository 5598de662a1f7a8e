import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { type Daemon, startDaemon } from "../src/daemon/daemon.js";
import type { ManifestOf } from "../src/manifests/manifest.js";
import type { Answer, PlatformClient } from "../src/platform/client.js";
import type { AlertAnswer } from "../src/platform/observability.js";
import { fakeDaemonDeps } from "./helpers/fake-daemon.js";
import { switchableLeadership } from "./helpers/switchable-leadership.js";
import { until } from "./helpers/wait.js";

/**
 * Poll rounds of the daemon, with an alert API whose answers the test holds back: a round in flight
 * while something else happens (leadership lost, another poll asked for).
 */

const watch = {
  kind: "AlertWatch",
  name: "ingest-lag",
  labels: {},
  position: { file: "watches.yaml", line: 1, col: 1 },
  spec: { alertId: "65f1a2b3c4d5e6f708192a51" },
} as ManifestOf<"AlertWatch">;

const daemons: Daemon[] = [];
const roots: string[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop(1_000)));
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});

async function start() {
  const manifests = await mkdtemp(join(tmpdir(), "driftless-poll-rounds-"));
  roots.push(manifests);
  const leadership = switchableLeadership(true);
  const alertCalls: Array<(state: string) => void> = [];
  const registry = new Registry();
  const daemon = await startDaemon(
    fakeDaemonDeps(manifests, {
      leadership,
      loadManifests: async () => [watch],
      platform: {
        // Alerts answer when the test says; backups never do.
        call: ((name: string, params: { id: string }): Promise<Answer<AlertAnswer>> =>
          name === "getAlert"
            ? new Promise((resolve) => {
                alertCalls.push((state) => resolve({ result: { id: params.id, state } }));
              })
            : Promise.reject(new Error("no backups here"))) as PlatformClient["call"],
      },
      registry,
    }),
  );
  daemons.push(daemon);
  const alertSeries = async () =>
    (await registry.metrics()).split("\n").filter((line) => line.startsWith("driftless_alert_state{"));
  return { daemon, setLeader: leadership.set, alertCalls, alertSeries, url: `http://${daemon.address}` };
}

describe("a poll round", () => {
  it("that ends after this replica lost leadership leaves no alert series and no watch status behind", async () => {
    const { daemon, setLeader, alertCalls, alertSeries, url } = await start();
    await until(() => alertCalls.length === 1);

    setLeader(false);
    alertCalls[0]?.("active");
    await daemon.poll();
    const status = (await (await fetch(`${url}/status`)).json()) as { resources: unknown[] };

    expect(await alertSeries()).toEqual([]);
    expect(status.resources).toEqual([]);
  });

  it("never overlaps another: a poll asked for while one runs is answered by that one", async () => {
    const { daemon, alertCalls, alertSeries } = await start();
    await until(() => alertCalls.length === 1);

    const asked = daemon.poll();
    // A second round would ask for the alert within this turn of the event loop: nothing it awaits is I/O.
    await new Promise((resolve) => setImmediate(resolve));
    for (const answer of alertCalls) answer("active");
    await asked;

    expect(alertCalls).toHaveLength(1);
    expect(await alertSeries()).toEqual([
      'driftless_alert_state{alert="65f1a2b3c4d5e6f708192a51",name="ingest-lag",state="active"} 1',
    ]);
  });

  it("runs right after the first pass of each leadership term, not a poll period later", async () => {
    const { daemon, setLeader, alertCalls } = await start();
    await until(() => alertCalls.length === 1);
    alertCalls[0]?.("active");
    await daemon.poll();

    setLeader(false);
    setLeader(true);
    // No poll schedule: only the round after the new term's first pass can ask.
    await until(() => alertCalls.length === 2);
    for (const answer of alertCalls) answer("active");

    expect(alertCalls).toHaveLength(2);
  });
});
