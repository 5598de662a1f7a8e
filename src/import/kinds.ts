import type { Kind } from "../manifests/manifest.js";

/** The kinds `driftless import` writes manifests of, in the order it lists them (dashboards before alerts). */
export const IMPORT_KINDS = [
  "ApiKey",
  "DataPipe",
  "ReversePrivateEndpoint",
  "Dashboard",
  "Alert",
] as const satisfies readonly Kind[];
export type ImportKind = (typeof IMPORT_KINDS)[number];
