import { mkdir, mkdtemp, readlink, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { type Daemon, startDaemon } from "../src/daemon/daemon.js";
import type { Leadership } from "../src/leader/leadership.js";
import { soleLeader } from "../src/leader/leadership.js";
import type { PassOptions, PassResult, Reconciler } from "../src/reconcile/types.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createMetrics } from "../src/telemetry/metrics.js";
import { createGitSyncLayout } from "./helpers/git-sync-layout.js";
import { type ManualClock, manualClock } from "./helpers/manual-clock.js";
import { switchableLeadership } from "./helpers/switchable-leadership.js";
import { until } from "./helpers/wait.js";

/**
 * Trigger logic of the daemon through its real watcher, schedules and HTTP server, with a small
 * Reconciler that records each pass and the revision it read. Where a test is about when a pass
 * starts, the pass loop runs on a manual clock: the watcher's events are real, and the test waits until
 * the daemon has logged each change it must react to before it lets the settle time pass.
 */

type Pass = { options: PassOptions; revision: string | undefined };

class RecordingReconciler implements Reconciler {
  passes: Pass[] = [];
  /** While set, each pass waits for it before returning. */
  gate: Promise<void> | undefined;
  next: Array<(options: PassOptions) => Partial<PassResult> | Error> = [];

  constructor(private readonly folder: string) {}

  async pass(options: PassOptions): Promise<PassResult> {
    const revision = await readlink(this.folder).then(basename, () => undefined);
    this.passes.push({ options, revision });
    await this.gate;
    const startedAt = new Date().toISOString();
    const scripted = this.next.shift()?.(options) ?? {};
    if (scripted instanceof Error) throw scripted;
    return {
      ...(revision ? { revision } : {}),
      startedAt,
      finishedAt: new Date().toISOString(),
      statuses: [{ kind: "ApiKey", name: "ci", status: "Synced", next: "done" }],
      manifestErrors: 0,
      ok: true,
      ...scripted,
    };
  }
}

const temporaryDirs: string[] = [];
const daemons: Daemon[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop(1_000)));
  await Promise.all(temporaryDirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function start(options: {
  manifests?: string;
  webhookToken?: string;
  leadership?: Leadership;
  reconciler?: RecordingReconciler;
  reconcileSchedule?: string;
  allowCreate?: string[];
  clock?: ManualClock;
}) {
  const root = await mkdtemp(join(tmpdir(), "driftless-triggers-"));
  temporaryDirs.push(root);
  const layout = options.manifests ? undefined : await createGitSyncLayout(root, { "a.yaml": "# A\n" });
  const manifests = options.manifests ?? layout?.link ?? root;
  const reconciler = options.reconciler ?? new RecordingReconciler(manifests);
  const registry = new Registry();
  const logs: Array<{ msg?: string; revision?: string }> = [];
  const daemon = await startDaemon({
    settings: {
      manifests,
      listen: "127.0.0.1:0",
      reconcileSchedule: options.reconcileSchedule ?? "off",
      pollSchedule: "off",
      reassertSchedule: "off",
      ...(options.webhookToken ? { webhookToken: { value: options.webhookToken } } : {}),
      quietMs: 150,
    },
    reconciler,
    leadership: options.leadership ?? soleLeader(),
    loadManifests: async () => [],
    tileIdsOf: async () => undefined,
    platform: { call: async () => Promise.reject(new Error("no platform here")) },
    registry,
    metrics: createMetrics(registry, { defaultMetrics: false }),
    logger: createLogger("debug", { write: (line: string) => logs.push(JSON.parse(line)) }),
    ...(options.allowCreate ? { allowCreate: options.allowCreate } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  daemons.push(daemon);
  /** True once the daemon has logged the link swap to `revision` (and asked its loop for a pass). */
  const seen = (revision: string | undefined) =>
    logs.some((l) => l.msg === "manifests changed" && l.revision === revision);
  return { daemon, reconciler, layout, seen, url: `http://${daemon.address}` };
}

describe("git-sync link swaps", () => {
  it("start a pass that reads the new revision after the old worktree is deleted", async () => {
    const { daemon, reconciler, layout } = await start({});
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();

    const revision = await layout?.publish({ "a.yaml": "# B\n" });

    await until(() => reconciler.passes.length === 2);
    expect(reconciler.passes[1]?.revision).toBe(revision);
    expect(reconciler.passes[1]?.options.trigger).toBe("watch");
  });

  it("coalesce a burst of swaps into one pass on the newest revision, once the source was quiet for the settle time", async () => {
    const clock = manualClock();
    const { daemon, reconciler, layout, seen } = await start({ clock });
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();

    let newest = "";
    for (let i = 0; i < 10; i++) newest = (await layout?.publish({ "a.yaml": `# ${i}\n` })) ?? "";
    await until(() => seen(newest));
    clock.advance(149);
    const beforeQuiet = daemon.loop.passCount;
    clock.advance(1);
    await daemon.loop.idle();

    expect(beforeQuiet).toBe(1);
    expect(reconciler.passes.map((p) => p.revision)).toEqual([reconciler.passes[0]?.revision, newest]);
  });

  it("start the pass of a burst that never goes quiet one second after its first swap", async () => {
    const clock = manualClock();
    const { daemon, reconciler, layout, seen } = await start({ clock });
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();

    // A swap every 100 ms, each sooner than the 150 ms of quiet a pass waits for.
    const passesAt: number[] = [];
    for (let i = 0; i < 10; i++) {
      const revision = await layout?.publish({ "a.yaml": `# ${i}\n` });
      await until(() => seen(revision));
      clock.advance(100);
      passesAt.push(daemon.loop.passCount);
    }
    await until(() => reconciler.passes.length === 2);

    expect(passesAt).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 2]);
    expect(reconciler.passes.at(-1)?.revision).toBe(layout?.revision);
  });

  it("run exactly one more pass after a running one, however many triggers came meanwhile", async () => {
    const clock = manualClock();
    const { daemon, reconciler, layout, seen } = await start({ clock });
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();
    let release = () => {};
    reconciler.gate = new Promise((resolve) => {
      release = resolve;
    });
    const first = await layout?.publish({ "a.yaml": "# 1\n" });
    await until(() => seen(first));
    clock.advance(150);
    await until(() => reconciler.passes.length === 2);

    let newest: string | undefined;
    for (let i = 0; i < 5; i++) newest = await layout?.publish({ "a.yaml": `# later ${i}\n` });
    await until(() => seen(newest));
    reconciler.gate = undefined;
    release();
    await daemon.loop.idle();

    expect(reconciler.passes).toHaveLength(3);
    expect(reconciler.passes[2]?.revision).toBe(newest);
    expect(clock.armed()).toBe(0);
  });
});

describe("a link that does not exist yet", () => {
  it("starts a pass when git-sync creates it after its first clone", async () => {
    const root = await mkdtemp(join(tmpdir(), "driftless-late-link-"));
    temporaryDirs.push(root);
    const link = join(root, "link");
    const { daemon, reconciler } = await start({ manifests: link });
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();

    await mkdir(join(root, "rev-first"));
    await symlink("rev-first", link);

    await until(() => reconciler.passes.length === 2);
    expect(reconciler.passes[1]?.revision).toBe("rev-first");
  });
});

describe("plain folders", () => {
  it("start a pass when a manifest file is written", async () => {
    const folder = await mkdtemp(join(tmpdir(), "driftless-plain-"));
    temporaryDirs.push(folder);
    const { daemon, reconciler } = await start({ manifests: folder });
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();

    await writeFile(join(folder, "new.yaml"), "# new\n");

    await until(() => reconciler.passes.length === 2);
    expect(reconciler.passes[1]?.revision).toBeUndefined();
  });

  it("start a pass when a manifest file is written in a folder reached through an ordinary symlink", async () => {
    const root = await mkdtemp(join(tmpdir(), "driftless-plain-link-"));
    temporaryDirs.push(root);
    await mkdir(join(root, "elsewhere"));
    // Not git-sync's: an absolute link a user made to a checkout kept somewhere else.
    await symlink(join(root, "elsewhere"), join(root, "manifests"));
    const { daemon, reconciler } = await start({ manifests: join(root, "manifests") });
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();

    await writeFile(join(root, "elsewhere", "new.yaml"), "# new\n");

    await until(() => reconciler.passes.length === 2);
  });
});

describe("POST /hooks/sync", () => {
  it("starts a pass with the right token, as a Bearer header or as the last path segment", async () => {
    const { daemon, reconciler, url } = await start({ webhookToken: "s3cret-hook" });
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();

    const byHeader = await fetch(`${url}/hooks/sync`, {
      method: "POST",
      headers: { authorization: "Bearer s3cret-hook", "gitsync-hash": "abc123" },
    });
    await until(() => reconciler.passes.length === 2);
    await daemon.loop.idle();
    const byPath = await fetch(`${url}/hooks/sync/s3cret-hook`, { method: "POST" });
    await until(() => reconciler.passes.length === 3);

    expect(byHeader.status).toBe(202);
    expect(byPath.status).toBe(202);
    expect(reconciler.passes.slice(1).map((p) => p.options.trigger)).toEqual(["webhook", "webhook"]);
  });

  it("makes one pass of a link swap and git-sync's webhook for the same revision", async () => {
    // On a manual clock, a swap that asked for a pass of its own would leave its settle wait armed.
    const clock = manualClock();
    const { daemon, reconciler, url, layout, seen } = await start({ webhookToken: "s3cret-hook", clock });
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();

    const armed: number[] = [];
    for (let i = 0; i < 5; i++) {
      const revision = await layout?.publish({ "a.yaml": `# ${i}\n` });
      await fetch(`${url}/hooks/sync/s3cret-hook`, {
        method: "POST",
        headers: { "gitsync-hash": revision ?? "" },
      });
      await until(() => seen(revision));
      await daemon.loop.idle();
      armed.push(clock.armed());
    }

    expect(reconciler.passes.slice(1).map((p) => p.options.trigger)).toEqual(Array(5).fill("webhook"));
    expect(armed).toEqual([0, 0, 0, 0, 0]);
  });

  it("rejects a wrong or missing token with 401 and starts nothing", async () => {
    const { daemon, reconciler, url } = await start({ webhookToken: "s3cret-hook" });
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();

    const answers = await Promise.all([
      fetch(`${url}/hooks/sync`, { method: "POST", headers: { authorization: "Bearer s3cret-hoo" } }),
      fetch(`${url}/hooks/sync/s3cret-hook-and-more`, { method: "POST" }),
      fetch(`${url}/hooks/sync`, { method: "POST" }),
    ]);

    // An accepted hook starts its pass before it is answered.
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401]);
    expect(daemon.loop.passCount).toBe(1);
  });

  it("is off (404) when no token is configured", async () => {
    const { url } = await start({});

    const answer = await fetch(`${url}/hooks/sync/anything`, { method: "POST" });

    expect(answer.status).toBe(404);
  });
});

describe("readiness", () => {
  it("is 503 until the first pass has finished, then 200", async () => {
    const root = await mkdtemp(join(tmpdir(), "driftless-ready-"));
    temporaryDirs.push(root);
    const reconciler = new RecordingReconciler(root);
    let release = () => {};
    reconciler.gate = new Promise((resolve) => {
      release = resolve;
    });
    const { daemon, url } = await start({ manifests: root, reconciler });
    await until(() => reconciler.passes.length === 1);

    const before = await fetch(`${url}/readyz`);
    const health = await fetch(`${url}/healthz`);
    release();
    await daemon.loop.idle();
    const after = await fetch(`${url}/readyz`);

    expect(before.status).toBe(503);
    expect(health.status).toBe(200);
    expect(after.status).toBe(200);
  });
});

describe("retries and schedules", () => {
  // One attempt per allowance is kept by the engine in the state (a restart cannot spend it twice); the
  // daemon hands the allowance to every pass, since a pass without it takes the allowance back.
  it("gives DRIFTLESS_ALLOW_CREATE to every pass, so that the state, not the process, counts the attempt", async () => {
    const { daemon, reconciler, layout } = await start({
      allowCreate: ["ReversePrivateEndpoint/orders-msk"],
    });
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();

    await layout?.publish({ "a.yaml": "# B\n" });
    await until(() => reconciler.passes.length === 2);

    expect(reconciler.passes[0]?.options.allowCreate).toEqual(["ReversePrivateEndpoint/orders-msk"]);
    expect(reconciler.passes[1]?.options.allowCreate).toEqual(["ReversePrivateEndpoint/orders-msk"]);
  });

  it("retry a failed resource with a later pass, without any new trigger", async () => {
    const root = await mkdtemp(join(tmpdir(), "driftless-retry-"));
    temporaryDirs.push(root);
    const reconciler = new RecordingReconciler(root);
    reconciler.next.push(() => ({
      ok: false,
      statuses: [
        { kind: "ApiKey", name: "ci", status: "Failed", next: "retry", message: "503 from the platform" },
      ],
    }));
    const clock = manualClock();
    const { daemon } = await start({ manifests: root, reconciler, clock });
    await until(() => reconciler.passes.length === 1);
    await daemon.loop.idle();

    // The first retry is due 2 s after the failure, give or take a fifth.
    clock.advance(2_400);
    await daemon.loop.idle();

    expect(reconciler.passes).toHaveLength(2);
    expect(reconciler.passes[1]?.options.trigger).toBe("retry");
  });

  it("start again at once when the files vanished under a pass (superseded), without counting an error", async () => {
    const root = await mkdtemp(join(tmpdir(), "driftless-superseded-"));
    temporaryDirs.push(root);
    const reconciler = new RecordingReconciler(root);
    reconciler.next.push(() => Object.assign(new Error("ENOENT: no such file"), { code: "ENOENT" }));
    const { daemon, url } = await start({ manifests: root, reconciler });

    await until(() => reconciler.passes.length === 2);
    await daemon.loop.idle();
    const metrics = await (await fetch(`${url}/metrics`)).text();

    expect(reconciler.passes[1]?.options.trigger).toBe("superseded");
    expect(metrics).toContain('driftless_reconcile_total{result="error"} 0');
    expect(metrics).toContain('driftless_reconcile_total{result="success"} 1');
  });

  it("runs full passes on the reconcile schedule", async () => {
    const root = await mkdtemp(join(tmpdir(), "driftless-cron-"));
    temporaryDirs.push(root);
    const reconciler = new RecordingReconciler(root);
    await start({ manifests: root, reconciler, reconcileSchedule: "* * * * * *" });

    await until(() => reconciler.passes.some((p) => p.options.trigger === "schedule"));

    expect(reconciler.passes[0]?.options.trigger).toBe("start");
  });
});

describe("leadership", () => {
  it("a follower serves probes but never passes; it passes once it leads, and aborts when it loses", async () => {
    const root = await mkdtemp(join(tmpdir(), "driftless-leader-"));
    temporaryDirs.push(root);
    const leadership = switchableLeadership(false);
    const setLeader = leadership.set;
    const reconciler = new RecordingReconciler(root);
    let release = () => {};
    const { daemon, url } = await start({ manifests: root, reconciler, leadership });
    const asFollower = await Promise.all([fetch(`${url}/healthz`), fetch(`${url}/metrics`)]);
    // A pass is counted the moment it starts, and a follower's start and triggers start none.
    const passesAsFollower = daemon.loop.passCount;

    reconciler.gate = new Promise((resolve) => {
      release = resolve;
    });
    setLeader(true);
    await until(() => reconciler.passes.length === 1);
    setLeader(false);
    const signal = reconciler.passes[0]?.options.signal;
    release();

    expect(asFollower.map((a) => a.status)).toEqual([200, 200]);
    expect(passesAsFollower).toBe(0);
    expect(signal?.aborted).toBe(true);
  });
});
