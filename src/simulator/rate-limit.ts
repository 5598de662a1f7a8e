/** A rate limit: at most `requests` per `windowMs`, per caller (key id or token). */
export type RateLimit = { requests: number; windowMs: number };

/** `resetAt`: when the window closes, on the limiter's clock; `resetInMs`: how long from now. */
export type RateDecision =
  | { allowed: true; limit: number; remaining: number; resetAt: number; resetInMs: number }
  | { allowed: false; limit: number; remaining: 0; resetAt: number; resetInMs: number };

/**
 * Fixed windows per caller: a caller's window opens with its first request and admits exactly
 * `requests` until it closes. Fixed windows make "exactly N per window" testable; the real platform
 * says only "about", so clients must not rely on finer behaviour.
 */
export function createRateLimiter(limit: RateLimit | false, now: () => number = Date.now) {
  const windows = new Map<string, { openedAt: number; used: number }>();
  return (caller: string): RateDecision | undefined => {
    if (!limit) return undefined;
    const time = now();
    let window = windows.get(caller);
    if (!window || time >= window.openedAt + limit.windowMs) {
      window = { openedAt: time, used: 0 };
      windows.set(caller, window);
    }
    const resetAt = window.openedAt + limit.windowMs;
    const resetInMs = resetAt - time;
    if (window.used >= limit.requests)
      return { allowed: false, limit: limit.requests, remaining: 0, resetAt, resetInMs };
    window.used++;
    return {
      allowed: true,
      limit: limit.requests,
      remaining: limit.requests - window.used,
      resetAt,
      resetInMs,
    };
  };
}
