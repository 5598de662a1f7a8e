import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { join } from "node:path";

/** The repository root: where examples/ and the built dist/ are. */
export const repo = join(import.meta.dirname, "..", "..");

/**
 * Runs the built `driftless` (npm test builds first) with `args`, a clean environment plus `env`, in
 * `cwd` (default: the repository root).
 */
export function driftless(args: string[], env: Record<string, string> = {}, cwd = repo) {
  const result = spawnSync(process.execPath, [join(repo, "dist", "cli.js"), ...args], {
    encoding: "utf8",
    cwd,
    env: { PATH: process.env.PATH ?? "", ...env },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The built `driftless` as a child process that does not block this one, with its output so far. */
export type Running = {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
};

/**
 * Starts the built `driftless` without blocking this process: for commands that talk to a server of
 * the test's own process (the simulator, a fake Kubernetes API, a daemon's HTTP server), which a
 * synchronous child would never get an answer from.
 */
export function startDriftless(args: string[], env: Record<string, string> = {}): Running {
  const child = spawn(process.execPath, [join(repo, "dist", "cli.js"), ...args], {
    cwd: repo,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once("close", (code) => resolve({ code, stdout: out, stderr: err })),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** `driftless(args)` to its end, without blocking this process (see startDriftless). */
export const driftlessAsync = (args: string[], env: Record<string, string> = {}) =>
  startDriftless(args, env).exited;
