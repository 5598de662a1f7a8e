// `driftless plan --base` over a git repository of 10,000 manifests (target < 2 s, with no driftless
// setting in the environment), beside the state-based `driftless plan` of the same manifests. Measured
// twice: 50 manifests a file (200 files) and one manifest a file (10,000 files, one blob each).
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli, seedState } from "./common.mjs";
import { dist } from "./dist.mjs";

const { defaultIds: ids } = await dist("simulator/index.js");

const COUNT = 10_000;
const CHANGED = 100;
/** @param {number} i @param {string} tag */
const uuid = (i, tag) => `${tag}-0000-4000-8000-${String(i).padStart(12, "0")}`;

/**
 * The engine bench's mix: API keys, kafka pipes with settings, dashboards of three tiles.
 * @param {number} i
 * @param {boolean} changed
 */
function manifest(i, changed) {
  /** @param {string} kind */
  const head = (kind) => `apiVersion: driftless/v1\nkind: ${kind}\nmetadata:\n  name: r-${i}\nspec:\n`;
  const suffix = changed ? "-changed" : "";
  if (i % 5 < 2) {
    return `${head("ApiKey")}  organizationId: ${ids.organizationId}\n  keyId: ${uuid(i, "0a0b0c0d")}\n  name: key-${i}${suffix}\n  roles: [developer]\n  ipAccessList:\n    - {source: 203.0.113.0/24, description: CI}\n`;
  }
  if (i % 5 < 4) {
    return `${head("DataPipe")}  organizationId: ${ids.organizationId}\n  serviceId: ${ids.serviceId}\n  dataPipeId: ${uuid(i, "1a1b1c1d")}\n  name: pipe-${i}${suffix}\n  source:\n    kafka:\n      iamRole: arn:aws:iam::1:role/r${i}\n  fieldMappings:\n    - {sourceField: id, destinationField: order_id}\n  settings:\n    streaming_max_insert_wait_ms: 500\n    engine_max_threads: 4\n`;
  }
  /** @param {number} k */
  const tile = (k) =>
    `    - {key: t${k}, name: "Tile ${k}", x: ${k * 4}, y: 0, w: 4, h: 3, series: [{type: time, dataSource: events, aggFn: count, where: "kind:t${k}"}]}`;
  return `${head("Dashboard")}  dashboardId: d${i}\n  name: Dashboard ${i}${suffix}\n  tags: [bench]\n  tiles:\n${[0, 1, 2].map(tile).join("\n")}\n`;
}

/**
 * @param {string} dir
 * @param {number} perFile
 * @param {(i: number) => boolean} changed
 */
async function writeManifests(dir, perFile, changed) {
  await mkdir(dir, { recursive: true });
  for (let f = 0; f * perFile < COUNT; f++) {
    /** @type {string[]} */
    const docs = [];
    for (let i = f * perFile; i < Math.min(COUNT, (f + 1) * perFile); i++) docs.push(manifest(i, changed(i)));
    await writeFile(join(dir, `m-${f}.yaml`), docs.join("---\n"));
  }
}

const cli = runCli;

/** @param {number} perFile */
async function measure(perFile) {
  const root = await mkdtemp(join(tmpdir(), "driftless-bench-base-"));
  const manifests = join(root, "manifests");
  /** @param {string[]} args */
  const git = (...args) =>
    execFileSync("git", ["-c", "user.email=b@example.com", "-c", "user.name=b", ...args], { cwd: root });
  try {
    await writeManifests(manifests, perFile, () => false);
    git("init", "-q");
    git("add", ".");
    git("commit", "-qm", "base");
    await seedState(manifests, join(root, "state"));
    await writeManifests(manifests, perFile, (i) => i % (COUNT / CHANGED) === 0);
    const base = await cli(["plan", "--base", "HEAD", manifests], { HOME: root }, root);
    const state = await cli(
      ["plan", manifests],
      { DRIFTLESS_STATE_DIR: join(root, "state"), DRIFTLESS_SECRETS_DIR: root, DRIFTLESS_LOG_LEVEL: "error" },
      root,
    );
    /** @param {{ stdout: string }} run */
    const last = (run) => run.stdout.trim().split("\n").at(-1);
    console.log(`${COUNT} manifests in ${Math.ceil(COUNT / perFile)} file(s), ${CHANGED} changed:`);
    console.log(
      `  plan --base HEAD (CLI):  ${(base.ms / 1000).toFixed(2)} s  (target < 2 s; exit ${base.code}) ${last(base)}`,
    );
    console.log(
      `  plan, state-based (CLI): ${(state.ms / 1000).toFixed(2)} s  (same target; exit ${state.code}) ${last(state)}`,
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

await measure(50);
await measure(1);
