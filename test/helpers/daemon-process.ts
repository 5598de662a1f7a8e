import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const CLI = fileURLToPath(new URL("../../dist/cli.js", import.meta.url));

export type LogLine = { msg?: string; level?: number; [field: string]: unknown };

export type DaemonProcess = {
  child: ChildProcess;
  /** `http://host:port` of its HTTP server, from its `listening` log line. */
  url: string;
  /** Every JSON log line so far (stderr), in order. */
  logs: LogLine[];
  /** Everything written to stderr, JSON or not. */
  stderr(): string;
  /** Everything written to stdout. */
  stdout(): string;
  /** Resolves with the first log line (past or future) that matches. */
  waitForLog(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Sends `signal` and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
  exited: Promise<number | null>;
};

/**
 * Starts `node dist/cli.js run` with `env` (over a minimal environment, never this process's) and
 * resolves once it logs the address it listens on. Build first (`npm run build`).
 */
export async function startDaemonProcess(
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<DaemonProcess> {
  const child = spawn(process.execPath, [CLI, "run"], {
    env: { PATH: process.env.PATH ?? "", DRIFTLESS_LISTEN: "127.0.0.1:0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: LogLine[] = [];
  let text = "";
  let out = "";
  let partial = "";
  const waiters = new Set<{ match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }>();
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
  });
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    text += chunk;
    partial += chunk;
    const lines = partial.split("\n");
    partial = lines.pop() ?? "";
    for (const raw of lines) {
      let line: LogLine;
      try {
        line = JSON.parse(raw) as LogLine;
      } catch {
        continue;
      }
      logs.push(line);
      for (const waiter of waiters) {
        if (waiter.match(line)) {
          waiters.delete(waiter);
          waiter.resolve(line);
        }
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));

  const waitForLog = (match: (line: LogLine) => boolean, ms = 30_000) => {
    const found = logs.find(match);
    if (found) return Promise.resolve(found);
    return new Promise<LogLine>((resolve, reject) => {
      const waiter = { match, resolve };
      waiters.add(waiter);
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`no matching log line in ${ms} ms; stderr so far:\n${text.slice(-4000)}`));
      }, ms);
      const done = waiter.resolve;
      waiter.resolve = (line) => {
        clearTimeout(timer);
        done(line);
      };
      void exited.then(() => {
        if (!waiters.has(waiter)) return;
        waiters.delete(waiter);
        clearTimeout(timer);
        reject(new Error(`daemon exited before the log line; stderr:\n${text.slice(-4000)}`));
      });
    });
  };

  const listening = await waitForLog((line) => line.msg === "listening", timeoutMs).catch((error) => {
    child.kill("SIGKILL");
    throw error;
  });
  return {
    child,
    url: `http://${String(listening.address)}`,
    logs,
    stderr: () => text,
    stdout: () => out,
    waitForLog,
    exited,
    async stop(signal = "SIGTERM", ms = 30_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), ms);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
