import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { repo } from "./cli.js";

/**
 * The built `driftless` as a child process that does not block this one: the tests' simulator runs in
 * this process and must keep answering the daemon while a command such as `status` or `suspend` runs.
 */
export type Running = {
  child: ChildProcess;
  /** stdout so far. */
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
};

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

/** Runs the built `driftless` with `args` to its end, without blocking this process. */
export const runDriftless = (args: string[], env: Record<string, string> = {}) =>
  startDriftless(args, env).exited;
