import { CREDENTIAL_FIELDS } from "../credentials.js";
import { isSecret } from "../plan/secret.js";
import type { LiveRead, PlannedRequest } from "../plan/types.js";
import { isPlainObject, revealed } from "../plan/values.js";
import type { Priority } from "../platform/budget.js";
import type { Answer, CallOptions, PlatformClient } from "../platform/client.js";
import { MASK, redact } from "../platform/redact.js";
import type { Bodies, Params, RouteName } from "../platform/routes.js";

/** The platform's answer to one planned request. */
export type Sent = Answer<unknown>;

/**
 * Sends a planned request exactly as planned (secrets revealed here and only here). `guard` is asked
 * right before each attempt, retries included, and stops the request by throwing (nothing more is
 * sent). Throws the client's ApiError / UnknownOutcomeError, with every secret of the request masked in
 * their messages, the signal's reason, or what `guard` threw.
 */
export type Sender = (
  request: PlannedRequest,
  options: { priority: Priority; signal?: AbortSignal; guard?: () => void | Promise<void> },
) => Promise<Sent>;

/** A Sender over the platform client: any planned route, as the route table describes it. */
export function createSender(client: PlatformClient): Sender {
  return async (request, options) => {
    const secrets = secretValues(request.body);
    try {
      const answer = await send(client, request, { ...options, redact: secrets });
      return { ...answer, result: withoutCredentials(answer.result, secrets.filter(Boolean)) };
    } catch (error) {
      // A platform may echo the request body in its error message, which then reaches the status, the
      // logs and the output: the secrets of this request are masked there.
      throw masking(error, secrets);
    }
  };
}

function send<N extends RouteName>(
  client: PlatformClient,
  request: { route: N; params: Params[N]; body: Bodies[N] },
  options: CallOptions,
): Promise<Sent> {
  return client.call(request.route, request.params, revealed(request.body), options);
}

const CREDENTIALS = new Set<string>(CREDENTIAL_FIELDS);

/**
 * An answer as the state may keep it: results are said to omit credentials, yet a pipe's result lists
 * `connectionString` (which may embed an account key; docs/platform-apis.md#credential-fields), so
 * credential fields are dropped and any value equal to a secret just sent is masked.
 */
function withoutCredentials(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === "string") return secrets.includes(value) ? MASK : value;
  if (Array.isArray(value)) return value.map((item) => withoutCredentials(item, secrets));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value))
    if (!CREDENTIALS.has(key)) out[key] = withoutCredentials(child, secrets);
  return out;
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

/**
 * Reads one live object or list of the published contract: the answer's result. Throws the client's
 * ApiError. Credentials are never in answers; what is kept of one is only what a planner asks of it.
 */
export type Reader = (
  request: LiveRead,
  options: { priority: Priority; signal?: AbortSignal },
) => Promise<unknown>;

/** A Reader over the platform client. */
export function createReader(client: PlatformClient): Reader {
  return async (request, options) => {
    const answer = await client.call(request.route, request.params, undefined, options);
    return answer.result;
  };
}
