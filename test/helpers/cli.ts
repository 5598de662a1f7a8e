import { spawnSync } from "node:child_process";
import { join } from "node:path";

/** The repository root: where examples/ and the built dist/ are. */
export const repo = join(import.meta.dirname, "..", "..");

/** Runs the built `driftless` (npm test builds first) with `args`, a clean environment plus `env`. */
export function driftless(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [join(repo, "dist", "cli.js"), ...args], {
    encoding: "utf8",
    cwd: repo,
    env: { PATH: process.env.PATH ?? "", ...env },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}
