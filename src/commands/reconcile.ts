import { z } from "zod";
import type { ReconcileRequest } from "../daemon/http-server.js";
import { escapeJson, escapeLine } from "../escape.js";
import { inSync, notSyncedCounts } from "./in-sync.js";
import type { Io, OutputFormat } from "./io.js";
import { type DaemonTarget, StatusBody, table } from "./status.js";
import { operatorPost } from "./suspend.js";

/**
 * `driftless reconcile [--allow-deletes N]`: `POST /reconcile` on a running daemon, which starts a pass
 * now (or right after the running one), that may send up to N deletes the mass-deletion guard holds, and
 * answers once it ended; prints the resources not Synced and a summary. Exit 0
 * all in sync (in-sync.ts), 1 otherwise (a resource failed or is suspended, the pass could not run, the
 * daemon refused), 3 daemon unreachable.
 */

export type ReconcileOptions = DaemonTarget & {
  output: OutputFormat;
  /** `--allow-deletes N`: the pass may send up to N deletes the mass-deletion guard holds. */
  allowDeletes?: number | undefined;
};

/** The daemon waits up to 10 minutes for the pass; the client a little longer, to get its answer. */
const REQUEST_TIMEOUT_MS = 11 * 60_000;

/** The daemon's answer once the pass ended. */
const ReconcileAnswer = z.looseObject({ ok: z.boolean(), error: z.string().optional(), status: StatusBody });

export async function reconcileCommand(options: ReconcileOptions, io: Io): Promise<number> {
  const { allowDeletes } = options;
  const body: ReconcileRequest = allowDeletes === undefined ? {} : { allowDeletes };
  const answer = await operatorPost(
    { ...options, action: "reconcile", body, timeoutMs: REQUEST_TIMEOUT_MS },
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
  const exit = ok && inSync(status.resources) ? 0 : 1;
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

/**
 * `Reconcile: pass ok at <revision>: 12 resources, 0 not Synced.`; a pass that ended well but left
 * resources out of sync (suspended) says so instead of "ok", and counts the statuses not Synced.
 */
function summary(status: StatusBody, ok: boolean): string {
  const notSynced = status.resources.filter((r) => r.status !== "Synced").length;
  const at = status.revision ? ` at ${status.revision}` : "";
  const pass = !ok
    ? `pass failed${at}`
    : status.suspended
      ? `pass${at} sent nothing: driftless is suspended (driftless resume)`
      : inSync(status.resources)
        ? `pass ok${at}`
        : `pass done${at}, not in sync`;
  const counts = notSyncedCounts(status.resources);
  return `Reconcile: ${pass}: ${status.resources.length} resources, ${notSynced} not Synced${counts ? ` (${counts})` : ""}.`;
}
