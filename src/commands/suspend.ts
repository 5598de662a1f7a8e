import { causeOf, messageOf } from "../errors.js";
import { escapeLine } from "../escape.js";
import { SETTINGS } from "../settings.js";
import type { Io } from "./io.js";
import { type DaemonTarget, daemonUrl, EXIT_UNREACHABLE } from "./status.js";

/**
 * `driftless suspend [--reason TEXT]` and `driftless resume`: `POST /suspend` or `/resume` on a running
 * daemon. Exit 0 done, 1 refused (wrong token, a follower, switch off), 3 daemon unreachable.
 */

export type SwitchOptions = DaemonTarget & { action: "suspend" | "resume"; reason?: string | undefined };

/** The daemon's answer to an operator's POST: its status and JSON body; or the exit code to return. */
export type OperatorAnswer = { status: number; body: Record<string, unknown> } | { exit: number };

/**
 * `POST <daemon>/<action>` with the token when there is one (a daemon on loopback without a token takes
 * it from this machine without one). Says on stderr why it failed: unreachable (exit 3), or a token
 * the daemon wants or refuses (exit 1).
 */
export async function operatorPost(
  options: DaemonTarget & { action: string; body: Record<string, unknown>; timeoutMs: number },
  io: Io,
): Promise<OperatorAnswer> {
  const { action, token } = options;
  const url = daemonUrl(options);
  let answer: Response;
  try {
    answer = await fetch(`${url}/${action}`, {
      method: "POST",
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        "content-type": "application/json",
      },
      body: JSON.stringify(options.body),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (error) {
    const cause = causeOf(error);
    io.err(
      `driftless: cannot reach the daemon at ${url} (${messageOf(cause ?? error)}): is driftless run listening there? Give its address with --url`,
    );
    return { exit: EXIT_UNREACHABLE };
  }
  const body = (await answer.json().catch(() => ({}))) as Record<string, unknown>;
  if (answer.status === 401) {
    io.err(
      token
        ? `driftless: the daemon at ${url} refused the token: ${SETTINGS.statusToken.env} must be the daemon's`
        : `driftless: the daemon at ${url} wants its token: set ${SETTINGS.statusToken.env} (or, when the daemon has none, ${SETTINGS.webhookToken.env}), or its _FILE twin, as the daemon has it`,
    );
    return { exit: 1 };
  }
  return { status: answer.status, body };
}

export async function switchCommand(options: SwitchOptions, io: Io): Promise<number> {
  const { action } = options;
  const body = action === "suspend" && options.reason ? { reason: options.reason } : {};
  const answer = await operatorPost({ ...options, body, timeoutMs: 15_000 }, io);
  if ("exit" in answer) return answer.exit;
  if (answer.status < 200 || answer.status >= 300) {
    io.err(
      `driftless: ${action} refused (${answer.status}): ${escapeLine(String(answer.body.error ?? "no reason given"))}`,
    );
    return 1;
  }
  io.out(escapeLine(describe(action, answer.body)));
  if (typeof answer.body.warning === "string") io.err(`driftless: ${escapeLine(answer.body.warning)}`);
  return 0;
}

function describe(action: SwitchOptions["action"], body: Record<string, unknown>): string {
  if (action === "resume") return "resumed: writes are sent again";
  const suspended = body.suspended as { since?: string; reason?: string } | null | undefined;
  const reason = suspended?.reason ? ` (${suspended.reason})` : "";
  return `suspended since ${suspended?.since ?? "now"}${reason}: no write is sent until driftless resume`;
}
