/**
 * Waits for something the test cannot be told about directly (a child process's log line, a file, an
 * answer over HTTP, a watcher's event): resolves with the first value of `probe` that is neither
 * undefined nor false, asking every 25 ms. Rejects after `timeoutMs` (default 30 s) naming the probe.
 *
 * The time-out is generous on purpose: it bounds how long a broken test hangs, never how fast the code
 * must be, and on a loaded machine a condition that holds may take seconds to be seen.
 */
export async function until<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (performance.now() > deadline) {
      throw new Error(`until: ${probe.toString().replace(/\s+/g, " ")} did not hold within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
