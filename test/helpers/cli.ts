import { spawn, spawnSync } from "node:child_process";
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

/**
 * driftless() without blocking this process: for a CLI that talks to a simulator running in the test
 * process (spawnSync would keep the simulator from answering).
 */
export function driftlessAsync(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(repo, "dist", "cli.js"), ...args], {
      cwd: repo,
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
