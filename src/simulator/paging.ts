import type { Answer } from "./http.js";

/**
 * A page of a paged list (the alerts, the webhooks): `limit` items (default and most 1000) from
 * `offset` (default 0), ordered by id, with the total of every page in `meta` and in X-Total-Count.
 * The query was checked against the contract before (1 ≤ limit ≤ 1000, offset ≥ 0).
 */
export function page<T extends { id: string }>(
  items: readonly T[],
  query: Record<string, string>,
  answer: (item: T) => unknown,
): Answer {
  const limit = query.limit === undefined ? 1000 : Number(query.limit);
  const offset = query.offset === undefined ? 0 : Number(query.offset);
  const byId = [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const total = items.length;
  return {
    status: 200,
    headers: { "x-total-count": String(total) },
    body: { data: byId.slice(offset, offset + limit).map(answer), meta: { total, limit, offset } },
  };
}
