import { isSecret } from "../plan/secret.js";
import { isPlainObject, revealed } from "../plan/values.js";
import type { Priority } from "../platform/budget.js";
import type { Answer, PlatformClient } from "../platform/client.js";
import { redact } from "../platform/redact.js";
import type { Answers, PlannedRequest, RouteName } from "../platform/routes.js";

/**
 * Sends a planned request exactly as planned (secrets revealed here and only here): the platform's
 * answer, typed by its route's schema, without the request's credentials. `guard` is asked right before
 * each attempt, retries included, and stops the request by throwing (nothing more is sent). Throws the
 * client's ApiError / UnknownOutcomeError, with every secret of the request masked in their messages,
 * the signal's reason, or what `guard` threw.
 */
export type Sender = <R extends RouteName>(
  request: PlannedRequest<R>,
  options: { priority: Priority; signal?: AbortSignal; guard?: () => void | Promise<void> },
) => Promise<Answer<Answers[R]>>;

/** A Sender over the platform client: any planned route, as the route table describes it. */
export function createSender(client: PlatformClient): Sender {
  return async (request, options) => {
    const secrets = secretValues(request.body);
    try {
      return await client.call(request.route, request.params, revealed(request.body), {
        ...options,
        redact: secrets,
      });
    } catch (error) {
      // A platform may echo the request body in its error message, which then reaches the status, the
      // logs and the output: the secrets of this request are masked there.
      throw masking(error, secrets);
    }
  };
}

/** The revealed values of the Secret leaves of `value`. */
function secretValues(value: unknown): string[] {
  if (isSecret(value)) return [value.reveal()];
  if (Array.isArray(value)) return value.flatMap(secretValues);
  if (isPlainObject(value)) return Object.values(value).flatMap(secretValues);
  return [];
}

/**
 * `error` with every secret of the request masked in its message and its causes'. The HTTP client masks
 * the platform's text before it shortens it; this covers anything else an error may carry.
 */
function masking(error: unknown, secrets: string[]): unknown {
  if (secrets.every((s) => s === "")) return error;
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    e.message = redact(e.message, secrets);
    if (e.stack) e.stack = redact(e.stack, secrets);
  }
  return error;
}
