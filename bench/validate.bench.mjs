// Times `driftless validate` over generated trees of 1,000 and 10,000 manifests: in-process through
// dist/ (the loader alone) and as the CLI a CI job runs. Target: 10,000 manifests in under 2 s.
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { dist } from "./dist.mjs";

const repo = fileURLToPath(new URL("..", import.meta.url));
const { loadManifests } = await dist("manifests/load.js");
const TARGET_SECONDS = 2;
const ORG = "9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f";
const SERVICE = "2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7";

/** @param {number} n @param {number} width */
const hex = (n, width) => n.toString(16).padStart(width, "0");
/** @param {number} n */
const uuid = (n) => `${hex(n, 8)}-0000-4000-8000-${hex(n, 12)}`;

/**
 * One realistic manifest of a kind chosen by `i`, with ids unique across the tree.
 * @param {number} i
 */
function manifest(i) {
  /** @param {string} kind */
  const head = (kind) =>
    `apiVersion: driftless/v1\nkind: ${kind}\nmetadata:\n  name: m-${i}\n  labels: {team: t${i % 9}}\nspec:\n`;
  switch (i % 4) {
    case 0:
      return `${head("DataPipe")}  organizationId: ${ORG}\n  serviceId: ${SERVICE}\n  dataPipeId: ${uuid(i)}\n  name: pipe ${i}\n  source:\n    kafka:\n      iamRole: arn:aws:iam::111122223333:role/p${i}\n      credentials:\n        username: u${i}\n        password: {fromEnv: KAFKA_PASSWORD_${i}}\n  destination:\n    columns:\n      - {name: id, type: UInt64}\n      - {name: at, type: DateTime}\n  settings:\n    streaming_max_insert_wait_ms: 5000\n`;
    case 1:
      return `${head("ApiKey")}  organizationId: ${ORG}\n  keyId: ${uuid(i)}\n  name: key ${i}\n  roles: [developer]\n  expireAt: "2027-06-30T00:00:00Z"\n  ipAccessList:\n    - {source: 10.${i % 250}.0.0/16, description: office}\n`;
    case 2:
      return `${head("Dashboard")}  dashboardId: "${hex(i, 24)}"\n  name: board ${i}\n  tags: [bench]\n  tiles:\n    - {key: a, name: A, x: 0, y: 0, w: 6, h: 3, series: [{type: time, dataSource: events, aggFn: count, where: "level:error", groupBy: []}]}\n    - {key: b, name: B, x: 6, y: 0, w: 6, h: 3, series: [{type: number, dataSource: events, aggFn: count}]}\n`;
    default:
      return `${head("BackupWatch")}  organizationId: ${ORG}\n  serviceId: ${uuid(i)}\n  maxAge: 26h\n`;
  }
}

/** @param {number} count */
async function generate(count) {
  const root = await mkdtemp(join(tmpdir(), `driftless-bench-${count}-`));
  const folders = Math.ceil(count / 100);
  for (let f = 0; f < folders; f++) await mkdir(join(root, `team-${f}`));
  const writes = [];
  for (let i = 0; i < count; i++)
    writes.push(writeFile(join(root, `team-${Math.floor(i / 100)}`, `m-${i}.yaml`), manifest(i)));
  await Promise.all(writes);
  return root;
}

/** @param {number} bytes */
const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

// The machine may be shared: its load is printed so a slow figure can be read against it.
console.log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")} on ${os.availableParallelism()} CPUs`,
);
for (const count of [1_000, 10_000]) {
  const root = await generate(count);
  try {
    globalThis.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const set = await loadManifests(root);
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    if (set.manifests.length !== count || set.problems.length > 0) {
      throw new Error(
        `expected ${count} valid manifests, got ${set.manifests.length} and ${set.problems.length} problems`,
      );
    }

    const cliStarted = performance.now();
    const cli = spawnSync(process.execPath, [join(repo, "dist", "cli.js"), "validate", root], {
      encoding: "utf8",
    });
    const cliSeconds = (performance.now() - cliStarted) / 1000;
    if (cli.status !== 0) throw new Error(`validate exited ${cli.status}: ${cli.stdout}${cli.stderr}`);

    /** @param {number} s */
    const verdict = (s) =>
      count === 10_000 ? `${s < TARGET_SECONDS ? "meets" : "MISSES"} the ${TARGET_SECONDS} s target` : "";
    console.log(
      `validate ${count} manifests in-process: ${seconds.toFixed(2)} s, ${Math.round(count / seconds)} manifests/s, ` +
        `CPU ${cpuSeconds.toFixed(2)} s, peak RSS ${mb(peak)} (+${mb(peak - before)}) ${verdict(seconds)}`,
    );
    console.log(
      `validate ${count} manifests as the CLI:  ${cliSeconds.toFixed(2)} s, ${Math.round(count / cliSeconds)} manifests/s (process start included) ${verdict(cliSeconds)}`,
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
