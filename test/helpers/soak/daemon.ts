import { DEFAULT_MAX_DELETES } from "../../../src/reconcile/deletes.js";
import { type DaemonProcess, type LogLine, startDaemonProcess } from "../daemon-process.js";
import type { StatusBody } from "../daemon-run.js";
import type { Life } from "./lifecycle.js";

/**
 * The daemon of the soak: one `node dist/cli.js run` at a time, killed and started again, its output
 * of every life kept (the secrets check reads all of it), its HTTP server read with the status token.
 */

export type SoakStatus = StatusBody & {
  passError: string | null;
  lastPass: { startedAt: string; finishedAt: string; ok: boolean } | null;
};

/** How long the daemon gets to say it listens, and its HTTP server to answer, on a busy machine. */
const START_MS = 60_000;
const ANSWER_MS = 30_000;
/** Longer than any planted secret (the Basic credentials are about 110 characters). */
const OVERLAP = 256;

export class SoakDaemon {
  private process: DaemonProcess | undefined;
  private readonly past: string[] = [];
  /** How much of the running daemon's stderr and stdout the secrets check has read. */
  private errRead = 0;
  private outRead = 0;
  /** Output of ended daemons the secrets check has not read yet. */
  private pending = "";
  /** How many of the running daemon's log lines the failures check has read, and those of ended ones it has not. */
  private logsRead = 0;
  private pendingLogs: LogLine[] = [];
  /** Every start, with the delete settings it ran with (lifecycle.ts). */
  readonly lives: Life[] = [];
  starts = 0;
  kills = 0;

  constructor(
    private readonly baseEnv: () => Record<string, string>,
    private readonly statusToken: string,
  ) {}

  get running(): DaemonProcess | undefined {
    return this.process;
  }

  async start(extra: Record<string, string> = {}): Promise<void> {
    if (this.process) throw new Error("the soak starts a daemon while one runs");
    const env = { ...this.baseEnv(), ...extra };
    const startedAt = Date.now();
    const started = await startDaemonProcess(env, START_MS);
    this.process = started;
    this.lives.push({
      what: `the daemon's start ${this.starts + 1}`,
      startedAt,
      maxDeletes: Number(env.DRIFTLESS_MAX_DELETES ?? DEFAULT_MAX_DELETES),
      prune: env.DRIFTLESS_PRUNE !== "off",
      logs: () => started.logs,
    });
    this.errRead = 0;
    this.outRead = 0;
    this.logsRead = 0;
    this.starts += 1;
  }

  /** SIGKILL (or SIGTERM, a clean stop) and wait for the exit; returns the exit code. */
  async stop(signal: "SIGKILL" | "SIGTERM"): Promise<number | null> {
    const d = this.process;
    if (!d) return null;
    if (signal === "SIGKILL") this.kills += 1;
    const code = await d.stop(signal, 60_000);
    this.pending += this.unread(d);
    this.pendingLogs.push(...d.logs.slice(this.logsRead));
    this.past.push(d.stderr(), d.stdout());
    this.process = undefined;
    return code;
  }

  /** Throws when the daemon ended without being told to. */
  checkAlive(): void {
    const child = this.process?.child;
    if (!child || (child.exitCode === null && child.signalCode === null)) return;
    throw new Error(
      `the daemon exited on its own (code ${child.exitCode}, signal ${child.signalCode}); stderr:\n${this.process?.stderr().slice(-4000)}`,
    );
  }

  /** Everything every daemon wrote, stdout and stderr. */
  allOutput(): string {
    return [...this.past, this.process?.stderr() ?? "", this.process?.stdout() ?? ""].join("\n");
  }

  /**
   * What the daemons wrote (stdout and stderr) that the last call did not return, with the few hundred
   * characters before it, so that a secret cut between two calls is still seen whole.
   */
  newOutput(): string {
    const fresh = this.pending + (this.process ? this.unread(this.process) : "");
    this.pending = "";
    return fresh;
  }

  /** The log lines of every daemon that the last call did not return. */
  newLogLines(): LogLine[] {
    const logs = this.process?.logs ?? [];
    const fresh = [...this.pendingLogs, ...logs.slice(this.logsRead)];
    this.pendingLogs = [];
    this.logsRead = logs.length;
    return fresh;
  }

  private unread(d: DaemonProcess): string {
    const err = d.stderr();
    const out = d.stdout();
    const text = `${err.slice(Math.max(0, this.errRead - OVERLAP))}\n${out.slice(Math.max(0, this.outRead - OVERLAP))}`;
    this.errRead = err.length;
    this.outRead = out.length;
    return text;
  }

  /** Passes finished (or failed) over every life of the daemon. */
  passes(): number {
    const all = [...this.past, this.process?.stderr() ?? ""].join("\n");
    return (all.match(/"msg":"pass (finished|failed)"/g) ?? []).length;
  }

  /** The last lines of the running (or last) daemon's stderr. */
  tail(chars = 6000): string {
    return (this.process?.stderr() ?? this.past.at(-2) ?? "").slice(-chars);
  }

  /** Log lines of the running daemon. */
  logs() {
    return this.process?.logs ?? [];
  }

  private async get(path: string): Promise<Response> {
    const d = this.process;
    if (!d) throw new Error(`no daemon to ask for ${path}`);
    try {
      return await fetch(`${d.url}${path}`, {
        headers: { authorization: `Bearer ${this.statusToken}` },
        signal: AbortSignal.timeout(ANSWER_MS),
      });
    } catch (error) {
      throw new Error(
        `the daemon's GET ${path} got no answer in ${ANSWER_MS / 1000} s: ${(error as Error).message}`,
      );
    }
  }

  async status(): Promise<SoakStatus> {
    const answer = await this.get("/status");
    if (answer.status !== 200) throw new Error(`GET /status answered ${answer.status}`);
    return (await answer.json()) as SoakStatus;
  }

  /**
   * /status, /, /metrics, /healthz and /readyz as text, for the secrets check; throws when one does
   * not answer, or answers other than 200 (/readyz: 503 before the first pass of a start).
   */
  async pages(): Promise<Array<[string, string]>> {
    const pages: Array<[string, string]> = [];
    for (const path of ["/status", "/", "/metrics", "/healthz", "/readyz"]) {
      const answer = await this.get(path);
      const text = await answer.text();
      const fine = answer.status === 200 || (path === "/readyz" && answer.status === 503);
      if (!fine) throw new Error(`the daemon's GET ${path} answered ${answer.status}: ${text.slice(0, 500)}`);
      pages.push([`the daemon's ${path}`, text]);
    }
    return pages;
  }

  /** POSTs /hooks/sync/<token> as git-sync's webhook does, naming `revision`. */
  async hook(token: string, revision: string): Promise<number> {
    const d = this.process;
    if (!d) return 0;
    const answer = await fetch(`${d.url}/hooks/sync/${token}`, {
      method: "POST",
      headers: { "gitsync-hash": revision },
      signal: AbortSignal.timeout(ANSWER_MS),
    });
    return answer.status;
  }
}
