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

export interface Budget {
  /**
   * Resolves when the request may be sent. Waiters are served strictly by priority, first come first
   * served within one. Rejects with the signal's reason when `signal` aborts before the grant.
   */
  acquire(priority: Priority, signal?: AbortSignal): Promise<void>;
  /** The platform said "not before then" (a 429's Retry-After): no grant until `epochMs`. */
  holdUntil(epochMs: number): void;
}

type Waiter = {
  resolve: () => void;
  reject: (reason: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
};

/**
 * A sliding-window budget: the times of the last `requests` grants are kept, and a grant is made only
 * when fewer than `requests` fall in the last `windowMs`. Unlike a fixed window, this never allows a
 * burst of 2 × requests across a window boundary, whichever way the platform aligns its own window.
 */
export function createBudget(options: BudgetOptions): Budget {
  const { requests, windowMs } = options;
  if (!(requests >= 1) || !(windowMs > 0)) {
    throw new RangeError(`a budget needs requests >= 1 and windowMs > 0, got ${requests} per ${windowMs} ms`);
  }
  const granted: number[] = [];
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

  /** The earliest time another grant may be made. */
  const freeAt = (now: number): number => {
    while (granted.length > 0 && (granted[0] as number) <= now - windowMs) granted.shift();
    const windowFree = granted.length < requests ? now : (granted[0] as number) + windowMs;
    return Math.max(windowFree, heldUntil);
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
      granted.push(now);
      if (waiter.onAbort) waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.resolve();
    }
  };

  return {
    acquire(priority, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise<void>((resolve, reject) => {
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
  };
}
