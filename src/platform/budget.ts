/**
 * driftless's own rate budget for one credential, kept below the platform's limit so that driftless
 * itself never causes a 429 in normal operation. Every caller in the process that uses the credential
 * shares one budget (the composition root builds it once and passes it to the API client).
 */

/** Who waits first: changes from git, then retries, then polls and periodic re-assertions. */
export type Priority = "change" | "retry" | "poll";

export const PRIORITIES: readonly Priority[] = ["change", "retry", "poll"];

export type BudgetOptions = {
  /** At most this many grants in any window of `windowMs`. */
  requests: number;
  windowMs: number;
};

/**
 * The management API allows about 10 requests per 10 s per key. 9 leaves one request of headroom for
 * the things we cannot see: the platform counting a request on arrival rather than when we sent it (so
 * two windows may overlap by a network latency), and an operator using the same key by hand.
 */
export const MANAGEMENT_BUDGET: BudgetOptions = { requests: 9, windowMs: 10_000 };

/** The observability API allows about 100 per minute per token; 90 keeps the same 10% headroom. */
export const OBSERVABILITY_BUDGET: BudgetOptions = { requests: 90, windowMs: 60_000 };

/** Call when the request's answer (or failure) is in: its window starts then. */
export type Release = () => void;

export interface Budget {
  /**
   * Resolves when the request may be sent. Waiters are served strictly by priority, first come first
   * served within one. Rejects with the signal's reason when `signal` aborts before the grant. Call the
   * returned Release when the request is over; until then the request holds its place in the window.
   */
  acquire(priority: Priority, signal?: AbortSignal): Promise<Release>;
  /** The platform said "not before then" (a 429's Retry-After): no grant until `epochMs`. */
  holdUntil(epochMs: number): void;
  /** How much of the window is spent now, for the status page. */
  usage(): BudgetUsage;
}

/** A budget now: grants counted in the current window, of `limit`, and requests waiting for one. */
export type BudgetUsage = { used: number; limit: number; windowSeconds: number; waiting: number };

type Waiter = {
  resolve: (release: Release) => void;
  reject: (reason: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
};

/** One granted request: in flight until released, then counted until `at + windowMs`. */
type Slot = { at: number; inFlight: boolean };

/**
 * A grant never released (a caller that ignores Release, or a request that never ends) counts as
 * released this long after it was made, so that it cannot hold its place forever. Longer than any
 * request's time-out.
 */
export const RELEASE_AFTER_MS = 5 * 60_000;

/**
 * A sliding-window budget that counts a request from its grant until `windowMs` after its answer.
 * The platform counts a request when it arrives, which is somewhere between our send and our answer
 * (a cold TLS connection may delay it by hundreds of ms): counting from the grant alone would let a
 * delayed batch and the next one arrive within one of the platform's windows. Counting to the answer
 * guarantees that no more than `requests` arrive in any window of `windowMs`, however the platform
 * aligns its window and whatever the latency.
 */
export function createBudget(options: BudgetOptions): Budget {
  const { requests, windowMs } = options;
  if (!(requests >= 1) || !(windowMs > 0)) {
    throw new RangeError(`a budget needs requests >= 1 and windowMs > 0, got ${requests} per ${windowMs} ms`);
  }
  let slots: Slot[] = [];
  const queues: Record<Priority, Waiter[]> = { change: [], retry: [], poll: [] };
  let heldUntil = 0;
  let timer: NodeJS.Timeout | undefined;

  const next = (): Waiter | undefined => {
    for (const priority of PRIORITIES) {
      const waiter = queues[priority].shift();
      if (waiter) return waiter;
    }
    return undefined;
  };
  const waiting = () => PRIORITIES.some((priority) => queues[priority].length > 0);

  /** The earliest time another grant may be made; undefined until an in-flight request is released. */
  const freeAt = (now: number): number => {
    for (const slot of slots) {
      if (slot.inFlight && slot.at <= now - RELEASE_AFTER_MS)
        Object.assign(slot, { inFlight: false, at: now });
    }
    slots = slots.filter((slot) => slot.inFlight || slot.at > now - windowMs);
    if (slots.length < requests) return Math.max(now, heldUntil);
    const ends = slots.map((slot) => (slot.inFlight ? slot.at + RELEASE_AFTER_MS : slot.at) + windowMs);
    return Math.max(Math.min(...ends), heldUntil);
  };

  const grant = (now: number): Release => {
    const slot: Slot = { at: now, inFlight: true };
    slots.push(slot);
    return () => {
      if (!slot.inFlight) return;
      slot.inFlight = false;
      slot.at = Math.max(slot.at, Date.now());
      pump();
    };
  };

  const pump = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    while (waiting()) {
      const now = Date.now();
      const at = freeAt(now);
      if (at > now) {
        // Not unref'd: a CLI whose only pending work is a request waiting for budget must not exit.
        timer = setTimeout(pump, at - now);
        return;
      }
      const waiter = next() as Waiter;
      if (waiter.onAbort) waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.resolve(grant(now));
    }
  };

  return {
    acquire(priority, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise<Release>((resolve, reject) => {
        const waiter: Waiter = { resolve, reject, signal };
        if (signal) {
          waiter.onAbort = () => {
            const queue = queues[priority];
            const index = queue.indexOf(waiter);
            if (index >= 0) queue.splice(index, 1);
            reject(signal.reason);
          };
          signal.addEventListener("abort", waiter.onAbort, { once: true });
        }
        queues[priority].push(waiter);
        pump();
      });
    },
    holdUntil(epochMs) {
      heldUntil = Math.max(heldUntil, epochMs);
      pump();
    },
    usage() {
      freeAt(Date.now());
      const waiters = PRIORITIES.reduce((sum, priority) => sum + queues[priority].length, 0);
      return { used: slots.length, limit: requests, windowSeconds: windowMs / 1000, waiting: waiters };
    },
  };
}
