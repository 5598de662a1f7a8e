import { ConfigError, causeOf, messageOf } from "../errors.js";
import { escapeLine } from "../escape.js";
import { SETTINGS } from "../settings.js";
import type { Io } from "./io.js";
import { type DaemonTarget, daemonUrl, EXIT_UNREACHABLE } from "./status.js";

/**
 * `driftless suspend [--reason TEXT]` and `driftless resume`: `POST /suspend` or `/resume` on a running
 * daemon. Exit 0 done, 1 refused (wrong token, a follower, switch off), 3 daemon unreachable.
 */

export type SwitchOptions = DaemonTarget & { action: "suspend" | "resume"; reason?: string | undefined };

/** Throws ConfigError when no token is set: the daemon refuses the switch without one. */
export async function switchCommand(options: SwitchOptions, io: Io): Promise<number> {
  const { action, token } = options;
  if (!token) {
    throw new ConfigError(
      `driftless ${action} needs the daemon's token: set ${SETTINGS.statusToken.env} (or, when the daemon has none, ${SETTINGS.webhookToken.env}), or its _FILE twin`,
    );
  }
  const url = daemonUrl(options);
  let answer: Response;
  try {
    answer = await fetch(`${url}/${action}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(action === "suspend" && options.reason ? { reason: options.reason } : {}),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (error) {
    const cause = causeOf(error);
    io.err(
      `driftless: cannot reach the daemon at ${url} (${messageOf(cause ?? error)}): is driftless run listening there? Give its address with --url`,
    );
    return EXIT_UNREACHABLE;
  }
  const body = (await answer.json().catch(() => ({}))) as Record<string, unknown>;
  if (answer.status === 401) {
    io.err(
      `driftless: the daemon at ${url} refused the token: ${SETTINGS.statusToken.env} must be the daemon's`,
    );
    return 1;
  }
  if (!answer.ok) {
    io.err(
      `driftless: ${action} refused (${answer.status}): ${escapeLine(String(body.error ?? "no reason given"))}`,
    );
    return 1;
  }
  io.out(escapeLine(describe(action, body)));
  if (typeof body.warning === "string") io.err(`driftless: ${escapeLine(body.warning)}`);
  return 0;
}

function describe(action: SwitchOptions["action"], body: Record<string, unknown>): string {
  if (action === "resume") return "resumed: writes are sent again";
  const suspended = body.suspended as { since?: string; reason?: string } | null | undefined;
  const reason = suspended?.reason ? ` (${suspended.reason})` : "";
  return `suspended since ${suspended?.since ?? "now"}${reason}: no write is sent until driftless resume`;
}
