import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "rolldown";
import { afterAll, beforeAll } from "vitest";
import config from "../../rolldown.config.js";
import { repo } from "./cli.js";

/**
 * `source` (a module of the repository, such as "src/state/file-lock.ts") bundled on its own, as the
 * build bundles the CLI (rolldown.config.ts), into a temporary folder: for a child process that runs
 * one module of the product rather than the CLI. Registers the beforeAll and afterAll hooks that build
 * and remove it; the function returned gives, in a test, the bundle's file URL for the child's import.
 */
export function bundled(source: string): () => string {
  let folder: string | undefined;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), "driftless-bundle-"));
    await build({
      ...config,
      input: join(repo, source),
      logLevel: "silent",
      output: { ...config.output, dir: folder, entryFileNames: "module.js" },
    });
  });
  afterAll(async () => {
    if (folder) await rm(folder, { recursive: true, force: true });
  });
  return () => {
    if (!folder) throw new Error(`${source} is bundled in beforeAll: read its URL in a test`);
    return pathToFileURL(join(folder, "module.js")).href;
  };
}
