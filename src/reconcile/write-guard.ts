import { DriftlessError, messageOf } from "../errors.js";
import { DRIFTLESS_ANNOTATIONS } from "../manifests/fields.js";
import type { Manifest } from "../manifests/manifest.js";
import type { Suspended } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import type { EngineDeps, Pass } from "./types.js";

/**
 * "May I still write?", asked right before every attempt of a write, retries included: a write that
 * waited (for the rate budget, for a retry after a 429 or a 503, for a stalled process to resume) must
 * not leave once driftless was suspended, or once this process lost its lock or its leadership. The
 * engine asks before it saves a create's intent too; the HTTP client asks through the guard it is given.
 */

/** A write refused before it was sent: driftless is suspended (Suspended), or may no longer write (Failed). */
export class WriteRefusedError extends DriftlessError {
  override name = "WriteRefusedError";
  constructor(
    message: string,
    readonly status: "Suspended" | "Failed",
  ) {
    super(message);
  }
}

export const isWriteRefusedError = (e: unknown): e is WriteRefusedError => e instanceof WriteRefusedError;

/** Why nothing is sent for `manifest`: the whole daemon or the resource is suspended; else undefined. */
export function suspendedBecause(manifest: Manifest, daemon: Suspended | undefined): string | undefined {
  if (daemon) {
    const reason = daemon.reason ? ` (${daemon.reason})` : "";
    return `driftless is suspended since ${daemon.since}${reason}: nothing is sent until driftless resume`;
  }
  const annotation = DRIFTLESS_ANNOTATIONS.suspend;
  if (manifest.annotations[annotation] === "true") {
    return `suspended by its annotation ${annotation}: "true": nothing is sent for it until it is removed`;
  }
  return undefined;
}

/** What a write of one resource in one pass asks. */
export type WriteContext = { deps: EngineDeps; pass: Pass; manifest: Manifest; log: Logger };

/** Why `manifest` must not be written now because driftless is suspended (read from the switch first). */
function suspendedNow({ deps, pass, manifest }: WriteContext): string | undefined {
  // A suspend that arrived while this pass runs stops its writes from now on.
  deps.suspension?.sync(pass.state);
  return suspendedBecause(manifest, pass.state.suspended);
}

/**
 * Resolves when `manifest` may be written now; throws WriteRefusedError when it may not. The store
 * judges the lock and the leadership at the call (StateStore.ensureWritable); once it refuses, the pass
 * sends nothing more (`pass.stopped`). The suspension is read last, right before the caller sends.
 */
export async function ensureMayWrite(context: WriteContext): Promise<void> {
  const { deps, pass, log } = context;
  const before = suspendedNow(context);
  if (before) throw new WriteRefusedError(before, "Suspended");
  if (pass.stopped === undefined) {
    try {
      await deps.store.ensureWritable();
    } catch (error) {
      pass.stopped = messageOf(error);
      log.error({ err: error }, "this process may no longer write: the pass sends nothing more");
    }
  }
  if (pass.stopped !== undefined) throw new WriteRefusedError(`not sent: ${pass.stopped}`, "Failed");
  const after = suspendedNow(context);
  if (after) throw new WriteRefusedError(after, "Suspended");
}

/** The signal of one write, and what to call once it is over (it leaves its sources' listeners, and
 * tells the suspension switch the write is over). */
export type WriteSignal = { signal: AbortSignal; dispose(): void };

/**
 * The signal of one write: aborted when the pass is (shutdown, lost leadership), and when driftless is
 * suspended, so that a write waiting for the rate budget or for a retry stops waiting at once. Aborted by
 * a suspend, its reason is the WriteRefusedError to report.
 */
export function writeSignal(context: WriteContext, passSignal: AbortSignal | undefined): WriteSignal {
  const controller = new AbortController();
  const done = context.deps.suspension?.writing?.();
  const suspended = context.deps.suspension?.writesStopped?.();
  const onPass = () => controller.abort(passSignal?.reason);
  const onSuspend = () => {
    const why = suspendedNow(context) ?? "driftless was suspended";
    controller.abort(new WriteRefusedError(`${why}; the write waiting to be sent was dropped`, "Suspended"));
  };
  if (passSignal?.aborted) onPass();
  else if (suspended?.aborted) onSuspend();
  passSignal?.addEventListener("abort", onPass, { once: true });
  suspended?.addEventListener("abort", onSuspend, { once: true });
  return {
    signal: controller.signal,
    dispose() {
      passSignal?.removeEventListener("abort", onPass);
      suspended?.removeEventListener("abort", onSuspend);
      done?.();
    },
  };
}

/**
 * The refusal a failed write comes to, if it was refused rather than answered: the guard's, or the
 * suspend that stopped its wait (then with the answer it was waiting to retry, when there was one).
 */
export function refusalOf(error: unknown, signal: AbortSignal): WriteRefusedError | undefined {
  if (isWriteRefusedError(error)) return error;
  const reason: unknown = signal.reason;
  if (!signal.aborted || !isWriteRefusedError(reason)) return undefined;
  return new WriteRefusedError(`${reason.message} (its last attempt: ${messageOf(error)})`, reason.status);
}
