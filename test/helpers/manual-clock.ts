import type { Clock } from "../../src/daemon/clock.js";

export type ManualClock = Clock & {
  /** Lets `ms` pass: runs every callback that comes due, in the order they come due. */
  advance(ms: number): void;
  /** Callbacks armed and neither run nor cancelled yet. */
  armed(): number;
};

type Timer = { at: number; callback: () => void };

/** A clock whose time moves only when the test says so, from `start` ms. */
export function manualClock(start = 0): ManualClock {
  let now = start;
  const timers = new Set<Timer>();
  /** The timer due first by `end`; of two due at once, the one armed first. */
  const firstDue = (end: number) => {
    let first: Timer | undefined;
    for (const timer of timers) if (timer.at <= end && (!first || timer.at < first.at)) first = timer;
    return first;
  };
  return {
    now: () => now,
    after(ms, callback) {
      const timer = { at: now + ms, callback };
      timers.add(timer);
      return () => timers.delete(timer);
    },
    advance(ms) {
      const end = now + ms;
      for (let timer = firstDue(end); timer; timer = firstDue(end)) {
        timers.delete(timer);
        now = Math.max(now, timer.at);
        timer.callback();
      }
      now = end;
    },
    armed: () => timers.size,
  };
}
