import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { Config } from "../config.js";
import { ConfigError, errnoOf, messageOf } from "../errors.js";
import { escapeLine } from "../escape.js";
import {
  type Draft,
  IMPORT_KINDS,
  IMPORTERS,
  type ImportKind,
  type KnownDashboards,
  type Listed,
  type Place,
} from "../import/drafts.js";
import { freeName, manifestText, writeNew } from "../import/files.js";
import { fitToSchema } from "../import/fit.js";
import { slugOf } from "../import/names.js";
import { createOf } from "../kinds/index.js";
import { isNone } from "../kinds/kind.js";
import { apiObjectOf, idKey, manifestId } from "../manifests/identity.js";
import { loadRevision, type ManifestSet } from "../manifests/load.js";
import type { Kind } from "../manifests/manifest.js";
import type { PlatformClient } from "../platform/client.js";
import type { ResourceRecord } from "../state/store.js";
import { commandLogger, type Io } from "./io.js";
import { createPlatform, createStateStore } from "./platform.js";

/**
 * `driftless import`: lists the live platform through the published lists (the keys of the given
 * organizations, the pipes and endpoints of their services, the team's dashboards and alerts, every
 * page) and writes a manifest adopting each object that nothing in the folder addresses yet (no
 * manifest names its id, and driftless did not create it): the fields the platform answers, in the
 * manifests' own form, never a credential, one file per object in a folder per kind, never over a file.
 * Exit 0 done, 1 error (a list that could not be read: nothing is written then).
 */

export type ImportOptions = {
  /** The kinds to import; empty: every kind import writes. */
  kinds: readonly ImportKind[];
  /** Organizations whose keys, pipes and endpoints are listed; empty: those the folder's manifests name. */
  organizations: readonly string[];
  /** Services (of those organizations) whose pipes and endpoints are listed; empty: those the manifests name. */
  services: readonly string[];
  /** The folder read and written. */
  out: string;
  /** List what would be written, write nothing. */
  dryRun: boolean;
};

/** What the folder already holds: the API objects its manifests and the state address, the names taken, the dashboards. */
type Folder = { addressed: Set<string>; names: Map<Kind, Set<string>>; dashboards: KnownDashboards };

/** The organizations and services the lists are read for. */
type Scope = { organizations: string[]; places: Place[] };

export async function importCommand(config: Config, options: ImportOptions, io: Io): Promise<number> {
  const logger = commandLogger(config, io, "warn");
  const folder = await readFolder(config, options.out, logger);
  const keyed = await keyedOrganizations(config.managementCredentialsDir);
  const scope = scopeOf(options, folder.set, keyed);
  const kinds = kindsOf(options, scope, io);
  const platform = await createPlatform(config, { logger });
  let listed: Map<ImportKind, Array<{ live: Listed; place: Place }>>;
  try {
    listed = await listAll(platform.client, kinds, scope, io);
  } finally {
    await platform.close();
  }
  const written = await writeAll(listed, folder.known, options, io);
  io.out(summary(listed, written, options.dryRun));
  return 0;
}

/** The folder's manifests (an empty folder, or none yet, holds none) and the state's records. */
async function readFolder(config: Config, out: string, logger: ReturnType<typeof commandLogger>) {
  const set = await readManifests(out);
  const store = createStateStore(config, { logger, readOnly: true });
  let records: Record<string, ResourceRecord>;
  try {
    records = (await store.load()).resources;
  } finally {
    await store.close();
  }
  return { set, known: folderOf(set, records) };
}

async function readManifests(out: string): Promise<ManifestSet> {
  try {
    await readdir(out);
  } catch (error) {
    if (errnoOf(error) === "ENOENT")
      return { root: out, manifests: [], invalid: [], problems: [], superseded: false };
    throw new ConfigError(`cannot read ${out}: ${messageOf(error)}`, { cause: error });
  }
  return loadRevision(out);
}

function folderOf(set: ManifestSet, records: Readonly<Record<string, ResourceRecord>>): Folder {
  const addressed = new Set<string>();
  const names = new Map<Kind, Set<string>>();
  for (const doc of [...set.manifests, ...set.invalid]) {
    if (!doc.kind || doc.name === undefined) continue;
    names.set(doc.kind, (names.get(doc.kind) ?? new Set()).add(doc.name));
    const object = doc.spec ? apiObjectOf(doc.kind, doc.spec) : undefined;
    if (object) addressed.add(object);
  }
  // An object driftless created: its manifest names no id, its record does.
  for (const record of Object.values(records)) if (record.object) addressed.add(record.object);
  const dashboards: KnownDashboards = new Map();
  for (const manifest of set.manifests) {
    if (manifest.kind !== "Dashboard") continue;
    const record = records[manifestId(manifest)];
    const id = manifest.spec.dashboardId ?? record?.serverId;
    if (id === undefined) continue;
    const keys = new Map<string, string>();
    for (const [key, tileId] of Object.entries(record?.tileIds ?? {})) keys.set(idKey(tileId), key);
    for (const tile of manifest.spec.tiles) if (tile.id) keys.set(idKey(tile.id), tile.key);
    dashboards.set(idKey(id), { name: manifest.name, keys });
  }
  return { addressed, names, dashboards };
}

/** The organizations with a key of their own in DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR (`<id>.key-id`). */
async function keyedOrganizations(dir: string | undefined): Promise<string[]> {
  if (!dir) return [];
  const files = await readdir(dir).catch(() => [] as string[]);
  return files.filter((file) => file.endsWith(".key-id")).map((file) => file.slice(0, -".key-id".length));
}

/**
 * The organizations and services to list: the options', else those the folder's manifests name and
 * those with a key of their own (`keyed`); a service given is listed in each organization.
 */
function scopeOf(options: ImportOptions, set: ManifestSet, keyed: readonly string[]): Scope {
  const named = [...set.manifests, ...set.invalid].map((doc) => doc.spec ?? {});
  const text = (spec: object, field: string) => {
    const value: unknown = Reflect.get(spec, field);
    return typeof value === "string" && value !== "" ? value : undefined;
  };
  const organizations = new Set(options.organizations);
  if (organizations.size === 0) {
    for (const spec of named) {
      const id = text(spec, "organizationId");
      if (id) organizations.add(id);
    }
    for (const id of keyed) organizations.add(id);
  }
  const places = new Map<string, Place>();
  for (const organizationId of organizations) {
    for (const serviceId of options.services)
      places.set(`${organizationId}/${serviceId}`, { organizationId, serviceId });
    if (options.services.length > 0) continue;
    for (const spec of named) {
      const serviceId = text(spec, "serviceId");
      if (serviceId && text(spec, "organizationId") === organizationId)
        places.set(`${organizationId}/${serviceId}`, { organizationId, serviceId });
    }
  }
  return { organizations: [...organizations], places: [...places.values()] };
}

/**
 * The kinds to import: those asked for, else every kind whose list can be read. A kind asked for whose
 * list has no organization or service to be read for is an error; unasked, it is left out with a note.
 */
function kindsOf(options: ImportOptions, scope: Scope, io: Io): ImportKind[] {
  const asked = options.kinds.length > 0;
  const kinds = asked ? IMPORT_KINDS.filter((kind) => options.kinds.includes(kind)) : [...IMPORT_KINDS];
  return kinds.filter((kind) => {
    const { scope: where } = IMPORTERS[kind];
    const missing =
      where === "organization" && scope.organizations.length === 0
        ? "an organization (--organization ID, or a manifest in the folder naming one)"
        : where === "service" && scope.places.length === 0
          ? "a service (--service ID with its --organization ID, or a manifest in the folder naming both)"
          : undefined;
    if (!missing) return true;
    if (asked) throw new ConfigError(`${kind} objects are listed per ${where}: give ${missing}`);
    io.err(
      escapeLine(
        `driftless import: ${kind} not imported: its objects are listed per ${where}, and none is known: give ${missing}`,
      ),
    );
    return false;
  });
}

/** Every list of `kinds`, in order; a count on a terminal as they come. Throws the first list's error. */
async function listAll(platform: PlatformClient, kinds: readonly ImportKind[], scope: Scope, io: Io) {
  const lists = kinds.flatMap((kind) => {
    const where = IMPORTERS[kind].scope;
    const places: Place[] =
      where === "team"
        ? [{}]
        : where === "organization"
          ? scope.organizations.map((organizationId) => ({ organizationId }))
          : scope.places;
    return places.map((place) => ({ kind, place }));
  });
  const listed = new Map<ImportKind, Array<{ live: Listed; place: Place }>>();
  let objects = 0;
  const show = (done: number) =>
    io.progress?.(`driftless import: ${done} of ${lists.length} lists read, ${objects} objects`);
  show(0);
  for (const [index, { kind, place }] of lists.entries()) {
    let found: Listed[];
    try {
      // Credentials an answer carries are dropped before anything reads it (`redact`).
      found = await IMPORTERS[kind].list(platform, place, { priority: "read", redact: [] });
    } catch (error) {
      io.progress?.(undefined);
      throw new ConfigError(
        `cannot list the ${kind} objects${placeOf(place)}: ${messageOf(error)}; nothing was written`,
        { cause: error },
      );
    }
    objects += found.length;
    listed.set(kind, [...(listed.get(kind) ?? []), ...found.map((live) => ({ live, place }))]);
    show(index + 1);
  }
  io.progress?.(undefined);
  return listed;
}

const placeOf = ({ organizationId, serviceId }: Place) =>
  serviceId
    ? ` of service ${serviceId} of organization ${organizationId}`
    : organizationId
      ? ` of organization ${organizationId}`
      : " of the team";

/** What was written (or would be), per kind; the objects already addressed and those not written, with why. */
type Written = { files: Map<ImportKind, number>; addressed: number; skipped: number };

async function writeAll(
  listed: ReadonlyMap<ImportKind, Array<{ live: Listed; place: Place }>>,
  folder: Folder,
  options: ImportOptions,
  io: Io,
): Promise<Written> {
  const written: Written = { files: new Map(), addressed: 0, skipped: 0 };
  for (const kind of IMPORT_KINDS) {
    const importer = IMPORTERS[kind];
    const create = createOf(kind);
    const idField = isNone(create) ? "id" : create.idField;
    const used = folder.names.get(kind) ?? new Set<string>();
    folder.names.set(kind, used);
    for (const { live, place } of listed.get(kind) ?? []) {
      if (folder.addressed.has(apiObjectOf(kind, { ...place, [idField]: live.id }) ?? "")) {
        written.addressed += 1;
        continue;
      }
      const draft = importer.draft(live, place, folder.dashboards);
      if ("skipped" in draft) {
        notImported(io, written, kind, live.id, draft.skipped);
        continue;
      }
      const name = await freeName(
        options.out,
        importer.folder,
        slugOf(draft.title, kind.toLowerCase()),
        used,
      );
      const fitted = fitToSchema(draft, name);
      if ("error" in fitted) {
        used.delete(name);
        notImported(io, written, kind, live.id, fitted.error);
        continue;
      }
      const comments = commentsOf(draft, fitted.leftOut);
      const file = {
        path: join(importer.folder, `${name}.yaml`),
        text: manifestText(kind, name, fitted.spec, comments),
      };
      if (!options.dryRun) await writeNew(options.out, file);
      if (kind === "Dashboard") remember(folder.dashboards, name, fitted.spec);
      written.files.set(kind, (written.files.get(kind) ?? 0) + 1);
      io.out(
        escapeLine(
          `${options.dryRun ? "would write" : "wrote"} ${file.path}  ${kind}/${name}  (${draft.noun} ${live.id})`,
        ),
      );
    }
  }
  return written;
}

/** An object no manifest can state as the platform answered it: said, and counted. */
function notImported(io: Io, written: Written, kind: ImportKind, id: string, why: string): void {
  written.skipped += 1;
  io.err(escapeLine(`driftless import: not imported: ${kind} ${id}: ${why}`));
}

/** A dashboard just drafted, for the alerts on its tiles: its name and tile keys by tile id. */
function remember(dashboards: KnownDashboards, name: string, spec: Record<string, unknown>): void {
  const keys = new Map<string, string>();
  const tiles = Array.isArray(spec.tiles) ? spec.tiles : [];
  for (const tile of tiles)
    if (typeof tile?.id === "string" && typeof tile.key === "string") keys.set(idKey(tile.id), tile.key);
  if (typeof spec.dashboardId === "string") dashboards.set(idKey(spec.dashboardId), { name, keys });
}

/** The comment above a written manifest: what it adopts, what it may add, what was left out. */
function commentsOf(draft: Draft, leftOut: ReadonlyMap<string, string[]>): string[] {
  return [
    `Written by driftless import: adopts the existing ${draft.noun} ${draft.id} by its id, as the platform answered it.`,
    "Review it before committing. Removed from git later, its object is left as it is (an adopted object's deletion policy is orphan).",
    ...draft.notes,
    ...[...leftOut].map(([why, paths]) => `Not written (${why}): ${paths.join(", ")}`),
  ];
}

function summary(listed: ReadonlyMap<ImportKind, unknown[]>, written: Written, dryRun: boolean): string {
  const total = [...listed.values()].reduce((sum, list) => sum + list.length, 0);
  const files = [...written.files].map(([kind, n]) => `${kind} ${n}`).join(", ");
  const count = [...written.files.values()].reduce((sum, n) => sum + n, 0);
  const verb = dryRun ? "would write" : "wrote";
  return `Import: ${total} object(s) listed, ${written.addressed} already addressed by a manifest or created by driftless, ${verb} ${count} manifest(s)${files ? ` (${files})` : ""}, ${written.skipped} not imported.`;
}
