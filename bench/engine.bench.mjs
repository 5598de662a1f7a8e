// The engine's measures, printed beside their targets:
// 1. 1,000 and 10,000 unchanged resources: requests sent by `driftless apply` (target 0), wall time of
//    `driftless plan` as a user runs it (target < 2 s for 10,000), and the peak memory of a plan;
// 2. 100 changed resources under the default rate limit: wall time of `driftless apply` against the
//    bound N / rate of driftless's own budget, and 429s received (targets: within 10%, zero);
// 3. 20 objects created from git (keys with a file secret target, dashboards) and then deleted by
//    removing their manifests, against the published contract: the requests of each apply (targets: one
//    POST per manifest, none on the next apply, one DELETE per removed manifest) and their wall times.
// BENCH_QUICK=1 runs with 20 changed resources instead of 100 (the second measure takes about 2 min).
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runCli, seedState } from "./common.mjs";
import { dist } from "./dist.mjs";

const repo = fileURLToPath(new URL("..", import.meta.url));
const { startSimulator, defaultFixture, defaultIds: ids } = await dist("simulator/index.js");
const { MANAGEMENT_BUDGET } = await dist("platform/budget.js");

const CHANGED = process.env.BENCH_QUICK ? 20 : 100;
/** Creates and deletes pass driftless's own budget as any write does: 20 of each take about 10 s. */
const CREATED = 20;
/** @param {number} bytes */
const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
/** @param {number} i @param {string} tag */
const uuid = (i, tag) => `${tag}-0000-4000-8000-${String(i).padStart(12, "0")}`;

/**
 * One manifest of a mix of kinds: API keys, kafka pipes with settings, dashboards of three tiles.
 * @param {number} i
 */
function manifest(i) {
  /** @param {string} kind */
  const head = (kind) => `apiVersion: driftless/v1\nkind: ${kind}\nmetadata:\n  name: r-${i}\nspec:\n`;
  if (i % 5 < 2) {
    return `${head("ApiKey")}  organizationId: ${ids.organizationId}\n  keyId: ${uuid(i, "0a0b0c0d")}\n  name: key-${i}\n  roles: [developer]\n  ipAccessList:\n    - {source: 203.0.113.0/24, description: CI}\n`;
  }
  if (i % 5 < 4) {
    return `${head("DataPipe")}  organizationId: ${ids.organizationId}\n  serviceId: ${ids.serviceId}\n  dataPipeId: ${uuid(i, "1a1b1c1d")}\n  name: pipe-${i}\n  source:\n    kafka:\n      iamRole: arn:aws:iam::1:role/r${i}\n  fieldMappings:\n    - {sourceField: id, destinationField: order_id}\n  settings:\n    streaming_max_insert_wait_ms: 500\n    engine_max_threads: 4\n`;
  }
  /** @param {number} k */
  const tile = (k) =>
    `    - {key: t${k}, name: "Tile ${k}", x: ${k * 4}, y: 0, w: 4, h: 3, series: [{type: time, dataSource: events, aggFn: count, where: "kind:t${k}"}]}`;
  return `${head("Dashboard")}  dashboardId: d${i}\n  name: Dashboard ${i}\n  tags: [bench]\n  tiles:\n${[0, 1, 2].map(tile).join("\n")}\n`;
}

/** @param {string} dir @param {number} count */
async function writeManifests(dir, count) {
  await mkdir(dir, { recursive: true });
  const perFile = 50;
  for (let f = 0; f * perFile < count; f++) {
    /** @type {string[]} */
    const docs = [];
    for (let i = f * perFile; i < Math.min(count, (f + 1) * perFile); i++) docs.push(manifest(i));
    await writeFile(join(dir, `m-${f}.yaml`), docs.join("---\n"));
  }
}

/**
 * The CLI with driftless's own logs quiet.
 * @param {string[]} args
 * @param {Record<string, string>} env
 */
const cli = (args, env) => runCli(args, { DRIFTLESS_LOG_LEVEL: "error", ...env });

/**
 * Peak resident memory of a plan run in its own process (the CLI's code path, measured from inside).
 * @param {string} manifests
 * @param {string} stateDir
 * @returns {Promise<{ maxRss: number; sends: number }>}
 */
function planPeakMemory(manifests, stateDir) {
  const script = join(repo, "bench", "plan-peak-memory.mjs");
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, manifests, stateDir], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.on("close", () => resolve(JSON.parse(out)));
  });
}

/** @param {number} count */
async function unchanged(count) {
  const root = await mkdtemp(join(tmpdir(), "driftless-bench-engine-"));
  const manifests = join(root, "manifests");
  const stateDir = join(root, "state");
  await writeManifests(manifests, count);
  await seedState(manifests, stateDir);
  const sim = await startSimulator({ rateLimit: { management: false, observability: false } });
  const env = {
    DRIFTLESS_MANIFESTS: manifests,
    DRIFTLESS_STATE_DIR: stateDir,
    DRIFTLESS_SECRETS_DIR: root,
    DRIFTLESS_MANAGEMENT_URL: sim.managementUrl,
    DRIFTLESS_OBSERVABILITY_URL: sim.observabilityUrl,
    DRIFTLESS_MANAGEMENT_KEY_ID: sim.credentials.managementKeyId,
    DRIFTLESS_MANAGEMENT_KEY_SECRET: sim.credentials.managementKeySecret,
    DRIFTLESS_OBSERVABILITY_TOKEN: sim.credentials.observabilityToken,
  };
  try {
    const plan = await cli(["plan"], env);
    const apply = await cli(["apply"], env);
    const memory = await planPeakMemory(manifests, stateDir);
    if (plan.code !== 0)
      console.log(`  plan exited ${plan.code}: ${plan.stdout.slice(-300)}${plan.stderr.slice(-300)}`);
    console.log(`unchanged resources: ${count}`);
    console.log(`  requests sent by apply:  ${sim.requests.length}  (target 0; apply exit ${apply.code})`);
    console.log(
      `  plan wall time (CLI):    ${(plan.ms / 1000).toFixed(2)} s  (target < 2 s for 10,000; exit ${plan.code}, target 0)`,
    );
    console.log(`  apply wall time (CLI):   ${(apply.ms / 1000).toFixed(2)} s  (no target)`);
    console.log(
      `  plan peak memory (RSS):  ${mib(memory.maxRss)}  (no target; plans with a request: ${memory.sends})`,
    );
  } finally {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  }
}

/** @param {number} count */
async function changedUnderRateLimit(count) {
  const root = await mkdtemp(join(tmpdir(), "driftless-bench-engine-"));
  const manifests = join(root, "manifests");
  await mkdir(manifests);
  const fixture = defaultFixture();
  const keys = fixture.keys ?? [];
  fixture.keys = keys;
  for (let i = 0; i < count; i++) {
    keys.push({
      id: uuid(i, "0e0e0e0e"),
      organizationId: ids.organizationId,
      name: `key-${i}`,
      roles: ["developer"],
      keySuffix: "0000",
      createdAt: "2025-01-01T00:00:00Z",
    });
    await writeFile(
      join(manifests, `k${i}.yaml`),
      `apiVersion: driftless/v1\nkind: ApiKey\nmetadata:\n  name: k-${i}\nspec:\n  organizationId: ${ids.organizationId}\n  keyId: ${uuid(i, "0e0e0e0e")}\n  name: key-${i}-renamed\n`,
    );
  }
  // The simulator's default limits are the platform's: 10 per 10 s (management).
  const sim = await startSimulator({ fixture });
  try {
    const apply = await cli(["apply"], {
      DRIFTLESS_MANIFESTS: manifests,
      DRIFTLESS_STATE_DIR: join(root, "state"),
      DRIFTLESS_SECRETS_DIR: root,
      DRIFTLESS_MANAGEMENT_URL: sim.managementUrl,
      DRIFTLESS_OBSERVABILITY_URL: sim.observabilityUrl,
      DRIFTLESS_MANAGEMENT_KEY_ID: sim.credentials.managementKeyId,
      DRIFTLESS_MANAGEMENT_KEY_SECRET: sim.credentials.managementKeySecret,
      DRIFTLESS_OBSERVABILITY_TOKEN: sim.credentials.observabilityToken,
    });
    const rate = MANAGEMENT_BUDGET.requests / (MANAGEMENT_BUDGET.windowMs / 1000);
    const bound = count / rate;
    const seconds = apply.ms / 1000;
    const limited = sim.requests.filter((r) => r.status === 429).length;
    console.log(`changed resources under the default rate limit: ${count}`);
    console.log(
      `  requests sent:           ${sim.requests.length}  (one per change; apply exit ${apply.code}, target 0)`,
    );
    console.log(
      `  apply wall time:         ${seconds.toFixed(1)} s  vs bound N/rate = ${count}/${rate.toFixed(1)} per s = ${bound.toFixed(1)} s: ${(((seconds - bound) / bound) * 100).toFixed(1)}%  (target within 10%)`,
    );
    console.log(`  429s received:           ${limited}  (target 0)`);
  } finally {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * Creates `count` objects from manifests without ids, applies again, then removes every manifest and
 * applies with the guard raised to `count`.
 * @param {number} count
 */
async function createdAndDeleted(count) {
  const root = await mkdtemp(join(tmpdir(), "driftless-bench-engine-"));
  const manifests = join(root, "manifests");
  await mkdir(manifests);
  /** @type {string[]} */
  const files = [];
  for (let i = 0; i < count; i++) {
    const file = join(manifests, `c${i}.yaml`);
    files.push(file);
    const head = (/** @type {string} */ kind) =>
      `apiVersion: driftless/v1\nkind: ${kind}\nmetadata:\n  name: c-${i}\nspec:\n`;
    await writeFile(
      file,
      i % 2 === 0
        ? `${head("ApiKey")}  organizationId: ${ids.organizationId}\n  name: created-${i}\n  roles: [developer]\n  secretTarget: {file: key-${i}}\n`
        : `${head("Dashboard")}  name: Created ${i}\n  tiles:\n    - {key: t, name: T, x: 0, y: 0, w: 4, h: 3, series: [{type: time, aggFn: count, where: "kind:t", whereLanguage: lucene, groupBy: [], sourceId: ${ids.sourceIds[0]}}]}\n`,
    );
  }
  const sim = await startSimulator({
    contract: "full",
    rateLimit: { management: false, observability: false },
  });
  const env = {
    DRIFTLESS_MANIFESTS: manifests,
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_SECRETS_DIR: root,
    DRIFTLESS_KEY_SECRETS_DIR: join(root, "key-secrets"),
    DRIFTLESS_MAX_DELETES: String(count),
    DRIFTLESS_MANAGEMENT_URL: sim.managementUrl,
    DRIFTLESS_OBSERVABILITY_URL: sim.observabilityUrl,
    DRIFTLESS_MANAGEMENT_KEY_ID: sim.credentials.managementKeyId,
    DRIFTLESS_MANAGEMENT_KEY_SECRET: sim.credentials.managementKeySecret,
    DRIFTLESS_OBSERVABILITY_TOKEN: sim.credentials.observabilityToken,
  };
  const sent = (/** @type {string} */ method) => sim.requests.filter((r) => r.method === method).length;
  try {
    const create = await cli(["apply"], env);
    const posts = sent("POST");
    sim.clearRequests();
    const again = await cli(["apply"], env);
    const writes = sim.requests.filter((r) => r.method !== "GET").length;
    await Promise.all(files.map((file) => unlink(file)));
    sim.clearRequests();
    const remove = await cli(["apply"], env);
    console.log(`objects created from git, then deleted: ${count} (keys and dashboards, published contract)`);
    console.log(
      `  POSTs of the creating apply:   ${posts}  (target ${count}; exit ${create.code}, target 0)`,
    );
    console.log(`  writes of the next apply:      ${writes}  (target 0; exit ${again.code})`);
    console.log(
      `  DELETEs of the removing apply: ${sent("DELETE")}  (target ${count}; exit ${remove.code}, target 0)`,
    );
    console.log(
      `  wall time (CLI):               create ${(create.ms / 1000).toFixed(2)} s, next ${(again.ms / 1000).toFixed(2)} s, delete ${(remove.ms / 1000).toFixed(2)} s  (no target: paced by driftless's own budget)`,
    );
  } finally {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  }
}

await unchanged(1_000);
await unchanged(10_000);
await changedUnderRateLimit(CHANGED);
await createdAndDeleted(CREATED);
