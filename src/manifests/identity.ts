import { oncePer } from "../once-per.js";
import { resourceId } from "../resources.js";
import type { Kind, Manifest } from "./manifest.js";

/**
 * What identifies a loaded manifest: its id (`Kind/name`) and the API object it addresses, as one
 * string (`Dashboard 65f1…`), which stays the same when a manifest is renamed, so that its record (tile
 * ids, owned list entries, an endpoint's id) follows it. Both are made once per manifest object.
 */

/** The `Kind/name` id of a loaded manifest. */
export const manifestId = oncePer((manifest: Manifest): string => resourceId(manifest));

/** The spec fields that name the API object of each kind; an endpoint is named by its server id. */
const ADDRESS_FIELDS: { [K in Kind]: readonly string[] } = {
  Organization: ["organizationId"],
  ApiKey: ["organizationId", "keyId"],
  DataPipe: ["organizationId", "serviceId", "dataPipeId"],
  ReversePrivateEndpoint: ["id"],
  Dashboard: ["dashboardId"],
  AlertWatch: ["alertId"],
  BackupWatch: ["organizationId", "serviceId"],
};

/**
 * The API object of a `kind` with `spec`, or undefined when the spec does not name one (an endpoint
 * without `spec.id`, whose server id is only known once it is created). Ids compare case-insensitively.
 */
export function apiObjectOf(kind: Kind, spec: unknown): string | undefined {
  const fields = spec as Record<string, unknown>;
  const values = ADDRESS_FIELDS[kind].map((field) => fields[field]);
  if (!values.every((value) => typeof value === "string" && value !== "")) return undefined;
  return `${kind} ${values.map((value) => String(value).toLowerCase()).join("/")}`;
}

/** The API object of a loaded manifest (see apiObjectOf). */
export const manifestObject = oncePer((manifest: Manifest): string | undefined =>
  apiObjectOf(manifest.kind, manifest.spec),
);

/** The API object of a created endpoint, by its server id. */
export const endpointObject = (serverId: string): string | undefined =>
  apiObjectOf("ReversePrivateEndpoint", { id: serverId });
