import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "rolldown";
import { repo } from "./cli.js";

/**
 * `source` (a module of the repository, such as "src/state/file-lock.ts") bundled on its own into the
 * folder `into`, as the build bundles the CLI: for a child process that runs one module of the
 * product rather than the CLI. Returns the bundle's file URL, for the child's `import`.
 */
export async function bundle(source: string, into: string): Promise<string> {
  await build({
    input: join(repo, source),
    platform: "node",
    logLevel: "silent",
    output: { dir: into, format: "esm", entryFileNames: "module.js" },
  });
  return pathToFileURL(join(into, "module.js")).href;
}
