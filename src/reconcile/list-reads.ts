import type { LiveRead } from "../kinds/kind.js";
import { collectPages, type PagedRoute } from "../platform/pages.js";
import { type Answers, type PlannedRequest, ROUTES, type RouteName } from "../platform/routes.js";
import type { Effects } from "./effects.js";

/**
 * The lists a pass reads for its first contacts (read-first.ts): each list is read once per pass, every
 * page of a paged one, and serves every resource it holds. A thousand imported alerts cost two list
 * pages, not a thousand GETs (and twelve minutes of the observability budget).
 */
export type ListReads = {
  /**
   * The object `live` picks from its list's answer, the list read now or earlier in the pass. Throws what
   * reading the list threw (every resource of that list sees the same failure).
   */
  read(effects: Required<Pick<Effects, "read">>, live: LiveRead): Promise<object | undefined>;
};

/** The list reads of one pass: nothing read yet. */
export function listReads(): ListReads {
  const answers = new Map<string, Promise<unknown>>();
  return {
    read(effects, live) {
      const key = JSON.stringify([live.request.route, live.request.params]);
      let answer = answers.get(key);
      if (!answer) {
        answer = readWhole(effects, live.request);
        answers.set(key, answer);
      }
      return answer.then((whole) => pick(live, whole));
    },
  };
}

/** The object `live` picks from a whole answer of its route. */
function pick<R extends RouteName>(live: LiveRead<R>, whole: unknown): object | undefined {
  // The answer came from reading `live.request` itself (readWhole), so it is of its route.
  return live.live(whole as Answers[R]);
}

/** A paged route of the table: its answer is one page. */
const isPaged = (request: PlannedRequest): request is PlannedRequest<PagedRoute> =>
  ROUTES[request.route].query?.includes("limit") === true;

/** The answer of `request`, with every page of a paged list in one page. */
async function readWhole(
  effects: Required<Pick<Effects, "read">>,
  request: PlannedRequest,
): Promise<unknown> {
  if (!isPaged(request)) return effects.read(request);
  const data = await collectPages((page) =>
    effects.read({ ...request, params: { ...request.params, ...page } }),
  );
  return { data, meta: null };
}
