/**
 * `work` over `items`, at most `limit` at once; the results keep the order of `items`. A result that
 * `work` gives synchronously is taken without waiting a turn.
 */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => R | Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      const result = work(items[index] as T);
      results[index] = result instanceof Promise ? await result : result;
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
