import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { shardOf } from "../src/state/kubernetes-store.js";
import { apiKey, ids, KEY_ROUTE, metricsOf, statusOf, until, useDaemonRun } from "./helpers/daemon-run.js";
import { type FakeKubernetes, startFakeKubernetes } from "./helpers/fake-kubernetes.js";

/**
 * `driftless run` on the Kubernetes store, one replica, its poll rounds checking every second an
 * AlertWatch that names a dashboard tile while passes save: the built daemon against the simulator and
 * the fake Kubernetes API, whose shard reads are slowed so that a load (513 reads) takes half a second.
 * The poll rounds take the tile ids the passes loaded and saved: they never load the state (a load for
 * them once overlapped the saves, and a lone writer took its own saves for another writer's).
 */

const NAMESPACE = "driftless-polls";

const dashboard = (title: string) => `apiVersion: driftless/v1
kind: Dashboard
metadata:
  name: edge-2
spec:
  dashboardId: ${ids.dashboardId}
  name: ${title}
  tiles:
    - {key: lag, id: ${ids.tileIds[0]}, name: Ingest lag, x: 0, y: 0, w: 6, h: 3, series: [{type: time, dataSource: events, aggFn: count, where: "kind:lag"}]}
`;

const WATCH = `apiVersion: driftless/v1
kind: AlertWatch
metadata:
  name: ingest-lag
spec:
  alertId: ${ids.alertId}
  dashboard: edge-2
  tile: lag
`;

/** Revision `n`: the key and the dashboard renamed, so a pass saves twice (after each answer). */
const files = (n: number) => ({
  "keys/ci-deployer.yaml": apiKey(`key-${n}`),
  "dashboard.yaml": dashboard(`Platform overview ${n}`),
  "watches.yaml": WATCH,
});

const run = useDaemonRun();
let fake: FakeKubernetes;
beforeEach(async () => {
  fake = await startFakeKubernetes();
});
afterEach(async () => {
  await fake.close();
});

describe("a lone daemon on the Kubernetes store, its poll rounds checking tile ids while passes save", () => {
  it("never loads the state for a poll round, and never reports another writer", async () => {
    await run.layout.publish(files(0));
    // A load takes about half a second, and reads the dashboard's shard (edge-2's is shard 2) in its
    // first round; the key's answer comes 700 ms after the dashboard's: two saves, 700 ms apart.
    expect(shardOf("Dashboard/edge-2")).toBe(2);
    fake.setFault(
      { delayMs: 15 },
      (r) => r.method === "GET" && /\/secrets\/driftless-state-\d+$/.test(r.path),
    );
    run.simulator.inject({
      api: "management",
      method: "PATCH",
      route: KEY_ROUTE,
      kind: "latency",
      ms: 700,
      count: Infinity,
    });
    const d = await run.start({
      DRIFTLESS_STATE_STORE: "kubernetes",
      DRIFTLESS_NAMESPACE: NAMESPACE,
      KUBECONFIG: fake.kubeconfigPath,
    });
    await d.waitForLog((l) => l.msg === "pass finished", 30_000);

    for (let i = 1; i <= 6; i++) {
      const revision = await run.layout.publish(files(i));
      await d.waitForLog(
        (l) => (l.msg === "pass finished" || l.msg === "pass failed") && l.revision === revision,
        30_000,
      );
    }

    // Every load starts with a read of the meta Secret.
    const loads = () =>
      fake.requests.filter((r) => r.method === "GET" && r.path.endsWith("/secrets/driftless-state")).length;
    const passes = () => d.logs.filter((l) => l.msg === "pass finished" || l.msg === "pass failed").length;
    const polls = async () =>
      Number(/^driftless_poll_total\{result="success"\} (\d+)$/m.exec(await metricsOf(d))?.[1]);
    const loadsBefore = loads();
    const passesBefore = passes();
    const pollsBefore = await polls();
    // Three more poll rounds (one a second), with no pass between them.
    await until(async () => (await polls()) >= pollsBefore + 3, 30_000);
    const watch = (await statusOf(d)).resources.find((r) => r.kind === "AlertWatch");

    const conflicts = d.stderr().match(/another writer changed the state/g) ?? [];
    expect(passes()).toBe(passesBefore);
    expect(loads()).toBe(loadsBefore);
    // The start-up load (no leader election) and one load per pass: none for the poll rounds.
    expect(loadsBefore).toBeLessThanOrEqual(passesBefore + 1);
    expect(watch).toMatchObject({ name: "ingest-lag", status: "Synced" });
    expect(conflicts).toEqual([]);
    expect(run.keyPatches().at(-1)?.body).toMatchObject({ name: "key-6" });
  }, 120_000);
});
