import type { CallOptions, PlatformClient } from "./client.js";
import type { Answers, Params, RouteName } from "./routes.js";

/**
 * Reading a paged list whole (docs/platform-apis.md#paged-lists). Only the alert and webhook lists are
 * paged: `limit` (1 to 1000, default 1000) and `offset`, ordered by id, with the total of every page in
 * `meta`.
 */

/** The routes of the table that answer one page at a time. */
export type PagedRoute = { [N in RouteName]: "limit" extends keyof Params[N] ? N : never }[RouteName];

/** An item of a paged route's pages. */
export type PageItem<N extends PagedRoute> = Answers[N]["data"][number];

/** The most items a page holds, and what the platform gives when not told. */
export const MAX_PAGE = 1000;

/**
 * Every item of a paged list, in the platform's order: pages of `limit` items (default MAX_PAGE), each
 * from where the last ended, until `meta.total` items are read, or a page comes back short (a platform
 * that answers no meta) or with nothing new. An item is listed once, by id: one deleted while the pages
 * are read shifts the next page back and is then seen twice. Throws what a request throws; each page is
 * a request of the budget, at `options.priority`.
 */
export async function readAllPages<N extends PagedRoute>(
  platform: PlatformClient,
  name: N,
  options: CallOptions & { limit?: number } = {},
): Promise<PageItem<N>[]> {
  const { limit = MAX_PAGE, ...call } = options;
  return collectPages(async (params) => {
    const { result } = await platform.call(name, params as Params[N], undefined, call);
    return result;
  }, limit);
}

/** One page of a paged list as `collectPages` reads it. */
type OnePage<T> = { data: readonly T[]; meta?: { total: number } | null | undefined };

/**
 * The items of every page `page` answers, read as readAllPages says (its pages asked with `limit` and
 * `offset`, as strings: they are query parameters). Throws what `page` throws.
 */
export async function collectPages<T extends { id: string }>(
  page: (params: { limit: string; offset: string }) => Promise<OnePage<T>>,
  limit = MAX_PAGE,
): Promise<T[]> {
  const items = new Map<string, T>();
  for (let offset = 0; ; ) {
    const answer = await page({ limit: String(limit), offset: String(offset) });
    const before = items.size;
    for (const item of answer.data) if (!items.has(item.id)) items.set(item.id, item);
    offset += answer.data.length;
    const total = answer.meta?.total;
    const done = total === undefined || total === null ? answer.data.length < limit : offset >= total;
    // A platform that ignores `offset` answers the same page again: nothing new ends the reading.
    if (done || items.size === before) return [...items.values()];
  }
}
