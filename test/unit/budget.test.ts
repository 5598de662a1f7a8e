import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  createBudget,
  DAEMON_READ_HEADROOM,
  isHeldError,
  MANAGEMENT_BUDGET,
  OBSERVABILITY_BUDGET,
  type Priority,
  RELEASE_AFTER_MS,
} from "../../src/platform/budget.js";

/**
 * The rate budget's arithmetic, on a fake clock: how many grants a window holds, when the window of a
 * grant starts and ends, how a server hold is capped, and that no timer outlives its waiters.
 */

const T0 = Date.parse("2026-01-01T00:00:00Z");
const MAX_TIMER_MS = 2 ** 31 - 1;

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Grants so far of `pending`, without waiting in real time. */
async function settled<T>(pending: Promise<T>[]): Promise<number> {
  let done = 0;
  for (const promise of pending) void promise.then(() => done++);
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

describe("rule: at most `requests` grants in any window of `windowMs`", () => {
  it("grants `requests` at once and the next only when the first one's window has passed", async () => {
    const budget = createBudget({ requests: 2, windowMs: 1000 });
    const releases = await Promise.all([budget.acquire("change"), budget.acquire("change")]);
    for (const release of releases) release();
    const third = budget.acquire("change");

    expect(await settled([third])).toBe(0);
    await vi.advanceTimersByTimeAsync(999);
    expect(await settled([third])).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled([third])).toBe(1);
  });
});

describe("rule: the defaults stay below the platform's limits", () => {
  it("asks less than 10 management requests per 10 s and 100 observability requests per minute", () => {
    expect(MANAGEMENT_BUDGET.requests / MANAGEMENT_BUDGET.windowMs).toBeLessThan(10 / 10_000);
    expect(OBSERVABILITY_BUDGET.requests / OBSERVABILITY_BUDGET.windowMs).toBeLessThan(100 / 60_000);
    expect(MANAGEMENT_BUDGET.windowMs).toBeGreaterThanOrEqual(10_000);
    expect(OBSERVABILITY_BUDGET.windowMs).toBeGreaterThanOrEqual(60_000);
  });

  it("never lets a burst of twice the default management budget past 10 requests in any 10 s", async () => {
    const budget = createBudget(MANAGEMENT_BUDGET);
    const grantedAt: number[] = [];
    // Each request is answered the moment it is granted: the fastest a platform can be.
    const all = Array.from({ length: 2 * MANAGEMENT_BUDGET.requests }, () =>
      budget.acquire("change").then((release) => {
        grantedAt.push(Date.now());
        release();
      }),
    );

    await vi.advanceTimersByTimeAsync(2 * MANAGEMENT_BUDGET.windowMs);
    await Promise.all(all);

    const busiest = Math.max(
      ...grantedAt.map((t) => grantedAt.filter((u) => u >= t && u < t + 10_000).length),
    );
    expect(grantedAt).toHaveLength(2 * MANAGEMENT_BUDGET.requests);
    expect(busiest).toBeLessThanOrEqual(10);
  });
});

describe("rule: a grant's window starts at its release (its answer), not at the grant", () => {
  it("keeps the slot while the request is in flight, then for `windowMs` after", async () => {
    const budget = createBudget({ requests: 1, windowMs: 100 });
    const release = await budget.acquire("change");
    const next = budget.acquire("change");

    await vi.advanceTimersByTimeAsync(500);
    expect(await settled([next])).toBe(0);
    release();
    await vi.advanceTimersByTimeAsync(99);
    expect(await settled([next])).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled([next])).toBe(1);
  });

  it("counts a grant never released as released RELEASE_AFTER_MS after it was made", async () => {
    const budget = createBudget({ requests: 1, windowMs: 100 });
    await budget.acquire("change");
    const next = budget.acquire("change");

    await vi.advanceTimersByTimeAsync(RELEASE_AFTER_MS + 99);
    expect(await settled([next])).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled([next])).toBe(1);
  });

  it("ignores a second call of the same release", async () => {
    const budget = createBudget({ requests: 1, windowMs: 100 });
    const release = await budget.acquire("change");
    release();
    await vi.advanceTimersByTimeAsync(50);
    release();
    const next = budget.acquire("change");

    await vi.advanceTimersByTimeAsync(49);
    expect(await settled([next])).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled([next])).toBe(1);
  });
});

describe("rule: a server hold stops every grant until its end, capped at maxServerWaitMs", () => {
  it("grants nothing before the hold ends", async () => {
    const budget = createBudget({ requests: 100, windowMs: 1000 });
    budget.hold(5_000, "a test hold");
    const waiter = budget.acquire("change");

    await vi.advanceTimersByTimeAsync(4_999);
    expect(await settled([waiter])).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled([waiter])).toBe(1);
  });

  it("keeps the later of two holds", async () => {
    const budget = createBudget({ requests: 100, windowMs: 1000 });
    budget.hold(3_000, "a test hold");
    budget.hold(1_000, "a test hold");
    const waiter = budget.acquire("change");

    await vi.advanceTimersByTimeAsync(2_999);
    expect(await settled([waiter])).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled([waiter])).toBe(1);
  });

  it("holds a day-long Retry-After only for the default maximum of 5 minutes", async () => {
    const budget = createBudget({ requests: 100, windowMs: 1000 });
    budget.hold(86_400_000, "a test hold");
    const waiter = budget.acquire("change");

    await vi.advanceTimersByTimeAsync(300_000 - 1);
    expect(await settled([waiter])).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled([waiter])).toBe(1);
  });

  it("holds no longer than a configured maxServerWaitMs", async () => {
    const budget = createBudget({ requests: 100, windowMs: 1000, maxServerWaitMs: 2_000 });
    budget.hold(60_000, "a test hold");
    const waiter = budget.acquire("poll");

    await vi.advanceTimersByTimeAsync(2_000);
    expect(await settled([waiter])).toBe(1);
  });

  it("never arms a timer longer than Node's limit, even with no maximum", async () => {
    // On the real timers: a spy on a faked setTimeout restores the fake, which then outlives
    // useRealTimers and stops every timer of the later test files sharing this worker.
    vi.useRealTimers();
    const delays: number[] = [];
    const real = globalThis.setTimeout;
    const spy = vi.spyOn(globalThis, "setTimeout").mockImplementation(((fn: () => void, ms?: number) => {
      delays.push(ms ?? 0);
      return real(fn, ms);
    }) as typeof setTimeout);
    const budget = createBudget({ requests: 100, windowMs: 1000, maxServerWaitMs: Number.POSITIVE_INFINITY });
    budget.hold(3_000_000_000, "a test hold");
    const controller = new AbortController();
    const waiter = budget.acquire("change", { signal: controller.signal }).catch(() => "aborted");

    controller.abort();
    await waiter;
    spy.mockRestore();

    expect(delays.length).toBeGreaterThan(0);
    expect(Math.max(...delays)).toBeLessThanOrEqual(MAX_TIMER_MS);
  });
});

describe("rule: a hold that outlasts a waiter's deadline fails that waiter at once", () => {
  const REASON = "a 429 answer to POST /v1/endpoints asked for 86400 s, capped at 300 s";

  it("rejects a new waiter whose deadline comes before the hold ends, naming the hold", async () => {
    const budget = createBudget({ requests: 100, windowMs: 1000 });
    budget.hold(300_000, REASON);

    const waiter = budget.acquire("change", { deadlineMs: 120_000 });

    await expect(waiter).rejects.toSatisfy(isHeldError);
    await expect(waiter).rejects.toThrow(
      `every request of this credential is held 300 s more (${REASON}), past this request's deadline (120 s left)`,
    );
    expect(vi.getTimerCount()).toBe(0);
  });

  it("fails the waiters already queued when such a hold comes, and keeps those it fits", async () => {
    const budget = createBudget({ requests: 1, windowMs: 1000 });
    const first = await budget.acquire("change");
    const short = budget.acquire("change", { deadlineMs: 120_000 });
    const long = budget.acquire("poll", { deadlineMs: 600_000 });
    const unbounded = budget.acquire("retry");

    budget.hold(300_000, REASON);
    first();

    await expect(short).rejects.toThrow(REASON);
    await vi.advanceTimersByTimeAsync(299_999);
    expect(await settled([long, unbounded])).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled([long, unbounded])).toBe(1);
  });

  it("never fails a wait the window paces, however long the queue", async () => {
    const budget = createBudget({ requests: 1, windowMs: 60_000 });
    const first = await budget.acquire("change");
    const queued = [
      budget.acquire("change", { deadlineMs: 1_000 }),
      budget.acquire("change", { deadlineMs: 1_000 }),
    ];

    first();
    await vi.advanceTimersByTimeAsync(60_000);

    expect(await settled(queued)).toBe(1);
  });

  it("does not count a grant released as unused (nothing was sent on it)", async () => {
    const budget = createBudget({ requests: 1, windowMs: 60_000 });
    const release = await budget.acquire("change");
    const next = budget.acquire("change");

    release(true);

    expect(await settled([next])).toBe(1);
  });
});

describe("rule: time is measured on a monotonic clock", () => {
  it("grants on time when the wall clock is stepped back an hour", async () => {
    const budget = createBudget({ requests: 1, windowMs: 1000 });
    const release = await budget.acquire("change");
    release();

    vi.setSystemTime(Date.now() - 3_600_000);
    const next = budget.acquire("change");
    await vi.advanceTimersByTimeAsync(1000);

    expect(await settled([next])).toBe(1);
  });

  it("ends a hold on time when the wall clock is stepped forward or back", async () => {
    const budget = createBudget({ requests: 100, windowMs: 1000 });
    budget.hold(5_000, "a test hold");
    const waiter = budget.acquire("change");

    vi.setSystemTime(Date.now() + 3_600_000);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(await settled([waiter])).toBe(0);
    vi.setSystemTime(Date.now() - 7_200_000);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled([waiter])).toBe(1);
  });

  it("reads the clock it is given", async () => {
    let now = 0;
    const budget = createBudget({ requests: 1, windowMs: 1000, monotonic: () => now });
    const release = await budget.acquire("change");
    release();

    now = 999;
    expect(budget.usage().used).toBe(1);
    now = 1000;
    expect(budget.usage().used).toBe(0);
  });
});

describe("rule: an aborted waiter leaves nothing behind", () => {
  it("disarms the timer when the only waiter aborts, so a stopping process can exit", async () => {
    const budget = createBudget({ requests: 100, windowMs: 1000 });
    budget.hold(60_000, "a test hold");
    const controller = new AbortController();
    const waiter = budget.acquire("poll", { signal: controller.signal });
    expect(vi.getTimerCount()).toBe(1);

    controller.abort(new Error("stopping"));

    await expect(waiter).rejects.toThrow("stopping");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("keeps the timer for the waiters that remain", async () => {
    const budget = createBudget({ requests: 100, windowMs: 1000 });
    budget.hold(60_000, "a test hold");
    const controller = new AbortController();
    const aborted = budget.acquire("poll", { signal: controller.signal }).catch(() => "aborted");
    const kept = budget.acquire("change");

    controller.abort();
    await aborted;

    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(await settled([kept])).toBe(1);
  });

  it("rejects at once a waiter whose signal was already aborted", async () => {
    const budget = createBudget({ requests: 1, windowMs: 1000 });
    const controller = new AbortController();
    controller.abort(new Error("already"));

    await expect(budget.acquire("change", { signal: controller.signal })).rejects.toThrow("already");
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("rule: waiters are served by priority, first come first served within one", () => {
  it("serves change before retry before poll before read, each in the order it came", async () => {
    const budget = createBudget({ requests: 1, windowMs: 10 });
    const first = await budget.acquire("poll");
    const order: string[] = [];
    const queued: [Priority, string][] = [
      ["read", "read-1"],
      ["poll", "poll-1"],
      ["retry", "retry-1"],
      ["change", "change-1"],
      ["poll", "poll-2"],
      ["change", "change-2"],
      ["retry", "retry-2"],
      ["read", "read-2"],
    ];
    const waits = queued.map(([priority, name]) =>
      budget.acquire(priority).then((release) => {
        order.push(name);
        release();
      }),
    );

    first();
    await vi.advanceTimersByTimeAsync(100);
    await Promise.all(waits);

    expect(order).toEqual([
      "change-1",
      "change-2",
      "retry-1",
      "retry-2",
      "poll-1",
      "poll-2",
      "read-1",
      "read-2",
    ]);
  });
});

describe("rule: a budget needs at least one request in a positive window", () => {
  it.each([
    { requests: 0, windowMs: 1000 },
    { requests: 1, windowMs: 0 },
    { requests: Number.NaN, windowMs: 1000 },
  ])("refuses %o", (options) => {
    expect(() => createBudget(options)).toThrow(RangeError);
  });
});

describe("rule: reads hold at most what the read headroom leaves of a window", () => {
  it("grants reads while they hold fewer than requests - readHeadroom; a burst of changes finds the rest free", async () => {
    const budget = createBudget({ requests: 9, windowMs: 10_000, readHeadroom: 6 });
    const reads = Array.from({ length: 5 }, () => budget.acquire("read"));
    expect(await settled(reads)).toBe(3);

    const changes = Array.from({ length: 6 }, () => budget.acquire("change"));
    expect(await settled(changes)).toBe(6);

    for (const release of await Promise.all(changes)) release();
    await vi.advanceTimersByTimeAsync(5_000);
    for (const release of await Promise.all(reads.slice(0, 3))) release();
    // The changes' window ends: six slots are free, but the three reads still hold the reads' three.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await settled(reads)).toBe(3);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await settled(reads)).toBe(5);
  });

  it("still grants reads their share while polls hold most of the window (they are not starved)", async () => {
    const budget = createBudget({ requests: 9, windowMs: 10_000, readHeadroom: 6 });
    const polls = Array.from({ length: 5 }, () => budget.acquire("poll"));
    expect(await settled(polls)).toBe(5);

    const reads = Array.from({ length: 4 }, () => budget.acquire("read"));

    expect(await settled(reads)).toBe(3);
  });

  it("lets the daemon's reads take at most 3 of the management key's 9 and 30 of the token's 90", () => {
    expect(MANAGEMENT_BUDGET.requests - DAEMON_READ_HEADROOM.management).toBe(3);
    expect(OBSERVABILITY_BUDGET.requests - DAEMON_READ_HEADROOM.observability).toBe(30);
  });

  it("refuses a headroom that would leave reads nothing", () => {
    expect(() => createBudget({ requests: 9, windowMs: 10_000, readHeadroom: 9 })).toThrow(RangeError);
  });
});
