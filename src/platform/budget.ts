import { DriftlessError } from "../errors.js";

/**
 * driftless's own rate budget for one credential, kept below the platform's limit so that driftless
 * itself never causes a 429 in normal operation. Every caller in the process that uses the credential
 * shares one budget (the composition root builds it once and passes it to the API client).
 */

/**
 * Who waits first: changes from git, then retries, then polls and periodic re-assertions, and last
 * the reads that look for drift (a large estate's reads may wait a whole round; nothing waits for them).
 */
export type Priority = "change" | "retry" | "poll" | "read";

export const PRIORITIES: readonly Priority[] = ["change", "retry", "poll", "read"];

export type BudgetOptions = {
  /** At most this many grants in any window of `windowMs`. */
  requests: number;
  windowMs: number;
  /**
   * Grants of the window that reads leave to the rest (default 0): reads hold at most `requests -
   * readHeadroom` of the window, so that a burst of changes from git up to this size finds them free,
   * however many reads run (polls and retries aside). Priority orders the requests that wait; it cannot
   * give back the slots reads already hold.
   */
  readHeadroom?: number;
  /** The longest hold a server may impose (hold); default DEFAULT_MAX_SERVER_WAIT_MS. */
  maxServerWaitMs?: number;
  /**
   * Milliseconds on a clock that never steps (default performance.now): a wall clock set back an hour
   * would count every grant of the last window for an hour more, and hold all traffic.
   */
  monotonic?: () => number;
};

/**
 * The longest wait driftless accepts from a platform's Retry-After or X-RateLimit-Reset: one answer
 * asking for a day must not freeze every write and poll of the credential for a day.
 */
export const DEFAULT_MAX_SERVER_WAIT_MS = 300_000;

/** Node's timers hold at most 2^31-1 ms; a longer delay fires after 1 ms, which would spin. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The management API allows about 10 requests per 10 s per key. 9 leaves one request of headroom for
 * the things we cannot see: the platform counting a request on arrival rather than when we sent it (so
 * two windows may overlap by a network latency), and an operator using the same key by hand.
 */
export const MANAGEMENT_BUDGET: BudgetOptions = { requests: 9, windowMs: 10_000 };

/** The observability API allows about 100 per minute per token; 90 keeps the same 10% headroom. */
export const OBSERVABILITY_BUDGET: BudgetOptions = { requests: 90, windowMs: 60_000 };

/**
 * The read headroom of the daemon's budgets (BudgetOptions.readHeadroom): its read rounds take at most
 * 3 of a key's 9 and 30 of the token's 90, so that a commit that changes up to 6 resources of a key is
 * sent at once, reads on or off (9 changes waited up to 9.6 s behind reads that held 5 or 6 slots).
 * A `plan` or `apply` has no change arriving while it reads, and reads with the whole window.
 */
export const DAEMON_READ_HEADROOM: Readonly<Record<"management" | "observability", number>> = {
  management: 6,
  observability: 60,
};

/**
 * Call when the request's answer (or failure) is in: its window starts then. `unused`: no request was
 * sent on this grant after all, and it does not count.
 */
export type Release = (unused?: boolean) => void;

export type AcquireOptions = {
  /** Rejects the wait with the signal's reason when it aborts before the grant. */
  signal?: AbortSignal;
  /**
   * Milliseconds from now to the request's deadline. A wait the budget paces ends as the queue moves;
   * the platform's hold (hold) has an end fixed in advance, and a hold that ends after the deadline
   * rejects the wait at once with a HeldError, instead of letting it sleep past the deadline.
   */
  deadlineMs?: number;
  /**
   * Called once, at once, when the request cannot be granted now and must wait: how long at least and
   * why, so that the caller can say so before the silence (a wait of 10 s looks like a hang).
   */
  onWait?: (wait: BudgetWait) => void;
};

/**
 * A wait that starts: at least `atLeastMs` (the time until the window frees a grant or the platform's
 * hold ends; longer when others wait before it), and why: the budget is spent (`used` of `limit` in
 * `windowSeconds`), or the platform holds the credential (`holdReason`).
 */
export type BudgetWait = {
  atLeastMs: number;
  why: "budget" | "hold";
  used: number;
  limit: number;
  windowSeconds: number;
  /** Requests already waiting before this one. */
  ahead: number;
  holdReason?: string;
};

export interface Budget {
  /**
   * Resolves when the request may be sent. Waiters are served strictly by priority, first come first
   * served within one. Rejects with the signal's reason when `signal` aborts before the grant, and with
   * a HeldError when the platform's hold outlasts `deadlineMs`. Call the returned Release when the
   * request is over; until then the request holds its place in the window.
   */
  acquire(priority: Priority, options?: AcquireOptions): Promise<Release>;
  /**
   * The platform said "not for `ms`" (a 429's Retry-After): no grant for `ms`, or for `maxServerWaitMs`
   * if that is sooner. `reason` names the answer that asked, for the errors of the waits it fails.
   */
  hold(ms: number, reason: string): void;
  /** How much of the window is spent now, for the status page. */
  usage(): BudgetUsage;
}

/**
 * A wait for the budget that cannot end before the request's deadline: the platform holds every request
 * of this credential for longer than the request has left. Nothing was sent.
 */
export class HeldError extends DriftlessError {
  override name = "HeldError";
  constructor(
    /** What asked for the hold (e.g. `a 429 answer to PATCH /v1/... asked for 86400 s, capped at 300 s`). */
    readonly reason: string,
    readonly heldMs: number,
    readonly leftMs: number,
  ) {
    super(
      `every request of this credential is held ${seconds(heldMs)} s more (${reason}), past this request's deadline (${seconds(leftMs)} s left)`,
    );
  }
}

export const isHeldError = (e: unknown): e is HeldError => e instanceof HeldError;

/** Whole seconds, rounded up: a hold of 0.4 s is "1 s more". */
const seconds = (ms: number) => Math.max(0, Math.ceil(ms / 1000));

/** A budget now: grants counted in the current window, of `limit`, and requests waiting for one. */
export type BudgetUsage = { used: number; limit: number; windowSeconds: number; waiting: number };

type Waiter = {
  resolve: (release: Release) => void;
  reject: (reason: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
  /** The request's deadline, on the budget's clock. */
  deadline: number;
};

/** The platform's hold: no grant before `until` (on the budget's clock), and who asked for it. */
type Hold = { until: number; reason: string };

/** One granted request: in flight until released, then counted until `at + windowMs`; a read's or not. */
type Slot = { at: number; inFlight: boolean; read: boolean };

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
  const { requests, windowMs, readHeadroom = 0 } = options;
  const maxServerWaitMs = options.maxServerWaitMs ?? DEFAULT_MAX_SERVER_WAIT_MS;
  const now = options.monotonic ?? (() => performance.now());
  if (!(requests >= 1) || !(windowMs > 0)) {
    throw new RangeError(`a budget needs requests >= 1 and windowMs > 0, got ${requests} per ${windowMs} ms`);
  }
  if (!(readHeadroom >= 0 && readHeadroom < requests)) {
    throw new RangeError(`a budget's readHeadroom must be from 0 to requests - 1, got ${readHeadroom}`);
  }
  let slots: Slot[] = [];
  const queues: Queues = { change: [], retry: [], poll: [], read: [] };
  let held: Hold = { until: Number.NEGATIVE_INFINITY, reason: "" };
  let timer: NodeJS.Timeout | undefined;

  /**
   * When a request of `priority` may be granted, with the slots that decide it and their limit: the
   * window's; for a read, also the reads' own share of it.
   */
  const freeFor = (priority: Priority, at: number): Free => {
    const all = freeAt(slots, at, { requests, windowMs });
    slots = all.slots;
    const window = { ...all, limit: requests };
    if (priority !== "read" || readHeadroom === 0) return window;
    const limit = requests - readHeadroom;
    const reads = freeAt(
      slots.filter((slot) => slot.read),
      at,
      { requests: limit, windowMs },
    );
    return reads.at > all.at ? { ...reads, limit } : window;
  };

  const grant = (at: number, priority: Priority): Release => {
    const slot: Slot = { at, inFlight: true, read: priority === "read" };
    slots.push(slot);
    return (unused) => {
      if (!slot.inFlight) return;
      slot.inFlight = false;
      if (unused) slots = slots.filter((s) => s !== slot);
      slot.at = Math.max(slot.at, now());
      pump();
    };
  };

  /** Grants what may be granted now, and arms a timer for the rest only while someone waits. */
  const pump = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    failPastDeadline(queues, held, now());
    for (let priority = firstPriority(queues); priority; priority = firstPriority(queues)) {
      const at = now();
      const openAt = Math.max(freeFor(priority, at).at, held.until);
      if (openAt > at) {
        // Not unref'd: a CLI whose only pending work is a request waiting for budget must not exit. A
        // stopping process aborts its waiters, and the last one to go disarms it (see waiterOf).
        timer = setTimeout(pump, Math.min(openAt - at, MAX_TIMER_MS));
        return;
      }
      const waiter = firstWaiter(queues) as Waiter;
      if (waiter.onAbort) waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.resolve(grant(at, priority));
    }
  };

  return {
    acquire(priority, { signal, deadlineMs = Number.POSITIVE_INFINITY, onWait } = {}) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise<Release>((resolve, reject) => {
        let done = false;
        const outcome = {
          resolve: (release: Release) => {
            done = true;
            resolve(release);
          },
          reject: (reason: unknown) => {
            done = true;
            reject(reason);
          },
          deadline: now() + deadlineMs,
        };
        const ahead = countWaiting(queues);
        queues[priority].push(waiterOf(queues[priority], outcome, signal, pump));
        pump();
        if (!done) {
          const at = now();
          onWait?.(waitOf(freeFor(priority, at), held, at, windowMs, ahead));
        }
      });
    },
    hold(ms, reason) {
      const until = now() + Math.min(ms, maxServerWaitMs);
      if (until > held.until) held = { until, reason };
      pump();
    },
    usage() {
      slots = freeAt(slots, now(), { requests, windowMs }).slots;
      return {
        used: slots.length,
        limit: requests,
        windowSeconds: windowMs / 1000,
        waiting: countWaiting(queues),
      };
    },
  };
}

/** When a grant may be made, and the slots counted against which limit decide it. */
type Free = { slots: Slot[]; at: number; limit: number };

/** Why a request made at `at` waits, and at least how long: the budget's window, or the platform's hold. */
function waitOf(free: Free, held: Hold, at: number, windowMs: number, ahead: number): BudgetWait {
  const why = held.until > free.at ? "hold" : "budget";
  return {
    atLeastMs: Math.max(0, Math.max(free.at, held.until) - at),
    why,
    used: free.slots.length,
    limit: free.limit,
    windowSeconds: windowMs / 1000,
    ahead,
    ...(why === "hold" ? { holdReason: held.reason } : {}),
  };
}

/** Rejects, with a HeldError, every waiter whose deadline comes before the platform's hold ends. */
function failPastDeadline(queues: Queues, held: Hold, now: number): void {
  if (held.until <= now) return;
  for (const priority of PRIORITIES) {
    const queue = queues[priority];
    for (const waiter of queue.filter((w) => w.deadline < held.until)) {
      queue.splice(queue.indexOf(waiter), 1);
      if (waiter.onAbort) waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.reject(new HeldError(held.reason, held.until - now, Math.max(0, waiter.deadline - now)));
    }
  }
}

type Queues = Record<Priority, Waiter[]>;

/**
 * A waiter for `queue` that leaves it when `signal` aborts, and then calls `pump`: with no one left
 * waiting, no timer may keep the process alive.
 */
function waiterOf(
  queue: Waiter[],
  outcome: Pick<Waiter, "resolve" | "reject" | "deadline">,
  signal: AbortSignal | undefined,
  pump: () => void,
): Waiter {
  const waiter: Waiter = { ...outcome, signal };
  if (!signal) return waiter;
  waiter.onAbort = () => {
    const index = queue.indexOf(waiter);
    if (index >= 0) queue.splice(index, 1);
    waiter.reject(signal.reason);
    pump();
  };
  signal.addEventListener("abort", waiter.onAbort, { once: true });
  return waiter;
}

/** The first waiter by priority, taken off its queue. */
function firstWaiter(queues: Queues): Waiter | undefined {
  for (const priority of PRIORITIES) {
    const waiter = queues[priority].shift();
    if (waiter) return waiter;
  }
  return undefined;
}

function countWaiting(queues: Queues): number {
  return PRIORITIES.reduce((sum, priority) => sum + queues[priority].length, 0);
}

/** The priority of the waiter served next, or undefined when no one waits. */
function firstPriority(queues: Queues): Priority | undefined {
  return PRIORITIES.find((priority) => queues[priority].length > 0);
}

/**
 * The slots still counted at `now`, and the earliest time another grant may be made (a server's hold
 * aside). A grant never released counts as released RELEASE_AFTER_MS after it was made; its window
 * runs from then.
 */
function freeAt(slots: Slot[], now: number, limit: { requests: number; windowMs: number }) {
  for (const slot of slots) {
    if (slot.inFlight && slot.at <= now - RELEASE_AFTER_MS) {
      Object.assign(slot, { inFlight: false, at: slot.at + RELEASE_AFTER_MS });
    }
  }
  const counted = slots.filter((slot) => slot.inFlight || slot.at > now - limit.windowMs);
  if (counted.length < limit.requests) return { slots: counted, at: now };
  const ends = counted
    .map((slot) => (slot.inFlight ? slot.at + RELEASE_AFTER_MS : slot.at) + limit.windowMs)
    .sort((a, b) => a - b);
  // A read's limit is below the window's: as many slots must end as it holds beyond it, and one.
  return { slots: counted, at: ends[counted.length - limit.requests] as number };
}
