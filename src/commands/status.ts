import { z } from "zod";
import { SIMULATOR_PLATFORM } from "../config.js";
import { parseListen } from "../daemon/http-server.js";
import { causeOf, messageOf } from "../errors.js";
import { escapeJson, escapeLine } from "../escape.js";
import { SETTINGS } from "../settings.js";
import { inSync } from "./in-sync.js";
import type { Io, OutputFormat } from "./io.js";

/**
 * `driftless status`: a running daemon's `/status` as a table, like `kubectl get`. Exit 0 when the last
 * pass was ok and every resource is Synced (or Unmanaged: its manifest left git; in-sync.ts), 1
 * otherwise (a Suspended one too), 3 when no status could be read (unreachable, refused, not a daemon).
 */

export const EXIT_UNREACHABLE = 3;

/** How often `--watch` asks again. */
const WATCH_INTERVAL_MS = 2_000;

/** Time one request to the daemon may take. */
const REQUEST_TIMEOUT_MS = 10_000;

/** Where the daemon is and how to authenticate: shared by status, suspend and resume. */
export type DaemonTarget = {
  /** --url, else http:// and the listen address. */
  url?: string | undefined;
  listen: string;
  /** The bearer token to present, when there is one. */
  token?: string | undefined;
};

export type StatusOptions = DaemonTarget & {
  all: boolean;
  watch: boolean;
  output: OutputFormat;
  /** Ends --watch (the CLI's SIGINT). */
  signal?: AbortSignal;
};

/** The fields of `GET /status` this command reads (tolerant of more, and of statuses added later). */
export const StatusBody = z.looseObject({
  /** "simulator" while the built-in simulator stands in; older daemons do not say. */
  platform: z.string().optional(),
  revision: z.string().nullable(),
  leader: z.boolean().optional(),
  suspended: z.looseObject({ since: z.string(), reason: z.string().optional() }).nullable().optional(),
  lastPass: z.looseObject({ finishedAt: z.string(), ok: z.boolean() }).nullable(),
  passError: z.string().nullable().optional(),
  /** The deletes the mass-deletion guard holds; older daemons do not say. */
  deletesHeld: z.number().optional(),
  /** Older daemons do not say; they never read. */
  reads: z.string().optional(),
  resources: z.array(
    z.looseObject({
      kind: z.string(),
      name: z.string(),
      /** The platform's id of its object; older daemons do not say. */
      id: z.string().nullable().optional(),
      status: z.string(),
      next: z.string().optional(),
      lastError: z.string().nullable(),
      lastAppliedAt: z.string().nullable(),
      verifiedAt: z.string().nullable().optional(),
      note: z.string().optional(),
      /** Of a watch: when it was last polled. */
      polledAt: z.string().nullable().optional(),
    }),
  ),
});
export type StatusBody = z.infer<typeof StatusBody>;

/** Thrown when the daemon gave no status; its message says what to do. */
class Unreachable extends Error {
  override name = "Unreachable";
}

/** The daemon's base URL: --url, else the listen address with 0.0.0.0 (or ::) as loopback. */
export function daemonUrl(target: DaemonTarget): string {
  if (target.url) return target.url.replace(/\/+$/, "");
  const { host, port } = parseListen(target.listen);
  const local = host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${local.includes(":") ? `[${local}]` : local}:${port}`;
}

export async function statusCommand(options: StatusOptions, io: Io): Promise<number> {
  const url = daemonUrl(options);
  if (!options.watch) return once(url, options, io);
  let shown: string | undefined;
  let code = EXIT_UNREACHABLE;
  while (!options.signal?.aborted) {
    const { text, exit } = await render(url, options);
    code = exit;
    // Redrawn only on change, so the terminal does not flicker and a pipe gets one block per change.
    if (text !== shown) {
      io.out(shown === undefined ? text : `\n${text}`);
      shown = text;
    }
    await sleep(WATCH_INTERVAL_MS, options.signal);
  }
  return code;
}

async function once(url: string, options: StatusOptions, io: Io): Promise<number> {
  const { text, exit, error } = await render(url, options);
  if (error) io.err(`driftless: ${error}`);
  else io.out(text);
  return exit;
}

/** One look at the daemon: the text to show and the exit code it means. */
async function render(
  url: string,
  options: StatusOptions,
): Promise<{ text: string; exit: number; error?: string }> {
  let body: StatusBody;
  let raw: unknown;
  try {
    ({ body, raw } = await fetchStatus(url, options.token));
  } catch (error) {
    const text = messageOf(error);
    return { text: `cannot read the status: ${text}`, exit: EXIT_UNREACHABLE, error: text };
  }
  const exit = body.lastPass?.ok === true && inSync(body.resources) ? 0 : 1;
  if (options.output === "json") return { text: escapeJson(JSON.stringify(raw, null, 2)), exit };
  return { text: table(body, options.all, new Date()), exit };
}

async function fetchStatus(
  url: string,
  token: string | undefined,
): Promise<{ body: StatusBody; raw: unknown }> {
  let answer: Response;
  try {
    answer = await fetch(`${url}/status`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const cause = causeOf(error);
    throw new Unreachable(
      `cannot reach the daemon at ${url} (${messageOf(cause ?? error)}): is driftless run listening there? Give its address with --url`,
    );
  }
  if (answer.status === 401) {
    throw new Unreachable(
      `the daemon at ${url} wants a token: set ${SETTINGS.statusToken.env} (or ${SETTINGS.statusToken.env}_FILE) to its token`,
    );
  }
  if (!answer.ok) throw new Unreachable(`the daemon at ${url} answered ${answer.status} to GET /status`);
  const raw: unknown = await answer.json().catch(() => undefined);
  const parsed = StatusBody.safeParse(raw);
  if (!parsed.success) throw new Unreachable(`${url}/status is not the status of a driftless daemon`);
  return { body: parsed.data, raw };
}

const SIMULATOR_LINE = `this daemon reconciles the BUILT-IN SIMULATOR, not a real platform (set ${SETTINGS.managementUrl.env} and ${SETTINGS.observabilityUrl.env} to reconcile the real one)`;

/**
 * The table, with a line above it while the built-in simulator stands in for the platform, one while
 * the daemon is suspended, and one when nothing is to show.
 */
export function table(body: StatusBody, all: boolean, now: Date): string {
  const lines: string[] = [];
  if (body.platform === SIMULATOR_PLATFORM) lines.push(SIMULATOR_LINE);
  if (body.suspended) {
    const reason = body.suspended.reason ? `: ${body.suspended.reason}` : "";
    lines.push(
      escapeLine(`driftless is suspended since ${body.suspended.since}${reason} (driftless resume)`),
    );
  }
  if (body.leader === false) {
    lines.push(
      "this replica is a follower and reconciles nothing: ask the leader's pod (driftless_leader is 1)",
    );
  }
  if (body.passError) lines.push(escapeLine(`the last pass could not run: ${body.passError}`));
  if (body.deletesHeld) lines.push(heldLine(body.deletesHeld));
  if (!body.lastPass && body.leader !== false) lines.push("no reconcile pass has finished yet");
  const shown = body.resources.filter((r) => all || r.status !== "Synced");
  if (shown.length === 0) {
    if (body.lastPass) lines.push(`all ${body.resources.length} resources are Synced ${verified(body)}`);
    return lines.join("\n");
  }
  const rows = shown.map((r) => [
    r.kind,
    r.name,
    r.status,
    ageOf(r, now),
    r.id ?? "<none>",
    r.lastError ?? r.note ?? "",
  ]);
  const head = ["KIND", "NAME", "STATUS", "AGE", "ID", "MESSAGE"];
  lines.push(...columns([head, ...rows].map((row) => row.map(escapeLine))));
  return lines.join("\n");
}

/** What an operator reads when the mass-deletion guard holds deletes: how many, and how to let them go. */
const heldLine = (held: number): string =>
  `${held} ${held === 1 ? "delete is" : "deletes are"} held by the mass-deletion guard (more than ${SETTINGS.maxDeletes.env} in one pass): nothing is deleted until an operator lets them go. Check the Pending resources below (driftless plan shows each delete); if they are meant, driftless reconcile --allow-deletes ${held}; if not, fix git`;

/** What "Synced" stands on: reads that verified the live objects, or only the platform's acceptance. */
function verified(body: StatusBody): string {
  if (body.reads !== "on") return "(as applied; the live objects are not read: DRIFTLESS_READS=off)";
  const count = body.resources.filter((r) => r.verifiedAt).length;
  return `(${count} verified equal to git by a read)`;
}

/** Since the last successful apply, or for a watch (which driftless never writes) its last poll. */
function ageOf(resource: StatusBody["resources"][number], now: Date): string {
  const since = resource.lastAppliedAt ?? resource.polledAt;
  return since ? age(Date.parse(since), now.getTime()) : "<never>";
}

/** Rows as left-aligned columns three spaces apart (the last one not padded), as kubectl prints. */
function columns(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length))) ?? [];
  return rows.map((row) =>
    row
      .map((value, i) => (i === row.length - 1 ? value : value.padEnd(widths[i] ?? 0)))
      .join("   ")
      .trimEnd(),
  );
}

/** kubectl's age: 45s, 12m, 5h, 3d. */
export function age(thenMs: number, nowMs: number): string {
  if (!Number.isFinite(thenMs)) return "<unknown>";
  const seconds = Math.max(0, Math.floor((nowMs - thenMs) / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 2 * 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 2 * 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}
