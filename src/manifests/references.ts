import { resourceId } from "../resources.js";
import { type FieldPath, formatPath, type Manifest, type ManifestOf, positionOf } from "./manifest.js";
import type { Problem } from "./problem.js";

/**
 * Checks that need more than one manifest: names unique per kind, no two manifests addressing the same
 * API object, and references by manifest name (DataPipe → ReversePrivateEndpoint, AlertWatch →
 * Dashboard and tile). Returns the manifests that can be acted on: the first of two duplicates is
 * kept, a later duplicate and a manifest with a broken reference are dropped (each with a problem).
 */
export function checkReferences(manifests: Manifest[]): { manifests: Manifest[]; problems: Problem[] } {
  const problems: Problem[] = [];
  const dropped = new Set<Manifest>();
  const report = (m: Manifest, path: FieldPath, message: string, key = false) => {
    problems.push({
      ...positionOf(m, path, { key }),
      resource: resourceId(m),
      field: path.length ? formatPath(path) : undefined,
      message,
    });
    dropped.add(m);
  };

  // Names unique per kind: the name is the resource's identity in state and status.
  const byName = new Map<string, Manifest>();
  for (const m of manifests) {
    const first = byName.get(resourceId(m));
    if (first) report(m, ["metadata", "name"], `the name is already used by ${where(first)}`);
    else byName.set(resourceId(m), m);
  }

  // One API object, one manifest: two would fight over it on every pass.
  const byObject = new Map<string, Manifest>();
  for (const m of manifests) {
    if (dropped.has(m)) continue;
    for (const { key, path } of addresses(m)) {
      const first = byObject.get(key);
      if (first && first !== m) {
        report(m, path, `addresses the same API object as ${resourceId(first)} (${where(first)})`);
        break;
      }
      byObject.set(key, m);
    }
  }

  const endpoints = new Map<string, ManifestOf<"ReversePrivateEndpoint">>();
  const dashboards = new Map<string, ManifestOf<"Dashboard">>();
  for (const m of manifests) {
    if (m.kind === "ReversePrivateEndpoint" && !dropped.has(m)) endpoints.set(m.name, m);
    if (m.kind === "Dashboard" && !dropped.has(m)) dashboards.set(m.name, m);
  }

  for (const m of manifests) {
    if (m.kind === "DataPipe") {
      const names = m.spec.source.kafka?.reversePrivateEndpoints ?? [];
      names.forEach((name, index) => {
        const path = ["spec", "source", "kafka", "reversePrivateEndpoints", index];
        const endpoint = endpoints.get(name);
        if (!endpoint) {
          report(m, path, `no ReversePrivateEndpoint named ${name}`);
          return;
        }
        const { organizationId, serviceId } = m.spec;
        if (endpoint.spec.organizationId !== organizationId || endpoint.spec.serviceId !== serviceId) {
          report(
            m,
            path,
            `ReversePrivateEndpoint/${name} belongs to another organization or service than this pipe`,
          );
        }
      });
    }
    if (m.kind === "AlertWatch" && m.spec.dashboard !== undefined) {
      const dashboard = dashboards.get(m.spec.dashboard);
      if (!dashboard) {
        report(m, ["spec", "dashboard"], `no Dashboard named ${m.spec.dashboard}`);
        continue;
      }
      const tile = m.spec.tile;
      if (tile !== undefined && !dashboard.spec.tiles.some((t) => t.key === tile)) {
        report(m, ["spec", "tile"], `Dashboard/${dashboard.name} has no tile with key ${tile}`);
      }
    }
  }

  // Tile ids are API objects too: one tile adopted by two dashboards would be moved back and forth.
  const tileOwners = new Map<string, ManifestOf<"Dashboard">>();
  for (const dashboard of dashboards.values()) {
    dashboard.spec.tiles.forEach((tile, index) => {
      if (tile.id === undefined) return;
      const first = tileOwners.get(tile.id);
      if (first && first !== dashboard) {
        report(
          dashboard,
          ["spec", "tiles", index, "id"],
          `tile ${tile.id} is already adopted by ${resourceId(first)}`,
        );
      } else tileOwners.set(tile.id, dashboard);
    });
  }

  return { manifests: manifests.filter((m) => !dropped.has(m)), problems };
}

const where = (m: Manifest) => `${m.position.file}:${m.position.line}`;

/** The API objects a manifest addresses, each as a unique key and the field that names it. */
function addresses(m: Manifest): { key: string; path: FieldPath }[] {
  switch (m.kind) {
    case "Organization":
      return [{ key: `organization ${m.spec.organizationId}`, path: ["spec", "organizationId"] }];
    case "ApiKey":
      return [{ key: `key ${m.spec.organizationId}/${m.spec.keyId}`, path: ["spec", "keyId"] }];
    case "DataPipe":
      return [
        {
          key: `pipe ${m.spec.organizationId}/${m.spec.serviceId}/${m.spec.dataPipeId}`,
          path: ["spec", "dataPipeId"],
        },
      ];
    case "ReversePrivateEndpoint":
      return m.spec.id ? [{ key: `endpoint ${m.spec.id}`, path: ["spec", "id"] }] : [];
    case "Dashboard":
      return [{ key: `dashboard ${m.spec.dashboardId}`, path: ["spec", "dashboardId"] }];
    // Two watches of one alert or one service would export the same metric series twice.
    case "AlertWatch":
      return [{ key: `alert ${m.spec.alertId}`, path: ["spec", "alertId"] }];
    case "BackupWatch":
      return [{ key: `backups ${m.spec.organizationId}/${m.spec.serviceId}`, path: ["spec", "serviceId"] }];
  }
}
