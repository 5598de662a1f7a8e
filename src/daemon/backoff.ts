import { type ResourceStatus, resourceId } from "../resources.js";

export type BackoffOptions = {
  /** Delay after the first failure; default 2 s. */
  baseMs?: number;
  /** Longest delay; default 5 minutes (the reconcile schedule retries anyway). */
  maxMs?: number;
  /** Random in [0, 1); default Math.random. Jitter spreads retries of many resources apart. */
  random?: () => number;
};

/**
 * Per-resource exponential backoff of the resources whose next step is `retry`. Each waits
 * base·2^(n-1) (±20% jitter, capped) after its n-th retry in a row; a resource whose next step is
 * anything else (done, or waiting for a change or a person), or that is gone from git, starts over.
 * The retry itself is a whole level-based pass, so it always sends the newest desired state.
 */
export class Backoff {
  private readonly entries = new Map<string, { failures: number; dueAt: number }>();
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly random: () => number;

  constructor(options: BackoffOptions = {}) {
    this.baseMs = options.baseMs ?? 2_000;
    this.maxMs = options.maxMs ?? 300_000;
    this.random = options.random ?? Math.random;
  }

  /**
   * Takes a pass's statuses at time `now` (ms); returns when the next retry is due, if any is. The
   * `held` resources were not tried in this pass (still backing off): their backoff stays as it was.
   */
  record(
    statuses: readonly ResourceStatus[],
    now: number,
    held: ReadonlySet<string> = new Set(),
  ): number | undefined {
    const seen = new Set<string>();
    for (const status of statuses) {
      // Most statuses are of resources that never failed: then there is nothing to do, not even an id.
      if (this.entries.size === 0 && status.next !== "retry") continue;
      const key = resourceId(status);
      seen.add(key);
      if (held.has(key)) continue;
      // Only what a later pass may fix on its own is retried: a changed input or a person fixes the rest.
      if (status.next !== "retry") {
        this.entries.delete(key);
        continue;
      }
      const failures = (this.entries.get(key)?.failures ?? 0) + 1;
      this.entries.set(key, { failures, dueAt: now + this.delay(failures) });
    }
    for (const key of this.entries.keys()) if (!seen.has(key)) this.entries.delete(key);
    return this.nextDue();
  }

  /** A pass that failed as a whole (state store, manifests folder) backs off under one key. */
  recordPassFailure(now: number): number {
    const failures = (this.entries.get("(pass)")?.failures ?? 0) + 1;
    const dueAt = now + this.delay(failures);
    this.entries.set("(pass)", { failures, dueAt });
    return dueAt;
  }

  /** True while `key` (`Kind/name`) backs off: its next retry is due after `now` (ms). */
  isWaiting(key: string, now: number): boolean {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.dueAt > now;
  }

  /** Consecutive failures of one resource (`Kind/name`), 0 when it is not backing off. */
  failuresOf(key: string): number {
    return this.entries.get(key)?.failures ?? 0;
  }

  private nextDue(): number | undefined {
    let next: number | undefined;
    for (const { dueAt } of this.entries.values()) if (next === undefined || dueAt < next) next = dueAt;
    return next;
  }

  private delay(failures: number): number {
    const exponential = Math.min(this.maxMs, this.baseMs * 2 ** Math.min(failures - 1, 30));
    return Math.round(exponential * (0.8 + 0.4 * this.random()));
  }
}
