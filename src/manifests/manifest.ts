import { z } from "zod";
import type { Position } from "../errors.js";
import { Alert } from "./specs/alert.js";
import { AlertWatch } from "./specs/alert-watch.js";
import { ApiKey } from "./specs/api-key.js";
import { BackupWatch } from "./specs/backup-watch.js";
import { Dashboard } from "./specs/dashboard.js";
import { DataPipe } from "./specs/data-pipe.js";
import { Organization } from "./specs/organization.js";
import { ReversePrivateEndpoint } from "./specs/reverse-private-endpoint.js";

/** The document schema of each kind, in the order kinds are listed to users. */
const DOCUMENTS = [
  Organization,
  ApiKey,
  DataPipe,
  ReversePrivateEndpoint,
  Dashboard,
  Alert,
  AlertWatch,
  BackupWatch,
] as const;
type KindDocument = (typeof DOCUMENTS)[number];

export type Kind = KindDocument["shape"]["kind"]["value"];
export const KINDS: readonly Kind[] = DOCUMENTS.map((d) => d.shape.kind.value);

/** The kinds driftless only watches: polled, never written nor read for drift. */
export const WATCH_KINDS = ["AlertWatch", "BackupWatch"] as const satisfies readonly Kind[];
export type WatchKind = (typeof WATCH_KINDS)[number];

/** The kinds driftless writes (and, with reads on, reads for drift). */
export type ManagedKind = Exclude<Kind, WatchKind>;
const watched: ReadonlySet<Kind> = new Set(WATCH_KINDS);
export const MANAGED_KINDS: readonly ManagedKind[] = KINDS.filter(
  (kind): kind is ManagedKind => !watched.has(kind),
);

/** The document schema of each kind, by kind. */
export const KIND_SCHEMAS = Object.fromEntries(DOCUMENTS.map((d) => [d.shape.kind.value, d])) as {
  [K in Kind]: Extract<KindDocument, { shape: { kind: { value: K } } }>;
};

export const isKind = (value: unknown): value is Kind =>
  typeof value === "string" && Object.hasOwn(KIND_SCHEMAS, value);

/** Any manifest document as written in YAML, told apart by `kind`. */
export const ManifestDocument = z.discriminatedUnion("kind", DOCUMENTS);
export type ManifestDocument = z.infer<typeof ManifestDocument>;

/** A path from the document root, like `["spec", "tiles", 2, "key"]`. */
export type FieldPath = readonly (string | number)[];

/**
 * Finds where a field is in the manifest's file. `key: true` points at the field's key rather than its
 * value (where an unknown field is reported). A path that does not exist gives its deepest existing
 * parent.
 */
export type Locate = (path: FieldPath, options?: { key?: boolean }) => Position;

type Loaded<D> = D extends { kind: infer K; spec: infer S }
  ? {
      kind: K;
      /** metadata.name: the resource's identity in driftless, unique per kind. */
      name: string;
      labels: Record<string, string>;
      /** metadata.annotations; `driftless/*` keys steer driftless (DRIFTLESS_ANNOTATIONS). */
      annotations: Record<string, string>;
      spec: S;
      /** Where the document starts; `file` is relative to the manifests root, with `/`. */
      position: Position;
      /** Absent on manifests built in code (tests); positionOf falls back to `position`. */
      locate?: Locate;
    }
  : never;

/** A manifest as a file's text gives it, before positions are attached (`ordinal`: its place in the file). */
export type ParsedManifest = Pick<Manifest, "kind" | "name" | "labels" | "annotations" | "spec"> & {
  ordinal: number;
};

/**
 * A document that is not a valid manifest, as far as it could be read: where it starts, how its
 * problems name it (`Kind/name`), and, of a known kind, its name and spec as written. The checks
 * between manifests (references.ts) read these too, so that a missing reference or a name used twice
 * shows beside the document's other problems, and a manifest naming it is not told it is missing.
 */
export type InvalidDocument = {
  position: Position;
  resource?: string;
  kind?: Kind;
  name?: string;
  spec?: Record<string, unknown>;
  /** Absent on documents built in code (tests); positionOf falls back to `position`. */
  locate?: Locate;
};

/** An invalid document as a file's text gives it, before `locate` is attached (`ordinal` as in ParsedManifest). */
export type ParsedInvalid = Omit<InvalidDocument, "locate"> & { ordinal: number };

/** One loaded, schema-valid manifest. Narrow on `kind` to get its typed spec. */
export type Manifest = Loaded<ManifestDocument>;
export type ManifestOf<K extends Kind> = Extract<Manifest, { kind: K }>;

/** Where `path` (from the document root, e.g. `["spec", "source", "kafka"]`) is in the manifest's file. */
export function positionOf(
  manifest: Manifest | InvalidDocument,
  path: FieldPath,
  options?: { key?: boolean },
): Position {
  return manifest.locate?.(path, options) ?? manifest.position;
}

/** A field path as users read it: `spec.tiles[2].key`. */
export function formatPath(path: FieldPath): string {
  let text = "";
  for (const step of path) {
    if (typeof step === "number") text += `[${step}]`;
    else text += text ? `.${step}` : step;
  }
  return text;
}
