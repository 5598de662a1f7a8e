import { isApiError } from "../errors.js";
import type { Kind } from "./manifest.js";

/**
 * What a 404 answer to a resource's request means and what to do, by kind: the ids its manifest gives
 * name no object the platform knows (a typo, an object deleted in the console, another organization's).
 * For a kind driftless creates when its manifest names no id, removing the id is the other way out.
 */
const NOT_FOUND: { [K in Kind]: string } = {
  Organization: "the organizationId names no organization this key can reach: fix the id",
  ApiKey:
    "the organizationId or keyId names no object: fix the id, or remove keyId from the manifest to let driftless create the key",
  DataPipe:
    "the organizationId, serviceId or dataPipeId names no object: fix the id, or remove dataPipeId from the manifest to let driftless create the pipe",
  ReversePrivateEndpoint: "the organizationId or serviceId names no service: fix the id",
  Dashboard:
    "the dashboardId names no dashboard: fix the id, or remove dashboardId from the manifest to let driftless create the dashboard",
  Alert:
    "the alertId names no alert (the platform deletes an alert with its tile or its dashboard): fix the id, or remove alertId from the manifest to let driftless create the alert",
  AlertWatch:
    "the alertId names no alert (the platform deletes an alert when its tile disappears): fix the id, or remove the watch",
  BackupWatch: "the organizationId or serviceId names no service: fix the id",
};

/** `; <what a 404 means for kind>` when `error` is a 404 answer of the platform, else "". */
export function notFoundHint(kind: Kind, error: unknown): string {
  return isApiError(error) && error.context.status === 404 ? `; ${NOT_FOUND[kind]}` : "";
}
