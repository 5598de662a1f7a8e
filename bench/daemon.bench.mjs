// The daemon's two measures, printed beside their targets:
// 1. change-to-request latency, p50/p99 over 50 changes: from git-sync's link swap to the PATCH arriving
//    at the simulator, through a real `driftless run` process, watching alone and with the webhook
//    (target p99 < 1 s; Argo CD's default is a 3-minute poll);
// 2. resident memory after 1,000 passes over 1,000 resources against after 10 passes (target: flat).
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { platformEnv, startRun } from "./common.mjs";
import { dist } from "./dist.mjs";

const { startSimulator, defaultIds: ids } = await dist("simulator/index.js");
const { startDaemon } = await dist("daemon/daemon.js");
const { createReconciler } = await dist("reconcile/engine.js");
const { createPlatform, createStateStore } = await dist("commands/platform.js");
const { Config } = await dist("config.js");
const { soleLeader } = await dist("leader/leadership.js");
const { createLogger } = await dist("telemetry/logger.js");
const { createMetrics } = await dist("telemetry/metrics.js");
const { Registry } = await import("prom-client");

const CHANGES = Number(process.env.BENCH_CHANGES ?? 50);
const PASSES = Number(process.env.BENCH_PASSES ?? 1_000);
const RESOURCES = 1_000;
const KEY_ROUTE = "/v1/organizations/{organizationId}/keys/{keyId}";
// driftless keeps 9 management requests per 10 s; spacing changes wider keeps the budget out of the figure.
const SPACING_MS = 1_250;
const TOKEN = "bench-webhook-token";

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** @param {number[]} sorted @param {number} q */
const quantile = (sorted, q) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
/** @param {number} value */
const ms = (value) => `${value.toFixed(0)} ms`;
/** @param {number} bytes */
const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** @param {string} name @param {string} [keyId] @param {string} [manifest] */
const apiKey = (name, keyId = ids.ciDeployerKeyId, manifest = "ci-deployer") =>
  `apiVersion: driftless/v1\nkind: ApiKey\nmetadata:\n  name: ${manifest}\nspec:\n  organizationId: ${ids.organizationId}\n  keyId: ${keyId}\n  name: ${name}\n  roles: [developer]\n  expireAt: "2027-06-30T00:00:00Z"\n  ipAccessList:\n    - {source: 203.0.113.0/24, description: CI runners}\n`;

/**
 * A git-sync root: worktrees beside a `link`; publish() swaps the link atomically and deletes the old one.
 * @param {string} root
 * @param {string} text
 */
async function gitSyncLayout(root, text) {
  let counter = 0;
  let current = "rev-0";
  /** @param {string} revision @param {string} content */
  const write = async (revision, content) => {
    await mkdir(join(root, revision), { recursive: true });
    await writeFile(join(root, revision, "key.yaml"), content);
  };
  await write(current, text);
  await symlink(current, join(root, "link"));
  return {
    link: join(root, "link"),
    /** @param {string} content */
    async publish(content) {
      const previous = current;
      current = `rev-${++counter}`;
      await write(current, content);
      await symlink(current, join(root, `.tmp-${current}`));
      const swappedAt = performance.timeOrigin + performance.now();
      await rename(join(root, `.tmp-${current}`), join(root, "link"));
      await rm(join(root, previous), { recursive: true, force: true });
      return { revision: current, swappedAt };
    },
  };
}

/** @param {"watch" | "webhook"} mode */
async function latency(mode) {
  const simulator = await startSimulator();
  const root = await mkdtemp(join(tmpdir(), "driftless-bench-latency-"));
  const layout = await gitSyncLayout(join(root, "git"), apiKey("ci-deployer"));
  const run = startRun({
    DRIFTLESS_MANIFESTS: layout.link,
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_SECRETS_DIR: root,
    ...platformEnv(simulator),
    DRIFTLESS_RECONCILE_SCHEDULE: "off",
    DRIFTLESS_POLL_SCHEDULE: "off",
    DRIFTLESS_REASSERT_SCHEDULE: "off",
    ...(mode === "webhook" ? { DRIFTLESS_WEBHOOK_TOKEN: TOKEN } : {}),
  });
  try {
    const url = await run.url;
    while (run.passes() < 1) await sleep(20);
    /** @type {number[]} */
    const latencies = [];
    for (let i = 0; i < CHANGES; i++) {
      const name = `ci-deployer-${mode}-${i}`;
      const { revision, swappedAt } = await layout.publish(apiKey(name));
      if (mode === "webhook") {
        // git-sync calls its --webhook-url right after the swap.
        await fetch(`${url}/hooks/sync/${TOKEN}`, { method: "POST", headers: { "gitsync-hash": revision } });
      }
      const deadline = Date.now() + 15_000;
      let patch;
      while (!patch && Date.now() < deadline) {
        patch = simulator.requests.find(
          (r) =>
            r.method === "PATCH" &&
            r.route === KEY_ROUTE &&
            /** @type {{ name?: unknown } | undefined} */ (r.body)?.name === name,
        );
        if (!patch) await sleep(2);
      }
      if (!patch) throw new Error(`change ${i} (${mode}) never reached the simulator`);
      latencies.push(patch.at - swappedAt);
      await sleep(Math.max(0, SPACING_MS - (Date.now() - swappedAt)));
    }
    latencies.sort((a, b) => a - b);
    return {
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      max: latencies.at(-1) ?? Number.NaN,
      passes: run.passes(),
    };
  } finally {
    await run.stop();
    await simulator.close();
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * RSS and heap after a full GC. Without --expose-gc (bench/run.mjs turns it on) there is no full GC to
 * ask for, and the heap printed would be whatever is not yet collected: refuse rather than mislead.
 */
function memory() {
  const gc = globalThis.gc;
  if (!gc) throw new Error("the memory figures need a full GC: run node --expose-gc bench/daemon.bench.mjs");
  gc();
  gc();
  const usage = process.memoryUsage();
  return { rss: usage.rss, heap: usage.heapUsed };
}

async function memoryOverPasses() {
  /** @param {number} i */
  const keyId = (i) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, "0")}`;
  const fixture = (await dist("simulator/default-fixture.js")).defaultFixture();
  const keys = fixture.keys ?? [];
  fixture.keys = keys;
  for (let i = 1; i <= RESOURCES; i++) {
    keys.push({
      id: keyId(i),
      organizationId: ids.organizationId,
      name: `bench-${i}`,
      roles: ["developer"],
      keySuffix: "0000",
      createdAt: "2025-01-15T09:30:00Z",
    });
  }
  const simulator = await startSimulator({ fixture, rateLimit: { management: false, observability: false } });
  const root = await mkdtemp(join(tmpdir(), "driftless-bench-memory-"));
  const manifests = join(root, "manifests");
  for (let file = 0; file < RESOURCES / 10; file++) {
    await mkdir(join(manifests, `team-${file % 10}`), { recursive: true });
    /** @type {string[]} */
    const docs = [];
    for (let i = file * 10 + 1; i <= file * 10 + 10; i++)
      docs.push(apiKey(`bench-${i}`, keyId(i), `key-${i}`));
    await writeFile(join(manifests, `team-${file % 10}`, `keys-${file}.yaml`), docs.join("---\n"));
  }
  const config = Config.parse({
    manifests,
    stateDir: join(root, "state"),
    secretsDir: root,
    managementUrl: simulator.managementUrl,
    managementKeyId: { value: ids.managementKeyId },
    managementKeySecret: { value: ids.managementKeySecret },
    observabilityUrl: simulator.observabilityUrl,
    observabilityToken: { value: ids.observabilityToken },
    listen: "127.0.0.1:0",
  });
  const logger = createLogger("warn");
  const registry = new Registry();
  const metrics = createMetrics(registry);
  const platform = await createPlatform(config, {
    logger,
    metrics,
    budgets: { management: { requests: 100_000, windowMs: 1_000 } },
  });
  const store = createStateStore(config, { logger });
  const daemon = await startDaemon({
    settings: { ...config, reconcileSchedule: "off", pollSchedule: "off", reassertSchedule: "off" },
    reconciler: createReconciler({
      manifests,
      store,
      send: platform.send,
      secrets: { env: {}, secretsDir: root },
      logger,
      managementKeyId: platform.managementKeyId,
    }),
    leadership: soleLeader(),
    loadManifests: async () => [],
    tileIdsOf: async () => undefined,
    platform: platform.client,
    registry,
    metrics,
    logger,
  });
  const pass = async () => {
    daemon.loop.request({ trigger: "webhook", immediate: true });
    await daemon.loop.idle();
  };
  try {
    await daemon.loop.idle();
    const firstSynced = daemon.board.statuses().filter((s) => s.status === "Synced").length;
    for (let i = 1; i < 10; i++) await pass();
    await registry.metrics();
    const after10 = memory();
    const started = performance.now();
    for (let i = 10; i < PASSES; i++) await pass();
    const perPass = (performance.now() - started) / (PASSES - 10);
    await registry.metrics();
    const afterAll = memory();
    return { after10, afterAll, perPass, firstSynced, passes: daemon.loop.passCount };
  } finally {
    await daemon.stop(5_000);
    await store.close();
    await platform.close();
    await simulator.close();
    await rm(root, { recursive: true, force: true });
  }
}

console.log(`change-to-request latency over ${CHANGES} changes (link swap -> PATCH at the simulator):`);
for (const mode of /** @type {const} */ (["watch", "webhook"])) {
  const r = await latency(mode);
  console.log(
    `  ${mode.padEnd(8)} p50 ${ms(r.p50).padStart(7)}  p99 ${ms(r.p99).padStart(7)}  max ${ms(r.max).padStart(7)}  (target p99 < 1000 ms) ${r.p99 < 1000 ? "ok" : "MISSED"}  passes ${r.passes}`,
  );
}

const m = await memoryOverPasses();
const growth = m.afterAll.rss - m.after10.rss;
console.log(
  `memory over ${m.passes} passes of ${RESOURCES} resources (${m.firstSynced} Synced after the first):`,
);
console.log(
  `  after 10 passes    rss ${mib(m.after10.rss).padStart(10)}  heap ${mib(m.after10.heap).padStart(10)}`,
);
console.log(
  `  after ${String(m.passes).padEnd(5)} passes rss ${mib(m.afterAll.rss).padStart(10)}  heap ${mib(m.afterAll.heap).padStart(10)}`,
);
console.log(
  `  growth rss ${mib(growth)}, heap ${mib(m.afterAll.heap - m.after10.heap)}  (target flat: under 10% of rss) ${growth < 0.1 * m.after10.rss ? "ok" : "MISSED"};  ${m.perPass.toFixed(1)} ms per unchanged pass`,
);
