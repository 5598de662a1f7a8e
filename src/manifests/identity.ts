import { oncePer } from "../once-per.js";
import { resourceId } from "../resources.js";
import type { Kind, Manifest } from "./manifest.js";

/**
 * What identifies a loaded manifest: its id (`Kind/name`) and the API object it addresses, as one
 * string (`Dashboard 65f1…`), which stays the same when a manifest is renamed, so that its record (tile
 * ids, owned list entries, an endpoint's id) follows it. Both are made once per manifest object. The
 * platform's ids (UUIDs, hex ids) name the same object in either case: every comparison of them goes
 * through `idKey`.
 */

/** An id of the platform's as compared: `2E7D…` and `2e7d…` name the same object. */
export const idKey = (id: string): string => id.toLowerCase();

/** Whether two of the platform's ids name the same object. */
export const sameId = (a: string, b: string): boolean => idKey(a) === idKey(b);

/** The `Kind/name` id of a loaded manifest. */
export const manifestId = oncePer((manifest: Manifest): string => resourceId(manifest));

/** The spec fields that name the API object of each kind; an endpoint is named by its server id. */
const ADDRESS_FIELDS: { [K in Kind]: readonly string[] } = {
  Organization: ["organizationId"],
  ApiKey: ["organizationId", "keyId"],
  DataPipe: ["organizationId", "serviceId", "dataPipeId"],
  ReversePrivateEndpoint: ["id"],
  Dashboard: ["dashboardId"],
  Alert: ["alertId"],
  AlertWatch: ["alertId"],
  BackupWatch: ["organizationId", "serviceId"],
};

/** The spec field that names a manifest's API object last: where two manifests of one object are reported. */
export const addressField = (kind: Kind): string => ADDRESS_FIELDS[kind].at(-1) ?? "";

/**
 * The API object of a `kind` with `spec`, or undefined when the spec does not name one (an endpoint
 * without `spec.id`, whose server id is only known once it is created). Ids compare case-insensitively.
 */
export function apiObjectOf(kind: Kind, spec: object): string | undefined {
  const values: string[] = [];
  for (const field of ADDRESS_FIELDS[kind]) {
    const value: unknown = Reflect.get(spec, field);
    if (typeof value !== "string" || value === "") return undefined;
    values.push(idKey(value));
  }
  return `${kind} ${values.join("/")}`;
}

/** The API object of a loaded manifest (see apiObjectOf). */
export const manifestObject = oncePer((manifest: Manifest): string | undefined =>
  apiObjectOf(manifest.kind, manifest.spec),
);
