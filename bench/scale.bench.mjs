// The scale measures, each printed beside its target and beside what the release before the
// journal and the shards wrote (computed in this same run from the whole state, which is what that
// release wrote on every save):
// 1. bytes written per changed resource, file store and Kubernetes store, at 1,000 / 10,000 / 100,000
//    resources (Kubernetes target: under 64 KiB at 100,000), and the load time of each store;
// 2. `driftless run` with 10,000 and 100,000 unchanged resources: steady resident memory, the peak of a
//    pass, and the CPU of an unchanged pass (target under 250 ms at 10,000);
// 3. `driftless plan` of 10,000 unchanged resources and `driftless validate` of 10,000, as the CLI
//    (target under 1 s each).
// Records average about 700 bytes of JSON: three API keys for one data pipe.
// Parts can be skipped: BENCH_SCALE_SKIP_STORES=1, BENCH_SCALE_SKIP_DAEMON=1, BENCH_SCALE_DAEMON_ONLY_10K=1.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { platformEnv, startRun } from "./common.mjs";
import { dist } from "./dist.mjs";

// BENCH_REPO=<checkout>: measure the built code of another checkout (e.g. the release before, for its figures).
const repo = process.env.BENCH_REPO ?? fileURLToPath(new URL("..", import.meta.url));
const CLI = join(repo, "dist", "cli.js");
const { startSimulator, defaultFixture, defaultIds: ids } = await dist("simulator/index.js", repo);
const { createFileStore } = await dist("state/file-store.js", repo);
const { createKubernetesStateStore } = await dist("state/kubernetes-store.js", repo);
const { newState, serializeState } = await dist("state/state-format.js", repo);
const { createLogger } = await dist("telemetry/logger.js", repo);
const { KubeConfig } = await import("@kubernetes/client-node");

const SIZES = [1_000, 10_000, 100_000];
const CHANGES = 50;
const logger = createLogger("silent");
/** @param {number} bytes */
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
/** @param {number} bytes */
const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
/** @param {number} value */
const ms = (value) => `${value.toFixed(0)} ms`;
/** @param {boolean} ok */
const verdict = (ok) => (ok ? "ok" : "MISSED");
/** @param {number} i */
const keyId = (i) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, "0")}`;
const LIST = [{ source: "203.0.113.0/24", description: "CI runners" }];

/**
 * The record `driftless run` keeps of the API key bench-i (see apiKeyManifest), as after a first pass.
 * @param {number} i
 */
function keyRecord(i) {
  return {
    kind: "ApiKey",
    name: `key-${i}`,
    applied: {
      name: `bench-${i}`,
      roles: ["developer"],
      expireAt: "2027-06-30T00:00:00Z",
      ipAccessList: LIST,
    },
    appliedAt: "2026-11-23T12:50:18.945Z",
    observed: {
      id: keyId(i),
      name: `bench-${i}`,
      roles: ["developer"],
      state: "enabled",
      expireAt: "2027-06-30T00:00:00Z",
      ipAccessList: LIST,
      keySuffix: "0000",
      createdAt: "2025-01-15T09:30:00Z",
      usedAt: null,
    },
  };
}

/**
 * A pipe's record: the applied spec with a hashed secret, and the platform's much longer answer.
 * @param {number} i
 */
function pipeRecord(i) {
  const columns = Array.from({ length: 8 }, (_, c) => ({ name: `col_${c}_${i}`, type: "String" }));
  const id = `${(i * 2654435761).toString(16).padStart(8, "0").slice(-8)}-5b6a-4798-8a9b-${keyId(i).slice(-12)}`;
  const kafka = { brokers: `b-1.kafka-${i % 20}.internal:9092`, topics: `orders-${i}` };
  return {
    kind: "DataPipe",
    name: `pipe-${i}`,
    applied: {
      dataPipeId: id,
      name: `pipe-${i}`,
      source: { kafka: { ...kafka, password: `sha256:${id.replaceAll("-", "")}${id.replaceAll("-", "")}` } },
      destination: { columns },
    },
    appliedAt: "2026-11-23T12:50:18.945Z",
    observed: { id, name: `pipe-${i}`, state: "Running", source: { kafka }, destination: { columns } },
  };
}

/** @param {number} count */
function mixedState(count) {
  const state = newState();
  for (let i = 1; i <= count; i++) {
    const record = i % 4 === 0 ? pipeRecord(i) : keyRecord(i);
    state.resources[`${record.kind}/${record.name}`] = record;
  }
  return state;
}

/**
 * What the file store's folder holds: the journal's length and the snapshot's identity and length.
 * @param {string} dir
 */
function folderFigures(dir) {
  /** @param {string} name */
  const of = (name) => statSync(join(dir, name), { throwIfNoEntry: false });
  const snapshot = of("state.json");
  return {
    journal: of("state.journal")?.size ?? 0,
    snapshot: `${snapshot?.ino}:${snapshot?.mtimeMs}`,
    snapshotSize: snapshot?.size ?? 0,
  };
}

/**
 * Changes one record per save, CHANGES times; the file store's bytes per change, appends and compaction.
 * @param {number} count
 */
async function fileStoreFigures(count) {
  const dir = await mkdtemp(join(tmpdir(), "driftless-scale-file-"));
  try {
    const state = mixedState(count);
    const oldSave = Buffer.byteLength(`${JSON.stringify(state, null, 1)}\n`);
    const store = createFileStore(dir, { logger });
    await store.load();
    await store.save(state);
    // Bytes the saves put on disk: journal growth, plus the snapshot whenever a save compacted.
    let bytes = 0;
    for (let n = 0; n < CHANGES; n++) {
      changeRecord(state, n);
      const before = folderFigures(dir);
      await store.save(state);
      const after = folderFigures(dir);
      bytes +=
        after.snapshot === before.snapshot
          ? after.journal - before.journal
          : after.snapshotSize + after.journal;
    }
    const perChange = bytes / CHANGES;
    await store.close();
    // A compaction rewrites the snapshot once the journal outgrows it: once per snapshot's worth of lines.
    const snapshot = Buffer.byteLength(serializeState(state));
    const amortized =
      perChange + snapshot / Math.max(1, Math.floor(Math.max(snapshot, 1024 * 1024) / perChange));
    const reader = createFileStore(dir, { logger, readOnly: true });
    const started = performance.now();
    await reader.load();
    const loadMs = performance.now() - started;
    await reader.close();
    return { perChange, amortized, oldSave, loadMs };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The Secrets part of a Kubernetes API server (get, create, replace with resourceVersion), counting bytes. */
async function fakeKubernetes() {
  /** @type {Map<string, { metadata: { name: string; resourceVersion?: string }; data?: Record<string, string> }>} */
  const objects = new Map();
  let revision = 1;
  let bodyBytes = 0;
  const server = createServer(async (req, res) => {
    /** @type {Buffer[]} */
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const raw = Buffer.concat(chunks);
    const name = /\/secrets\/([^/]+)$/.exec(req.url ?? "")?.[1];
    /** @param {number} code @param {unknown} body */
    const answer = (code, body) => {
      res.writeHead(code, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    /** @param {number} code @param {string} reason */
    const status = (code, reason) =>
      answer(code, { kind: "Status", apiVersion: "v1", status: "Failure", reason, code });
    const stored = name === undefined ? undefined : objects.get(name);
    if (req.method === "GET") return stored ? answer(200, stored) : status(404, "NotFound");
    bodyBytes += raw.length;
    const body = JSON.parse(raw.toString("utf8"));
    const key = name ?? body.metadata.name;
    const existing = objects.get(key);
    if (req.method === "POST" && existing) return status(409, "AlreadyExists");
    if (req.method === "PUT" && existing?.metadata.resourceVersion !== body.metadata.resourceVersion)
      return status(409, "Conflict");
    /** @type {string[]} */
    const values = Object.values(body.data ?? {});
    const size = values.reduce((sum, v) => sum + Buffer.from(v, "base64").length, 0);
    if (size > 1024 * 1024) return status(422, "Invalid");
    body.metadata.resourceVersion = String(++revision);
    objects.set(key, body);
    answer(req.method === "POST" ? 201 : 200, body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "fake", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "bench", token: "bench" }],
    contexts: [{ name: "fake", cluster: "fake", user: "bench", namespace: "bench" }],
    currentContext: "fake",
  });
  return { kubeConfig, bytes: () => bodyBytes, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** @param {number} count */
async function kubernetesFigures(count) {
  const api = await fakeKubernetes();
  try {
    const state = mixedState(count);
    const whole = gzipSync(JSON.stringify(state)).length;
    // What the single-Secret release sent per save: the whole gzip'd state, base64 (or a refusal).
    const oldSave = whole > 768 * 1024 ? undefined : Math.ceil(whole / 3) * 4;
    const store = createKubernetesStateStore({ kubeConfig: api.kubeConfig, namespace: "bench", logger });
    await store.load();
    await store.save(state);
    const before = api.bytes();
    for (let n = 0; n < CHANGES; n++) {
      changeRecord(state, n);
      await store.save(state);
    }
    const perChange = (api.bytes() - before) / CHANGES;
    const reader = createKubernetesStateStore({
      kubeConfig: api.kubeConfig,
      namespace: "bench",
      logger,
      readOnly: true,
    });
    const started = performance.now();
    await reader.load();
    const loadMs = performance.now() - started;
    // The writer's next load, as a daemon's next pass makes it: one shard changed since its last save.
    changeRecord(state, CHANGES);
    await store.save(state);
    const warmStarted = performance.now();
    await store.load();
    const warmLoadMs = performance.now() - warmStarted;
    return { perChange, oldSave, whole, loadMs, warmLoadMs };
  } finally {
    await api.close();
  }
}

/**
 * The n-th change of a bench: one record replaced by a new one, as the engine does (records are frozen).
 * @param {import("../src/state/store.js").State} state
 * @param {number} n
 */
function changeRecord(state, n) {
  const id = `ApiKey/key-${n * 10 + 1}`;
  const appliedAt = new Date(Date.UTC(2026, 10, 24, 0, 0, n)).toISOString();
  const record = state.resources[id];
  if (!record) throw new Error(`the bench's state holds no ${id} to change`);
  state.resources[id] = { ...record, appliedAt };
}

/** @param {number} i */
const apiKeyManifest = (i) =>
  `apiVersion: driftless/v1\nkind: ApiKey\nmetadata:\n  name: key-${i}\nspec:\n  organizationId: ${ids.organizationId}\n  keyId: ${keyId(i)}\n  name: bench-${i}\n  roles: [developer]\n  expireAt: "2027-06-30T00:00:00Z"\n  ipAccessList:\n    - {source: 203.0.113.0/24, description: CI runners}\n`;

/**
 * A manifests folder of `count` API keys (`perFile` a file) and the state a first pass over them leaves.
 * @param {number} count
 * @param {number} perFile
 */
async function unchangedWorld(count, perFile) {
  const root = await mkdtemp(join(tmpdir(), "driftless-scale-run-"));
  const manifests = join(root, "manifests");
  for (let file = 0; file < count / perFile; file++) {
    const folder = join(manifests, `team-${file % 100}`);
    await mkdir(folder, { recursive: true });
    /** @type {string[]} */
    const docs = [];
    for (let i = file * perFile + 1; i <= (file + 1) * perFile; i++) docs.push(apiKeyManifest(i));
    await writeFile(join(folder, `keys-${file}.yaml`), docs.join("---\n"));
  }
  const state = newState();
  for (let i = 1; i <= count; i++) state.resources[`ApiKey/key-${i}`] = keyRecord(i);
  await mkdir(join(root, "state"), { recursive: true });
  await writeFile(join(root, "state", "state.json"), serializeState(state));
  const fixture = defaultFixture();
  const keys = fixture.keys ?? [];
  fixture.keys = keys;
  for (let i = 1; i <= count; i++) {
    keys.push({
      id: keyId(i),
      organizationId: ids.organizationId,
      name: `bench-${i}`,
      roles: ["developer"],
      expireAt: "2027-06-30T00:00:00Z",
      ipAccessList: LIST,
      keySuffix: "0000",
      createdAt: "2025-01-15T09:30:00Z",
    });
  }
  return { root, manifests, fixture };
}

/**
 * The child's resident memory now and at its peak, and its CPU time so far, from /proc: the time on a
 * CPU of each of its threads (main, garbage collector, thread pool) in nanoseconds, where the process's
 * own counters tick in 10 ms steps.
 * @param {number | undefined} pid
 */
function processFigures(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  /** @param {string} field */
  const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  let cpuNs = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      cpuNs += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // A thread that ended between the listing and the read: its time is no longer counted anywhere.
    }
  }
  return { rss: kb("VmRSS"), peak: kb("VmHWM"), cpuMs: cpuNs / 1e6 };
}

const TOKEN = "scale-bench-token";

/**
 * `driftless run` over `count` unchanged resources: steady RSS, peak RSS, CPU of an unchanged pass.
 * @param {number} count
 * @param {string | undefined} nodeOptions
 */
async function daemonFigures(count, nodeOptions) {
  const world = await unchangedWorld(count, 10);
  const simulator = await startSimulator({
    fixture: world.fixture,
    rateLimit: { management: false, observability: false },
  });
  // BENCH_CPU_PROF=<folder>: the daemon writes a CPU profile there on exit (node --cpu-prof).
  const profile = process.env.BENCH_CPU_PROF
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
    : [];
  const run = startRun(
    {
      DRIFTLESS_MANIFESTS: world.manifests,
      DRIFTLESS_STATE_DIR: join(world.root, "state"),
      DRIFTLESS_SECRETS_DIR: world.root,
      ...platformEnv(simulator),
      DRIFTLESS_RECONCILE_SCHEDULE: "off",
      DRIFTLESS_POLL_SCHEDULE: "off",
      DRIFTLESS_REASSERT_SCHEDULE: "off",
      DRIFTLESS_WEBHOOK_TOKEN: TOKEN,
      ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
    },
    { cli: CLI, nodeArgs: profile },
  );
  const { child } = run;
  /** @param {number} n */
  const waitPasses = async (n) => {
    while (run.passes() < n) await new Promise((resolve) => setTimeout(resolve, 10));
  };
  try {
    const url = await run.url;
    await waitPasses(1);
    const requestsAfterFirst = simulator.requests.length;
    /** @type {number[]} */
    const cpu = [];
    for (let n = 2; n <= 11; n++) {
      const before = processFigures(child.pid).cpuMs;
      await fetch(`${url}/hooks/sync/${TOKEN}`, { method: "POST" });
      await waitPasses(n);
      cpu.push(processFigures(child.pid).cpuMs - before);
    }
    cpu.sort((a, b) => a - b);
    const figures = processFigures(child.pid);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const heap = Number(/^driftless_nodejs_heap_size_used_bytes (\S+)/m.exec(metrics)?.[1] ?? Number.NaN);
    return {
      steady: figures.rss,
      heap,
      peak: figures.peak,
      passCpuMs: cpu[Math.floor(cpu.length / 2)] ?? Number.NaN,
      passCpuLeast: cpu[0] ?? Number.NaN,
      passCpuMost: cpu.at(-1) ?? Number.NaN,
      requests: simulator.requests.length - requestsAfterFirst,
    };
  } finally {
    await run.stop();
    await simulator.close();
    await rm(world.root, { recursive: true, force: true });
  }
}

/**
 * Wall time of plan and validate over `count` unchanged resources, a file each: the best of three runs.
 * @param {number} count
 */
async function cliFigures(count) {
  const world = await unchangedWorld(count, 1);
  const env = {
    PATH: process.env.PATH,
    DRIFTLESS_STATE_DIR: join(world.root, "state"),
    DRIFTLESS_MANAGEMENT_URL: "http://127.0.0.1:9",
    DRIFTLESS_OBSERVABILITY_URL: "http://127.0.0.1:9",
    DRIFTLESS_MANAGEMENT_KEY_ID: "unused",
    DRIFTLESS_MANAGEMENT_KEY_SECRET: "unused",
    DRIFTLESS_OBSERVABILITY_TOKEN: "unused",
  };
  /** @param {string[]} args */
  const time = (args) => {
    const runs = [];
    for (let run = 0; run < 3; run++) {
      const started = performance.now();
      const profile = process.env.BENCH_CPU_PROF
        ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
        : [];
      const result = spawnSync(process.execPath, [...profile, CLI, ...args], { env, encoding: "utf8" });
      runs.push(performance.now() - started);
      if (result.status !== 0)
        throw new Error(`driftless ${args[0]} exited ${result.status}: ${result.stderr}`);
      if (args[0] === "plan" && !result.stdout.includes(`${count} in sync`))
        throw new Error(`plan did not find ${count} resources in sync: ${result.stdout.slice(-300)}`);
    }
    return Math.min(...runs);
  };
  try {
    return { validate: time(["validate", world.manifests]), plan: time(["plan", world.manifests]) };
  } finally {
    await rm(world.root, { recursive: true, force: true });
  }
}

console.log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")} on ${os.availableParallelism()} CPUs; records average ${Math.round(
    JSON.stringify(mixedState(1000).resources).length / 1000,
  )} bytes of JSON`,
);
console.log(
  `bytes written per changed resource (mean of ${CHANGES} saves of one change each), and load time:`,
);
for (const count of process.env.BENCH_SCALE_SKIP_STORES ? [] : SIZES) {
  const file = await fileStoreFigures(count);
  console.log(
    `  file store  ${String(count).padStart(7)}: ${kib(file.perChange).padStart(10)} per change (${kib(file.amortized)} with compaction amortized; before: ${kib(file.oldSave)})  load ${ms(file.loadMs)}`,
  );
  const kube = await kubernetesFigures(count);
  const before =
    kube.oldSave === undefined ? `refused: ${kib(kube.whole)} gzip'd, over one Secret` : kib(kube.oldSave);
  const target = count === 100_000 ? ` (target < 64 KiB) ${verdict(kube.perChange < 64 * 1024)}` : "";
  console.log(
    `  kubernetes  ${String(count).padStart(7)}: ${kib(kube.perChange).padStart(10)} per change${target} (before: ${before})  load ${ms(kube.loadMs)}, the writer's next ${ms(kube.warmLoadMs)}`,
  );
}

// 10,000 with the pod's own settings (deploy/base/deployment.yaml), 100,000 with those docs/kubernetes.md
// gives for that size; BENCH_NODE_OPTIONS replaces both (e.g. "" for Node's defaults).
const shipped = {
  nodeOptions: /name: NODE_OPTIONS\s+value: (.+)/.exec(
    readFileSync(join(repo, "deploy/base/deployment.yaml"), "utf8"),
  )?.[1],
  limit: 512,
};
/** @param {number} count */
const sizing = (count) =>
  count === 10_000
    ? shipped
    : { nodeOptions: "--max-old-space-size=1536 --max-semi-space-size=32", limit: 2048 };
console.log("driftless run over unchanged API keys (file store):");
const daemonSizes = process.env.BENCH_SCALE_SKIP_DAEMON ? [] : [10_000, 100_000];
for (const count of process.env.BENCH_SCALE_DAEMON_ONLY_10K ? [10_000] : daemonSizes) {
  const { nodeOptions, limit } = sizing(count);
  const d = await daemonFigures(count, process.env.BENCH_NODE_OPTIONS ?? nodeOptions);
  const target = count === 10_000 ? ` (target < 250 ms) ${verdict(d.passCpuMs < 250)}` : "";
  console.log(
    `  ${String(count).padStart(7)} resources, NODE_OPTIONS "${process.env.BENCH_NODE_OPTIONS ?? nodeOptions}": steady rss ${mib(d.steady)} (heap used ${mib(d.heap)}), peak ${mib(d.peak)} (limit ${limit} MiB) ${verdict(d.peak < limit * 2 ** 20)}`,
  );
  console.log(
    `    unchanged pass CPU ${ms(d.passCpuMs)}, the median of 10 passes (${ms(d.passCpuLeast)} to ${ms(d.passCpuMost)})${target}; requests ${d.requests}`,
  );
}

const cli = await cliFigures(10_000);
console.log(
  `CLI over 10,000 unchanged resources in 10,000 files: plan ${ms(cli.plan)} (target < 1000 ms) ${verdict(cli.plan < 1000)}; validate ${ms(cli.validate)} (target < 1000 ms) ${verdict(cli.validate < 1000)}`,
);
