import { isSecret } from "../plan/secret.js";
import type { PlannedRequest } from "../plan/types.js";
import { isPlainObject, revealed } from "../plan/values.js";
import type { Priority } from "../platform/budget.js";
import { type ManagementClient, MANAGEMENT_ROUTES as ROUTES } from "../platform/management.js";
import { OBSERVABILITY_ROUTES, type ObservabilityClient } from "../platform/observability.js";

/** The platform's answer to one planned request. */
export type Sent = { result: unknown; requestId?: string };

/**
 * Sends a planned request exactly as planned (secrets revealed here and only here). Throws the clients'
 * ApiError / UnknownOutcomeError.
 */
export type Sender = (
  request: PlannedRequest,
  options: { priority: Priority; signal?: AbortSignal },
) => Promise<Sent>;

export type Clients = {
  management: Pick<
    ManagementClient,
    "updateOrganization" | "updateApiKey" | "updateDataPipe" | "createReversePrivateEndpoint"
  >;
  observability: Pick<ObservabilityClient, "putDashboard">;
};

/** A Sender over the typed API clients: each planned route goes to its client method. */
export function createSender(clients: Clients): Sender {
  return async (request, options) => {
    try {
      const answer = await route(clients, request, options);
      return {
        ...answer,
        result: withoutCredentials(answer.result, secretValues(request.body).filter(Boolean)),
      };
    } catch (error) {
      // A platform may echo the request body in its error message, which then reaches the status, the
      // logs and the output: the secrets of this request are masked there.
      throw masking(error, secretValues(request.body));
    }
  };
}

async function route(
  clients: Clients,
  request: PlannedRequest,
  options: { priority: Priority; signal?: AbortSignal },
): Promise<Sent> {
  const p = request.params;
  const param = (name: string) => {
    const value = p[name];
    if (value === undefined) throw new Error(`planned ${request.route} lacks the parameter ${name}`);
    return value;
  };
  // biome-ignore lint/suspicious/noExplicitAny: the body's shape is the planner's, checked by the route's client.
  const body = revealed(request.body) as any;
  const { management, observability } = clients;
  switch (request.route) {
    case ROUTES.organization:
      return management.updateOrganization(param("organizationId"), body, options);
    case ROUTES.apiKey:
      return management.updateApiKey(param("organizationId"), param("keyId"), body, options);
    case ROUTES.dataPipe:
      return management.updateDataPipe(
        param("organizationId"),
        param("serviceId"),
        param("dataPipeId"),
        body,
        options,
      );
    case ROUTES.reversePrivateEndpoints:
      return management.createReversePrivateEndpoint(
        param("organizationId"),
        param("serviceId"),
        body,
        options,
      );
    case OBSERVABILITY_ROUTES.dashboard:
      return observability.putDashboard(param("id"), body, options);
    default:
      throw new Error(`no client method for ${request.method} ${request.route}`);
  }
}

/** Credential fields, as PRODUCT.md names them: never kept from an answer, whoever set them. */
const CREDENTIAL_FIELDS = new Set(["password", "secretKey", "accessKeyId", "connectionString"]);

/**
 * An answer as the state may keep it: the seeds say results omit credentials, yet list a pipe's
 * `connectionString` (which may embed an account key), so credential fields are dropped and any value
 * equal to a secret just sent is masked.
 */
function withoutCredentials(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === "string") return secrets.includes(value) ? "(secret)" : value;
  if (Array.isArray(value)) return value.map((item) => withoutCredentials(item, secrets));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value))
    if (!CREDENTIAL_FIELDS.has(key)) out[key] = withoutCredentials(child, secrets);
  return out;
}

/** The revealed values of the Secret leaves of `value`. */
function secretValues(value: unknown): string[] {
  if (isSecret(value)) return [value.reveal()];
  if (Array.isArray(value)) return value.flatMap(secretValues);
  if (isPlainObject(value)) return Object.values(value).flatMap(secretValues);
  return [];
}

/** `error` with every secret value, as sent or JSON-escaped, replaced by a mask in its message and its causes'. */
function masking(error: unknown, secrets: string[]): unknown {
  const forms = secrets
    .flatMap((s) => [s, JSON.stringify(s).slice(1, -1)])
    .filter((s) => s !== "")
    .sort((a, b) => b.length - a.length);
  if (forms.length === 0) return error;
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    for (const form of forms) {
      e.message = e.message.split(form).join("(secret)");
      if (e.stack) e.stack = e.stack.split(form).join("(secret)");
    }
  }
  return error;
}
