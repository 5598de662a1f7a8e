import { resourceId } from "../resources.js";
import { addressField, idKey, manifestId, manifestObject, sameId } from "./identity.js";
import {
  type FieldPath,
  formatPath,
  type Kind,
  type Manifest,
  type ManifestOf,
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
};

/**
 * Checks that need more than one manifest: names unique per kind, no two manifests addressing the same
 * API object, and references by manifest name (DataPipe → ReversePrivateEndpoint, AlertWatch →
 * Dashboard and tile). Returns the manifests that can be acted on: the first of two duplicates is
 * kept, a later duplicate and a manifest with a broken reference are dropped (each with a problem).
 */
export function checkReferences(
  manifests: Manifest[],
  options: ReferenceOptions = {},
): { manifests: Manifest[]; problems: Problem[] } {
  const check = new Check();
  uniqueNames(manifests, check);
  oneManifestPerObject(manifests, check, options.existing);
  const endpoints = byName(manifests, "ReversePrivateEndpoint", check);
  const dashboards = byName(manifests, "Dashboard", check);
  for (const m of manifests) {
    if (m.kind === "DataPipe") pipeEndpoints(m, endpoints, check);
    if (m.kind === "AlertWatch") alertDashboard(m, dashboards, check);
  }
  oneDashboardPerTile(dashboards, check);
  return { manifests: manifests.filter((m) => !check.dropped.has(m)), problems: check.problems };
}

/** The problems found so far, and the manifests they drop. */
class Check {
  readonly problems: Problem[] = [];
  readonly dropped = new Set<Manifest>();

  report(m: Manifest, path: FieldPath, message: string): void {
    this.problems.push({
      ...positionOf(m, path),
      resource: resourceId(m),
      field: path.length ? formatPath(path) : undefined,
      message,
    });
    this.dropped.add(m);
  }
}

/** Names unique per kind: the name is the resource's identity in state and status. */
function uniqueNames(manifests: readonly Manifest[], check: Check): void {
  const seen = new Map<string, Manifest>();
  for (const m of manifests) {
    const first = seen.get(manifestId(m));
    if (first) check.report(m, ["metadata", "name"], `the name is already used by ${where(first)}`);
    else seen.set(manifestId(m), m);
  }
}

/**
 * One API object, one manifest, whatever the case of its ids (identity.ts): two would fight over it on
 * every pass. Two watches of one alert or one service would export the same metric series twice.
 */
function oneManifestPerObject(
  manifests: readonly Manifest[],
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
    check.report(
      other,
      ["spec", addressField(other.kind)],
      `addresses the same API object as ${resourceId(owner)} (${where(owner)})${existing(owner) ? ", which driftless already manages" : ""}`,
    );
  }
}

/** The manifests of `kind` still valid, by name. */
function byName<K extends Kind>(
  manifests: readonly Manifest[],
  kind: K,
  check: Check,
): Map<string, ManifestOf<K>> {
  const found = new Map<string, ManifestOf<K>>();
  for (const m of manifests) if (isOfKind(m, kind) && !check.dropped.has(m)) found.set(m.name, m);
  return found;
}

const isOfKind = <K extends Kind>(m: Manifest, kind: K): m is ManifestOf<K> => m.kind === kind;

/** The endpoints a pipe names exist, in the pipe's organization and service. */
function pipeEndpoints(
  m: ManifestOf<"DataPipe">,
  endpoints: ReadonlyMap<string, ManifestOf<"ReversePrivateEndpoint">>,
  check: Check,
): void {
  const names = m.spec.source?.kafka?.reversePrivateEndpoints ?? [];
  names.forEach((name, index) => {
    const path = ["spec", "source", "kafka", "reversePrivateEndpoints", index];
    const endpoint = endpoints.get(name);
    if (!endpoint) {
      check.report(m, path, `no ReversePrivateEndpoint named ${name}`);
      return;
    }
    const { organizationId, serviceId } = m.spec;
    if (
      !sameId(endpoint.spec.organizationId, organizationId) ||
      !sameId(endpoint.spec.serviceId, serviceId)
    ) {
      check.report(
        m,
        path,
        `${resourceId(endpoint)} belongs to another organization or service than this pipe`,
      );
    }
  });
}

/** The dashboard and tile an alert watch names exist. */
function alertDashboard(
  m: ManifestOf<"AlertWatch">,
  dashboards: ReadonlyMap<string, ManifestOf<"Dashboard">>,
  check: Check,
): void {
  if (m.spec.dashboard === undefined) return;
  const dashboard = dashboards.get(m.spec.dashboard);
  if (!dashboard) {
    check.report(m, ["spec", "dashboard"], `no Dashboard named ${m.spec.dashboard}`);
    return;
  }
  const tile = m.spec.tile;
  if (tile !== undefined && !dashboard.spec.tiles.some((t) => t.key === tile)) {
    check.report(m, ["spec", "tile"], `${resourceId(dashboard)} has no tile with key ${tile}`);
  }
}

/** Tile ids are API objects too: one tile adopted by two dashboards would be moved back and forth. */
function oneDashboardPerTile(dashboards: ReadonlyMap<string, ManifestOf<"Dashboard">>, check: Check): void {
  const owners = new Map<string, ManifestOf<"Dashboard">>();
  for (const dashboard of dashboards.values()) {
    dashboard.spec.tiles.forEach((tile, index) => {
      if (tile.id === undefined) return;
      const first = owners.get(idKey(tile.id));
      if (first && first !== dashboard) {
        check.report(
          dashboard,
          ["spec", "tiles", index, "id"],
          `tile ${tile.id} is already adopted by ${resourceId(first)}`,
        );
      } else owners.set(idKey(tile.id), dashboard);
    });
  }
}

const where = (m: Manifest) => `${m.position.file}:${m.position.line}`;
