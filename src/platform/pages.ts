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
  const items = new Map<string, PageItem<N>>();
  for (let offset = 0; ; ) {
    const params = { limit: String(limit), offset: String(offset) } as Params[N];
    const { result } = await platform.call(name, params, undefined, call);
    const page: PageItem<N>[] = result.data;
    const before = items.size;
    for (const item of page) if (!items.has(item.id)) items.set(item.id, item);
    offset += page.length;
    const total = result.meta?.total;
    const done = total === undefined || total === null ? page.length < limit : offset >= total;
    // A platform that ignores `offset` answers the same page again: nothing new ends the reading.
    if (done || items.size === before) return [...items.values()];
  }
}
