// The benches' build: each module they import (bench/dist.mjs) bundled as an entry of its own into
// bench/.build/, the code they share in common chunks, with the CLI's build options
// (rolldown.config.ts): the benches run the code the CLI runs. `npm run bench` runs it after the CLI's build.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "rolldown";
import { loadConfig } from "rolldown/config";
import { BUILD, MODULES } from "./dist.mjs";

const repo = fileURLToPath(new URL("..", import.meta.url));
const config = await loadConfig(join(repo, "rolldown.config.ts"));
if (typeof config === "function" || Array.isArray(config) || Array.isArray(config.output))
  throw new Error("rolldown.config.ts must export one build with one output");

await build({
  ...config,
  input: Object.fromEntries(
    MODULES.map((path) => [path.replace(/\.js$/, ""), join(repo, "src", path.replace(/\.js$/, ".ts"))]),
  ),
  logLevel: "warn",
  output: { ...config.output, dir: join(repo, BUILD) },
});
