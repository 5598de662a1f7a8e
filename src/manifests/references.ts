import { resourceId } from "../resources.js";
import { isMapping, stringField } from "./fields.js";
import { addressField, apiObjectOf, idKey, manifestId, manifestObject, sameId } from "./identity.js";
import {
  type FieldPath,
  formatPath,
  type InvalidDocument,
  type Kind,
  type Manifest,
  positionOf,
} from "./manifest.js";
import type { Problem } from "./problem.js";

export type ReferenceOptions = {
  /**
   * Is this manifest one driftless already manages (its record addresses the object)? Of two manifests
   * addressing one API object, the one already managed keeps it and the other is the problem: a new
   * file must not turn the resource it collides with Invalid. Default: the first one read keeps it.
   */
  existing?: (m: Manifest) => boolean;
  /**
   * The documents that are not valid manifests (parse.ts). Their names, ids and references are checked
   * too, so that one run reports every problem of a document; they never take a name or an object from
   * a valid manifest; and a manifest that names one is not told it is missing (it waits for it).
   */
  invalid?: readonly InvalidDocument[];
};

/**
 * Checks that need more than one manifest: names unique per kind, no two manifests addressing the same
 * API object, and references by manifest name (DataPipe → ReversePrivateEndpoint, Alert and AlertWatch
 * → Dashboard and tile; a Dashboard without a tile an Alert watches is refused too, naming the Alert,
 * since the platform deletes an alert with its tile). Returns the manifests that can be acted on: the first of two duplicates is
 * kept, a later duplicate and a manifest with a broken reference are dropped (each with a problem),
 * and become invalid documents beside the ones given.
 */
export function checkReferences(
  manifests: Manifest[],
  options: ReferenceOptions = {},
): { manifests: Manifest[]; problems: Problem[]; invalid: InvalidDocument[] } {
  const check = new Check(manifests);
  const invalid = options.invalid ?? [];
  uniqueNames(manifests, invalid, check);
  oneManifestPerObject(manifests, invalid, check, options.existing);
  const endpoints = byName(manifests, invalid, "ReversePrivateEndpoint", check);
  const dashboards = byName(manifests, invalid, "Dashboard", check);
  for (const doc of [...manifests, ...invalid]) {
    if (doc.kind === "DataPipe") pipeEndpoints(doc, endpoints, check);
    if (doc.kind === "AlertWatch") alertDashboard(doc, dashboards, check);
    if (doc.kind === "Alert") alertTile(doc, dashboards, check);
  }
  oneDashboardPerTile(dashboards, check);
  const dropped = manifests.filter((m) => check.dropped.has(m)).map(asInvalid);
  return {
    manifests: manifests.filter((m) => !check.dropped.has(m)),
    problems: check.problems,
    invalid: [...invalid, ...dropped],
  };
}

/** A document the checks read: a valid manifest, or an invalid one as far as it could be read. */
type Doc = Manifest | InvalidDocument;

/** A document named by a reference: `valid` when it is a manifest that can be acted on. */
type Target = { doc: Doc; valid: boolean };

/** The problems found so far, and the valid manifests they drop. */
class Check {
  readonly problems: Problem[] = [];
  readonly dropped = new Set<Manifest>();
  private readonly valid: ReadonlySet<Doc>;

  constructor(manifests: readonly Manifest[]) {
    this.valid = new Set(manifests);
  }

  report(doc: Doc, path: FieldPath, message: string): void {
    this.problems.push({
      ...positionOf(doc, path),
      resource: idOf(doc),
      field: path.length ? formatPath(path) : undefined,
      message,
    });
    if (this.isValid(doc)) this.dropped.add(doc);
  }

  isValid(doc: Doc): doc is Manifest {
    return this.valid.has(doc) && !this.dropped.has(doc as Manifest);
  }
}

/** Names unique per kind: the name is the resource's identity in state and status. */
function uniqueNames(
  manifests: readonly Manifest[],
  invalid: readonly InvalidDocument[],
  check: Check,
): void {
  const seen = new Map<string, Doc>();
  for (const doc of [...manifests, ...invalid]) {
    const id = nameOf(doc);
    if (id === undefined) continue;
    const first = seen.get(id);
    if (first) check.report(doc, ["metadata", "name"], `the name is already used by ${where(first)}`);
    else seen.set(id, doc);
  }
}

/**
 * One API object, one manifest, whatever the case of its ids (identity.ts): two would fight over it on
 * every pass. Two watches of one alert or one service would export the same metric series twice.
 */
function oneManifestPerObject(
  manifests: readonly Manifest[],
  invalid: readonly InvalidDocument[],
  check: Check,
  existing: (m: Manifest) => boolean = () => false,
): void {
  const owners = new Map<string, Manifest>();
  for (const m of manifests) {
    const object = manifestObject(m);
    if (check.dropped.has(m) || object === undefined) continue;
    const first = owners.get(object);
    if (!first) {
      owners.set(object, m);
      continue;
    }
    // The one already managed keeps the object; otherwise the first one read.
    const [owner, other] = existing(m) && !existing(first) ? [m, first] : [first, m];
    owners.set(object, owner);
    check.report(other, ["spec", addressField(other.kind)], sameObject(owner, existing(owner)));
  }
  // An invalid document never takes an object from a valid manifest: it is the one reported.
  const claimed = new Map<string, Doc>(owners);
  for (const doc of invalid) {
    if (!doc.kind || !doc.spec) continue;
    const object = apiObjectOf(doc.kind, doc.spec);
    if (object === undefined) continue;
    const owner = claimed.get(object);
    if (owner) check.report(doc, ["spec", addressField(doc.kind)], sameObject(owner, false));
    else claimed.set(object, doc);
  }
}

const sameObject = (owner: Doc, managed: boolean) =>
  `addresses the same API object as ${idOf(owner)} (${where(owner)})${managed ? ", which driftless already manages" : ""}`;

/**
 * The documents of `kind` a reference may name, by name: the valid manifests first, then the invalid
 * documents (and the manifests dropped so far) under a name no valid manifest has.
 */
function byName(
  manifests: readonly Manifest[],
  invalid: readonly InvalidDocument[],
  kind: Kind,
  check: Check,
): Map<string, Target> {
  const found = new Map<string, Target>();
  for (const m of manifests)
    if (m.kind === kind && check.isValid(m)) found.set(m.name, { doc: m, valid: true });
  for (const doc of [...manifests, ...invalid]) {
    if (doc.kind !== kind || doc.name === undefined || found.has(doc.name)) continue;
    found.set(doc.name, { doc, valid: check.isValid(doc) });
  }
  return found;
}

/** The endpoints a pipe names exist, in the pipe's organization and service. */
function pipeEndpoints(pipe: Doc, endpoints: ReadonlyMap<string, Target>, check: Check): void {
  const names = specAt(pipe, "source", "kafka", "reversePrivateEndpoints");
  if (!Array.isArray(names)) return;
  names.forEach((name, index) => {
    if (typeof name !== "string") return;
    const path = ["spec", "source", "kafka", "reversePrivateEndpoints", index];
    const endpoint = endpoints.get(name);
    if (!endpoint) {
      check.report(pipe, path, `no ReversePrivateEndpoint named ${name}`);
      return;
    }
    const ids = (doc: Doc) => ["organizationId", "serviceId"].map((field) => textAt(doc, field));
    const [pipeOrganization, pipeService] = ids(pipe);
    const [organization, service] = ids(endpoint.doc);
    if (!pipeOrganization || !pipeService || !organization || !service) return;
    if (!sameId(organization, pipeOrganization) || !sameId(service, pipeService)) {
      check.report(
        pipe,
        path,
        `${idOf(endpoint.doc)} belongs to another organization or service than this pipe`,
      );
    }
  });
}

/** The dashboard and tile an alert watch names exist (the tile as far as its dashboard can be read). */
function alertDashboard(watch: Doc, dashboards: ReadonlyMap<string, Target>, check: Check): void {
  const name = textAt(watch, "dashboard");
  if (name === undefined) return;
  const dashboard = dashboards.get(name);
  if (!dashboard) {
    check.report(watch, ["spec", "dashboard"], `no Dashboard named ${name}`);
    return;
  }
  const tile = textAt(watch, "tile");
  const tiles = specAt(dashboard.doc, "tiles");
  if (tile === undefined || !Array.isArray(tiles)) return;
  if (!tiles.some((t) => stringField("key")(t) === tile)) {
    check.report(watch, ["spec", "tile"], `${idOf(dashboard.doc)} has no tile with key ${tile}`);
  }
}

/** Series types whose tiles carry alerts (line, stacked_bar and number tiles). */
const ALERTABLE = new Set(["time", "number"]);

/**
 * The dashboard and tile an Alert names exist, and the tile can carry an alert. A dashboard without the
 * tile is refused too, naming the alert: applied, it would delete the alert with the tile.
 */
function alertTile(alert: Doc, dashboards: ReadonlyMap<string, Target>, check: Check): void {
  const name = textAt(alert, "dashboard");
  const tile = textAt(alert, "tile");
  if (name === undefined || tile === undefined) return;
  const dashboard = dashboards.get(name);
  if (!dashboard) {
    check.report(alert, ["spec", "dashboard"], `no Dashboard named ${name}`);
    return;
  }
  const tiles = specAt(dashboard.doc, "tiles");
  if (!Array.isArray(tiles)) return;
  const found = tiles.find((t) => stringField("key")(t) === tile);
  if (!found) {
    check.report(alert, ["spec", "tile"], `${idOf(dashboard.doc)} has no tile with key ${tile}`);
    check.report(
      dashboard.doc,
      ["spec", "tiles"],
      `has no tile with key ${tile}, which ${idOf(alert)} (${where(alert)}) watches: the platform deletes an alert with its tile; keep the tile, or move or remove the alert`,
    );
    return;
  }
  const series = isMapping(found) ? found.series : undefined;
  const type = Array.isArray(series) ? stringField("type")(series[0]) : undefined;
  if (type !== undefined && !ALERTABLE.has(type))
    check.report(
      alert,
      ["spec", "tile"],
      `tile ${tile} of ${idOf(dashboard.doc)} is a ${type} tile: the platform puts alerts on line, stacked_bar and number tiles only`,
    );
}

/** Tile ids are API objects too: one tile adopted by two dashboards would be moved back and forth. */
function oneDashboardPerTile(dashboards: ReadonlyMap<string, Target>, check: Check): void {
  const owners = new Map<string, Doc>();
  for (const { doc } of dashboards.values()) {
    const tiles = specAt(doc, "tiles");
    if (!Array.isArray(tiles)) continue;
    tiles.forEach((tile, index) => {
      const id = stringField("id")(tile);
      if (id === undefined) return;
      const first = owners.get(idKey(id));
      if (first && first !== doc) {
        check.report(doc, ["spec", "tiles", index, "id"], `tile ${id} is already adopted by ${idOf(first)}`);
      } else owners.set(idKey(id), doc);
    });
  }
}

/** A valid manifest dropped by a check, as the invalid document it now is. */
const asInvalid = (m: Manifest): InvalidDocument => ({
  position: m.position,
  resource: manifestId(m),
  kind: m.kind,
  name: m.name,
  spec: m.spec,
  ...(m.locate ? { locate: m.locate } : {}),
});

/** `Kind/name` of a document, as its problems name it. */
const idOf = (doc: Doc): string | undefined => (doc as InvalidDocument).resource ?? nameOf(doc);

/** `Kind/name` of a document whose kind and name could be read, else undefined. */
const nameOf = (doc: Doc): string | undefined =>
  isManifest(doc)
    ? manifestId(doc)
    : doc.kind && doc.name !== undefined
      ? resourceId({ kind: doc.kind, name: doc.name })
      : undefined;

/** A valid manifest (as loaded) rather than an invalid document: only manifests carry labels. */
const isManifest = (doc: Doc): doc is Manifest => "labels" in doc;

/** The value at `path` of a document's spec, whatever the document's state; undefined when not there. */
function specAt(doc: Doc, ...path: string[]): unknown {
  let value: unknown = doc.spec;
  for (const step of path) value = isMapping(value) ? value[step] : undefined;
  return value;
}

const textAt = (doc: Doc, ...path: string[]): string | undefined => {
  const value = specAt(doc, ...path);
  return typeof value === "string" ? value : undefined;
};

const where = (doc: Doc) => `${doc.position.file}:${doc.position.line}`;
