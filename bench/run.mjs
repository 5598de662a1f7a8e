// Runs every bench/*.bench.mjs in its own process, one after the other, so each starts with a cold heap.
// Each prints its figures beside their targets or baselines from the same run.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const only = process.argv[2];
let failed = 0;
for (const file of readdirSync(here)
  .filter((f) => f.endsWith(".bench.mjs"))
  .sort()) {
  if (only && !file.includes(only)) continue;
  console.log(`\n## ${file}`);
  const result = spawnSync(process.execPath, ["--expose-gc", `${here}${file}`], { stdio: "inherit" });
  if (result.status !== 0) failed++;
}
process.exitCode = failed ? 1 : 0;
