/** How a pass asked for by `driftless reconcile` ended: its result, or why it could not run. */
export type PassEnd = { ok: boolean; error?: string };

type Waiter = { after: number; resolve: (end: PassEnd | undefined) => void; timer: NodeJS.Timeout };

/**
 * Requests waiting for a pass: each is answered by the first pass that starts after it was made (the
 * pass running when it came read files from before it), never by an older one. A pass started again
 * because its source vanished under it answers nobody: the pass after it does.
 */
export class PassWaiters {
  private waiting = new Set<Waiter>();

  /**
   * Resolves with the end of the first pass numbered above `after` (the pass count when the request
   * came), or undefined when none ends within `timeoutMs` or the daemon stops.
   */
  wait(after: number, timeoutMs: number): Promise<PassEnd | undefined> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        after,
        resolve,
        timer: setTimeout(() => this.release(waiter, undefined), timeoutMs),
      };
      this.waiting.add(waiter);
    });
  }

  /** Pass number `pass` ended: answers every request made before it started. */
  ended(pass: number, end: PassEnd): void {
    for (const waiter of this.waiting) if (waiter.after < pass) this.release(waiter, end);
  }

  /** The daemon stops: every request still waiting is answered with undefined. */
  close(): void {
    for (const waiter of this.waiting) this.release(waiter, undefined);
  }

  private release(waiter: Waiter, end: PassEnd | undefined): void {
    clearTimeout(waiter.timer);
    this.waiting.delete(waiter);
    waiter.resolve(end);
  }
}
