import type { PlannedRequest } from "../plan/types.js";
import { revealed } from "../plan/values.js";
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
  };
}
