// The benches' build: each module they import (bench/dist.mjs) bundled as an entry of its own into
// bench/.build/, the code they share in common chunks, as the CLI's bundle (rolldown.config.ts) is
// built: the benches run the code the CLI runs. `npm run bench` runs it after the CLI's build.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "rolldown";
import { BUILD, MODULES } from "./dist.mjs";

const repo = fileURLToPath(new URL("..", import.meta.url));

await build({
  input: Object.fromEntries(
    MODULES.map((path) => [path.replace(/\.js$/, ""), join(repo, "src", path.replace(/\.js$/, ".ts"))]),
  ),
  platform: "node",
  logLevel: "warn",
  output: { dir: join(repo, BUILD), format: "esm", cleanDir: true },
});
