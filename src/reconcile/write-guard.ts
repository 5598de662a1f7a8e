import { DriftlessError, messageOf } from "../errors.js";
import { DRIFTLESS_ANNOTATIONS } from "../manifests/fields.js";
import type { Manifest } from "../manifests/manifest.js";
import type { Cause } from "../resources.js";
import type { State, Suspended } from "../state/store.js";
import type { EngineDeps } from "./types.js";

/**
 * "May I still write?", asked right before every attempt of a write, retries included: a write that
 * waited (for the rate budget, for a retry after a 429 or a 503, for a stalled process to resume) must
 * not leave once driftless was suspended, or once this process lost its lock or its leadership. The
 * engine asks before it saves a create's intent too; the HTTP client asks through the guard it is given.
 */

/** The guard's verdict on a write it refuses: the resource's cause (see resources.ts CAUSES). */
export type WriteVerdict = Extract<Cause, "suspended" | "may-not-write">;

/**
 * A write refused before it was sent: driftless is suspended, or this process may no longer write.
 * `stopped` is set when this very call found out why it may no longer write (the store's answer).
 */
export class WriteRefusedError extends DriftlessError {
  override name = "WriteRefusedError";
  constructor(
    message: string,
    readonly verdict: WriteVerdict,
    readonly stopped?: string,
  ) {
    super(message);
  }
}

export const isWriteRefusedError = (e: unknown): e is WriteRefusedError => e instanceof WriteRefusedError;

/**
 * What a write is of: a manifest, or the record of one that left git (its object deleted), which has no
 * annotations left.
 */
export type Writer = Pick<Manifest, "kind" | "name" | "annotations"> & { spec: object };

/** Why nothing is sent for `manifest`: the whole daemon or the resource is suspended; else undefined. */
export function suspendedBecause(
  manifest: Pick<Manifest, "annotations">,
  daemon: Suspended | undefined,
): string | undefined {
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
export type WriteContext = {
  deps: Pick<EngineDeps, "store" | "suspension">;
  /** The pass's state: the suspension is laid over it before each look. */
  state: State;
  manifest: Writer;
  /** Why this process may no longer write, once a write of the pass found out (then the store is not asked). */
  stopped(): string | undefined;
};

/** Why `manifest` must not be written now because driftless is suspended (read from the switch first). */
function suspendedNow({ deps, state, manifest }: WriteContext): string | undefined {
  // A suspend that arrived while this pass runs stops its writes from now on.
  deps.suspension?.sync(state);
  return suspendedBecause(manifest, state.suspended);
}

/**
 * Resolves when `manifest` may be written now; throws WriteRefusedError when it may not. The store
 * judges the lock and the leadership at the call (StateStore.ensureWritable); its refusal carries the
 * reason (`stopped`), which the pass gives every later decision, so it sends nothing more. The
 * suspension is read last, right before the caller sends.
 */
export async function ensureMayWrite(context: WriteContext): Promise<void> {
  const before = suspendedNow(context);
  if (before) throw new WriteRefusedError(before, "suspended");
  const known = context.stopped();
  if (known !== undefined) throw new WriteRefusedError(`not sent: ${known}`, "may-not-write");
  try {
    await context.deps.store.ensureWritable();
  } catch (error) {
    const why = messageOf(error);
    throw new WriteRefusedError(`not sent: ${why}`, "may-not-write", why);
  }
  const after = suspendedNow(context);
  if (after) throw new WriteRefusedError(after, "suspended");
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
    controller.abort(new WriteRefusedError(`${why}; the write waiting to be sent was dropped`, "suspended"));
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
  return new WriteRefusedError(`${reason.message} (its last attempt: ${messageOf(error)})`, reason.verdict);
}
