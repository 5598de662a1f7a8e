/**
 * Waits for something the test cannot be told about directly (a child process's log line, a file, an
 * answer over HTTP, a watcher's event): resolves with the first value of `probe` that is neither
 * undefined nor false, asking every 25 ms. Rejects after `timeoutMs` (default 30 s) naming the probe,
 * also when a call of the probe itself never settles (a request to a process that stopped answering).
 *
 * The time-out is generous on purpose: it bounds how long a broken test hangs, never how fast the code
 * must be, and on a loaded machine a condition that holds may take seconds to be seen.
 */
export async function until<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  const failure = (what: string) =>
    new Error(`until: ${probe.toString().replace(/\s+/g, " ")} ${what} within ${timeoutMs} ms`);
  for (;;) {
    const value = await settledBy(probe(), deadline, () => failure("was still waiting for an answer"));
    if (value !== undefined && value !== false) return value;
    if (performance.now() > deadline) throw failure("did not hold");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** `value`, or a rejection with `error()` when it has not settled by `deadline` (performance.now()). */
async function settledBy<V>(value: V | Promise<V>, deadline: number, error: () => Error): Promise<V> {
  if (!(value instanceof Promise)) return value;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(error()), Math.max(0, deadline - performance.now()));
  });
  try {
    return await Promise.race([value, late]);
  } finally {
    clearTimeout(timer);
  }
}
