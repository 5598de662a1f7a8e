/**
 * The kinds `driftless import` writes manifests of, in the order it lists them (dashboards before
 * alerts). Kept free of imports: the settings read it for `--kinds`, and the manifests read the settings.
 * Each is a manifest kind: IMPORTERS, keyed by the kinds of both lists, must hold them all.
 */
export const IMPORT_KINDS = ["ApiKey", "DataPipe", "ReversePrivateEndpoint", "Dashboard", "Alert"] as const;
export type ImportKind = (typeof IMPORT_KINDS)[number];
