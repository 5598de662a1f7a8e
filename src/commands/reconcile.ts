import { z } from "zod";
import { escapeJson, escapeLine } from "../escape.js";
import type { Io, OutputFormat } from "./io.js";
import { type DaemonTarget, StatusBody, table } from "./status.js";
import { operatorPost } from "./suspend.js";

/**
 * `driftless reconcile`: `POST /reconcile` on a running daemon, which starts a pass now (or right after
 * the running one) and answers once it ended; prints the resources not Synced and a summary. Exit 0
 * all in sync, 1 any resource failed or the pass could not run (or the daemon refused), 3 daemon
 * unreachable.
 */

export type ReconcileOptions = DaemonTarget & { output: OutputFormat };

/** The daemon waits up to 10 minutes for the pass; the client a little longer, to get its answer. */
const REQUEST_TIMEOUT_MS = 11 * 60_000;

/** The daemon's answer once the pass ended. */
const ReconcileAnswer = z.looseObject({ ok: z.boolean(), error: z.string().optional(), status: StatusBody });

export async function reconcileCommand(options: ReconcileOptions, io: Io): Promise<number> {
  const answer = await operatorPost(
    { ...options, action: "reconcile", body: {}, timeoutMs: REQUEST_TIMEOUT_MS },
    io,
  );
  if ("exit" in answer) return answer.exit;
  const parsed = ReconcileAnswer.safeParse(answer.body);
  if (answer.status !== 200 || !parsed.success) {
    const reason =
      typeof answer.body.error === "string" ? answer.body.error : "not the answer of a driftless daemon";
    io.err(`driftless: reconcile refused (${answer.status}): ${escapeLine(reason)}`);
    return 1;
  }
  const { ok, error, status } = parsed.data;
  const exit = ok ? 0 : 1;
  if (options.output === "json") {
    io.out(escapeJson(JSON.stringify({ ...answer.body, exitCode: exit }, null, 2)));
    return exit;
  }
  // Why a pass could not run is in the table's first lines (the status's passError).
  const shown = table(
    error && !status.passError ? { ...status, passError: error } : status,
    false,
    new Date(),
  );
  if (shown) io.out(shown);
  io.out(escapeLine(summary(status, ok)));
  return exit;
}

/** `Reconcile: pass ok at <revision>: 12 resources, 0 not Synced.` */
function summary(status: StatusBody, ok: boolean): string {
  const notSynced = status.resources.filter((r) => r.status !== "Synced").length;
  const revision = status.revision ? ` at ${status.revision}` : "";
  return `Reconcile: pass ${ok ? "ok" : "failed"}${revision}: ${status.resources.length} resources, ${notSynced} not Synced.`;
}
