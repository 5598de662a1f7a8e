import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { createFileStore } from "../src/state/file-store.js";
import { driftlessAsync } from "./helpers/cli.js";
import { startDaemonProcess } from "./helpers/daemon-process.js";
import { type FakeKubernetes, startFakeKubernetes } from "./helpers/fake-kubernetes.js";
import { mskEndpoint } from "./helpers/manifests.js";
import { platformEnv } from "./helpers/platform-env.js";
import { stateInSecrets } from "./helpers/state-secrets.js";

/**
 * Renames and removals through the built CLI: a renamed manifest keeps its record (tile ids, an
 * endpoint's unknown create), a deleted one is Unmanaged for the retention and re-adding it loses
 * nothing, and `driftless forget` drops one record now.
 */

const DASHBOARD_ROUTE = "/api/v2/dashboards/{id}";
const ENDPOINT_ROUTE =
  "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";

const tile = (key: string, name: string, x: number) =>
  `    - {key: ${key}, name: "${name}", x: ${x}, y: 0, w: 4, h: 3, series: [{type: time, dataSource: events, aggFn: count, where: "kind:${key}"}]}`;

const dashboard = (name: string, title: string) => `apiVersion: driftless/v1
kind: Dashboard
metadata:
  name: ${name}
spec:
  dashboardId: ${ids.dashboardId}
  name: ${title}
  tiles:
${[tile("lag", "Ingest lag", 0), tile("errors", "Errors", 4), tile("new", "New tile", 8)].join("\n")}
`;

const endpoint = (name: string, previous?: string) =>
  mskEndpoint(name, previous ? { annotations: { "driftless/previous-name": previous } } : {});

type ApplyReport = {
  ok: boolean;
  statuses: Array<{ kind: string; name: string; status: string; message?: string }>;
};

describe("renames and removals (built CLI)", () => {
  let sim: Simulator;
  let root: string;
  let manifests: string;
  let env: Record<string, string>;

  beforeEach(async () => {
    sim = await startSimulator({
      endpointReadyAfterMs: 0,
      rateLimit: { management: false, observability: false },
    });
    root = await mkdtemp(join(tmpdir(), "driftless-lifecycle-"));
    manifests = join(root, "manifests");
    await mkdir(manifests);
    env = {
      DRIFTLESS_MANIFESTS: manifests,
      DRIFTLESS_STATE_DIR: join(root, "state"),
      DRIFTLESS_SECRETS_DIR: join(root, "secrets"),
      ...platformEnv(sim),
    };
  });

  afterEach(async () => {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  });

  const write = (file: string, text: string) => writeFile(join(manifests, file), text);
  const remove = (file: string) => rm(join(manifests, file));
  const apply = async (extra: Record<string, string> = {}) => {
    const run = await driftlessAsync(["apply", "--output", "json"], { ...env, ...extra });
    expect(run.stdout, run.stderr).not.toBe("");
    return { ...run, report: JSON.parse(run.stdout) as ApplyReport };
  };
  const state = async () =>
    JSON.parse(await readFile(join(root, "state", "state.json"), "utf8")) as {
      resources: Record<string, { tileIds?: Record<string, string>; serverId?: string }>;
    };
  /** Moves back the time a record was first found without its manifest, as if `ms` had passed since. */
  const unmanagedFor = async (id: string, ms: number) => {
    const store = createFileStore(join(root, "state"));
    try {
      const saved = await store.load();
      const record = saved.resources[id];
      if (!record?.unmanagedSince) throw new Error(`${id} is not Unmanaged in the state`);
      const unmanagedSince = new Date(Date.now() - ms).toISOString();
      await store.save({ ...saved, resources: { ...saved.resources, [id]: { ...record, unmanagedSince } } });
    } finally {
      await store.close();
    }
  };
  const puts = () =>
    sim.requests
      .filter((r) => r.method === "PUT" && r.route === DASHBOARD_ROUTE && r.status === 200)
      .map((r) => (r.body as { tiles: Array<{ id?: string; name: string }> }).tiles);

  it("keeps every tile id when a dashboard's manifest is renamed", async () => {
    await write("dashboard.yaml", dashboard("overview", "Platform overview"));
    await apply();
    const recorded = (await state()).resources["Dashboard/overview"]?.tileIds;
    const before = puts().length;

    await write("dashboard.yaml", dashboard("platform-overview", "Platform overview v2"));
    const renamed = await apply();

    const after = await state();
    const sent = puts().slice(before);
    expect(renamed.code, renamed.stderr).toBe(0);
    expect(Object.keys(recorded ?? {})).toHaveLength(3);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.map((t) => t.id)).toEqual([recorded?.lag, recorded?.errors, recorded?.new]);
    expect(after.resources["Dashboard/platform-overview"]?.tileIds).toEqual(recorded);
    expect(after.resources["Dashboard/overview"]).toBeUndefined();
  });

  it("reports a deleted manifest Unmanaged, sends nothing for it, and keeps its tile ids when it comes back", async () => {
    await write("dashboard.yaml", dashboard("overview", "Platform overview"));
    await apply();
    const recorded = (await state()).resources["Dashboard/overview"]?.tileIds;
    const writesBefore = sim.requests.filter((r) => r.method !== "GET").length;

    await remove("dashboard.yaml");
    const removed = await apply();
    const plan = await driftlessAsync(["plan", "--output", "json"], env);
    const writesWhileGone = sim.requests.filter((r) => r.method !== "GET").length - writesBefore;
    await write("dashboard.yaml", dashboard("overview", "Platform overview v2"));
    const back = await apply();

    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.report.statuses).toContainEqual(
      expect.objectContaining({
        kind: "Dashboard",
        name: "overview",
        status: "Unmanaged",
        message: expect.stringContaining("driftless forget Dashboard/overview"),
      }),
    );
    expect(JSON.parse(plan.stdout).resources).toContainEqual(
      expect.objectContaining({ kind: "Dashboard", name: "overview", outcome: "unmanaged" }),
    );
    expect(writesWhileGone).toBe(0);
    expect(back.code, back.stderr).toBe(0);
    expect(
      puts()
        .at(-1)
        ?.map((t) => t.id),
    ).toEqual([recorded?.lag, recorded?.errors, recorded?.new]);
    expect(JSON.stringify((await state()).resources["Dashboard/overview"])).not.toContain("unmanagedSince");
  });

  it("drops the record of a deleted manifest once DRIFTLESS_UNMANAGED_RETENTION has passed", async () => {
    await write("dashboard.yaml", dashboard("overview", "Platform overview"));
    await apply();
    await remove("dashboard.yaml");

    const kept = await apply({ DRIFTLESS_UNMANAGED_RETENTION: "1h" });
    await unmanagedFor("Dashboard/overview", 61 * 60_000);
    const dropped = await apply({ DRIFTLESS_UNMANAGED_RETENTION: "1h" });

    expect(kept.report.statuses.map((s) => s.status)).toEqual(["Unmanaged"]);
    expect(dropped.report.statuses).toEqual([]);
    expect((await state()).resources["Dashboard/overview"]).toBeUndefined();
  });

  it("counts no record as deleted while a file of the revision cannot be read as far as its kind and name", async () => {
    await write("dashboard.yaml", dashboard("overview", "Platform overview"));
    await apply();
    await remove("dashboard.yaml");
    await write("broken.yaml", "kind: [Dashboard\nmetadata: {name: overview\n");

    const unreadable = await apply({ DRIFTLESS_UNMANAGED_RETENTION: "1s" });

    expect(unreadable.code).toBe(1);
    expect(unreadable.report.statuses).toEqual([]);
    expect(JSON.stringify((await state()).resources["Dashboard/overview"])).not.toContain("unmanagedSince");
  });

  it("sends no second create for an endpoint renamed with driftless/previous-name before its id is known", async () => {
    sim.inject({ api: "management", method: "POST", route: ENDPOINT_ROUTE, kind: "drop" });
    await write("endpoint.yaml", endpoint("orders-msk"));
    const unknown = await apply();

    await write("endpoint.yaml", endpoint("orders-msk-eu", "orders-msk"));
    const renamed = await apply();

    const posts = sim.requests.filter((r) => r.method === "POST" && r.route === ENDPOINT_ROUTE);
    expect(unknown.report.statuses[0]?.status).toBe("Unknown");
    expect(posts).toHaveLength(1);
    expect(renamed.report.statuses).toEqual([
      expect.objectContaining({ kind: "ReversePrivateEndpoint", name: "orders-msk-eu", status: "Unknown" }),
    ]);
  });

  it("forgets one record with driftless forget, and says so when there is none", async () => {
    await write("dashboard.yaml", dashboard("overview", "Platform overview"));
    await apply();
    await remove("dashboard.yaml");

    const forgot = await driftlessAsync(["forget", "Dashboard/overview"], env);
    const again = await driftlessAsync(["forget", "Dashboard/overview"], env);
    const next = await apply();

    expect(forgot.code, forgot.stderr).toBe(0);
    expect(forgot.stdout).toMatch(/^Forgot Dashboard\/overview: driftless no longer knows tile ids lag=/);
    expect((await state()).resources["Dashboard/overview"]).toBeUndefined();
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("the state holds no record of Dashboard/overview");
    expect(next.report.statuses).toEqual([]);
  });

  it("refuses to forget while a daemon holds the state's lock, and changes nothing", async () => {
    await write("dashboard.yaml", dashboard("overview", "Platform overview"));
    await apply();
    const daemon = await startDaemonProcess({
      ...env,
      DRIFTLESS_RECONCILE_SCHEDULE: "off",
      DRIFTLESS_POLL_SCHEDULE: "off",
      DRIFTLESS_REASSERT_SCHEDULE: "off",
    });
    try {
      const refused = await driftlessAsync(["forget", "Dashboard/overview"], env);

      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("cannot forget Dashboard/overview: the state is locked by");
      expect(refused.stderr).toContain("Stop that one first");
      expect((await state()).resources["Dashboard/overview"]).toBeDefined();
    } finally {
      await daemon.stop();
    }
  });

  describe("on the Kubernetes store", () => {
    let fake: FakeKubernetes;
    beforeEach(async () => {
      fake = await startFakeKubernetes();
    });
    afterEach(() => fake.close());

    it("forgets one record of the state Secret", async () => {
      const kube = {
        DRIFTLESS_STATE_STORE: "kubernetes",
        DRIFTLESS_NAMESPACE: "driftless-forget",
        KUBECONFIG: fake.kubeconfigPath,
      };
      const records = () => Object.keys(stateInSecrets(fake, "driftless-forget")?.resources ?? {});
      await write("dashboard.yaml", dashboard("overview", "Platform overview"));
      await apply(kube);
      const before = records();

      const forgot = await driftlessAsync(["forget", "Dashboard/overview"], { ...env, ...kube });

      expect(before).toEqual(["Dashboard/overview"]);
      expect(forgot.code, forgot.stderr).toBe(0);
      expect(records()).toEqual([]);
    });
  });
});
