import { ApiError, isApiError } from "../errors.js";
import { sameId } from "../manifests/identity.js";
import type { Priority } from "../platform/budget.js";
import type { PlatformClient } from "../platform/client.js";
import type { ReversePrivateEndpoint } from "../platform/management.js";
import type { RouteName } from "../platform/routes.js";
import type { Comparable } from "./compare.js";

/**
 * The published contract's reads: which request reads the live object of each managed kind. An
 * organization, an API key, a data pipe and a dashboard are read with their GET; a reverse private
 * endpoint is found in the list of its service's endpoints (the read the contract names for them).
 * Only the published contract serves these routes (DRIFTLESS_READS=on says the platform does).
 */

/** What a read needs of a resource: its manifest's kind and spec, and the server id driftless recorded. */
export type ReadTarget = Comparable & { serverId?: string | undefined };

/** A read's answer: the live object, or `undefined` when the platform has no such object. */
export type LiveAnswer = { live: unknown; requestId?: string };

export type ReadOptions = {
  signal?: AbortSignal;
  /** The budget priority; default "read", the lowest: changes from git never wait for a read. */
  priority?: Priority;
};

/** The route that reads `target`; undefined when there is nothing to read (an endpoint not created yet). */
export function readRoute(target: ReadTarget): RouteName | undefined {
  switch (target.kind) {
    case "Organization":
      return "getOrganization";
    case "ApiKey":
      return "getApiKey";
    case "DataPipe":
      return "getDataPipe";
    case "Dashboard":
      return "getDashboard";
    case "ReversePrivateEndpoint":
      return endpointId(target) === undefined ? undefined : "listReversePrivateEndpoints";
    default:
      return undefined;
  }
}

/** The kinds a read looks at: the ones driftless writes. */
export const READ_KINDS = [
  "Organization",
  "ApiKey",
  "DataPipe",
  "ReversePrivateEndpoint",
  "Dashboard",
] as const;

const endpointId = (target: ReadTarget) =>
  target.kind === "ReversePrivateEndpoint" ? (target.serverId ?? target.spec.id) : undefined;

/**
 * Reads the live object of `target`: one request. Resolves to undefined when there is nothing to read
 * yet, to `{live: undefined}` when an endpoint is missing from its service's list. Throws what the
 * request threw otherwise (the caller reports it as a failed read of that resource); a 404 or 405 is one
 * of those, with what it may mean: the object is gone, or the platform does not serve the reads.
 */
export async function readLive(
  platform: PlatformClient,
  target: ReadTarget,
  options: ReadOptions = {},
): Promise<LiveAnswer | undefined> {
  const call = {
    priority: options.priority ?? "read",
    ...(options.signal ? { signal: options.signal } : {}),
  };
  try {
    switch (target.kind) {
      case "Organization": {
        const { organizationId } = target.spec;
        return answerOf(await platform.call("getOrganization", { organizationId }, undefined, call));
      }
      case "ApiKey": {
        const { organizationId, keyId } = target.spec;
        return answerOf(await platform.call("getApiKey", { organizationId, keyId }, undefined, call));
      }
      case "DataPipe": {
        const { organizationId, serviceId, dataPipeId } = target.spec;
        const params = { organizationId, serviceId, dataPipeId };
        return answerOf(await platform.call("getDataPipe", params, undefined, call));
      }
      case "Dashboard":
        return answerOf(
          await platform.call("getDashboard", { id: target.spec.dashboardId }, undefined, call),
        );
      case "ReversePrivateEndpoint": {
        const id = endpointId(target);
        if (id === undefined) return undefined;
        const { organizationId, serviceId } = target.spec;
        const listed = await listEndpoints(platform, { organizationId, serviceId }, options);
        const live = listed.live.find((endpoint) => sameId(endpoint.id, id));
        return { live, ...(listed.requestId ? { requestId: listed.requestId } : {}) };
      }
      default:
        return undefined;
    }
  } catch (error) {
    // 405: a platform that serves the seven endpoints only has no GET on these paths.
    if (isApiError(error) && (error.context.status === 404 || error.context.status === 405)) {
      const reason = `${error.message}: the object is gone, or the platform does not serve the published contract's reads (DRIFTLESS_READS=on needs them)`;
      throw new ApiError(reason, error.context, { cause: error });
    }
    throw error;
  }
}

/** The reverse private endpoints of a service, as the platform lists them: one request. */
export async function listEndpoints(
  platform: PlatformClient,
  service: { organizationId: string; serviceId: string },
  options: ReadOptions = {},
): Promise<{ live: ReversePrivateEndpoint[]; requestId?: string }> {
  const call = {
    priority: options.priority ?? "read",
    ...(options.signal ? { signal: options.signal } : {}),
  };
  const answer = await platform.call("listReversePrivateEndpoints", service, undefined, call);
  return { live: answer.result, ...(answer.requestId ? { requestId: answer.requestId } : {}) };
}

const answerOf = ({ result, requestId }: { result: unknown; requestId?: string }): LiveAnswer => ({
  live: result,
  ...(requestId ? { requestId } : {}),
});
