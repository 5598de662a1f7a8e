/**
 * The time the pass loop decides on: when a burst of changes has gone quiet and when a resource's retry is
 * due. Passed in so that tests can let time pass at will instead of waiting for it.
 */
export type Clock = {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `callback` once `ms` milliseconds have passed; the function returned cancels it. */
  after(ms: number, callback: () => void): () => void;
};

/** The process's wall clock and timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, callback) {
    const timer = setTimeout(callback, ms);
    return () => clearTimeout(timer);
  },
};
