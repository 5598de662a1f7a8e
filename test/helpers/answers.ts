import { type Answers, type PlannedRequest, ROUTES, type RouteName } from "../../src/platform/routes.js";

/**
 * `value` as the answer of `request`'s route, read by that route's own schema: what a fake platform
 * answers is what the real client would hand the engine, typed alike.
 */
export function answerOf<R extends RouteName>(request: PlannedRequest<R>, value: unknown): Answers[R] {
  return ROUTES[request.route].answer.parse(value);
}
