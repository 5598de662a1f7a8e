import { formatPath, type Manifest, positionOf } from "../manifests/manifest.js";
import type { Problem } from "../manifests/problem.js";
import { secretFields } from "../manifests/secrets.js";
import { type ContractIssue, contractCheck } from "../platform/contracts.js";
import type { Contract } from "../platform/routes.js";
import { resourceId } from "../resources.js";
import { requestFields as keyFields } from "./api-key.js";
import { requestFields as pipeFields } from "./data-pipe.js";
import { requestFields as endpointFields } from "./reverse-private-endpoint.js";
import type { PlannedRequest, SpecOf } from "./types.js";
import { omit, setAt } from "./values.js";

/**
 * `validate --contract`: what of a manifest the contract's documents refuse, found before merge. Each
 * manifest's requests are built as a first apply would send them, with every field it states (secrets
 * and endpoint ids as stand-ins: validate reads no secret and knows no server id), checked against
 * contracts/<contract>/ like the simulator checks them, and each problem placed at the manifest field
 * it comes from. What only the platform knows (whether a sourceId names one of the team's sources) is
 * not checked.
 */

/** A value of the right type where validate cannot know the real one: a secret, an endpoint's id. */
const STAND_IN = "00000000-0000-4000-8000-000000000000";

/** A request and how its paths lead back to the manifest's fields. */
type Checked = {
  request: PlannedRequest;
  field: (path: readonly (string | number)[]) => (string | number)[];
};

export function contractProblems(manifests: readonly Manifest[], contract: Contract): Problem[] {
  const check = contractCheck(contract);
  return manifests.flatMap((manifest) => {
    const checked = requestOf(withStandIns(manifest));
    if (!checked) return [];
    const { route, params, body } = checked.request;
    return check.request(route, params, body).map((issue) => problemOf(manifest, issue, checked, contract));
  });
}

function problemOf(manifest: Manifest, issue: ContractIssue, checked: Checked, contract: Contract): Problem {
  const path = ["spec", ...checked.field(issue.path)];
  return {
    ...positionOf(manifest, path),
    resource: resourceId(manifest),
    field: formatPath(path),
    message: `${issue.message} (${contract === "full" ? "the published" : "the minimal"} contract)`,
  };
}

/** The manifest with a stand-in string for every secret reference. */
function withStandIns(manifest: Manifest): Manifest {
  const fields = secretFields(manifest.spec, []);
  if (fields.length === 0) return manifest;
  const spec: object = structuredClone(manifest.spec);
  for (const { path } of fields) setAt(spec, path, "secret");
  return { ...manifest, spec } as Manifest;
}

/** The path parameters name the spec's ids, except the observability APIs' `id`, which is `idField`. */
const params =
  (idField = "id") =>
  (path: readonly (string | number)[]) =>
    path[0] === "params" ? (path[1] === "id" ? [idField] : path.slice(1)) : [...path];

/** The request a first apply of `manifest` sends with every field it states (stand-ins typed loosely). */
function requestOf(manifest: Manifest): Checked | undefined {
  const same = params();
  switch (manifest.kind) {
    case "Organization": {
      const { organizationId, privateEndpoints, ...fields } = manifest.spec;
      const add = privateEndpoints?.map((e) => ({ id: e.id, description: e.description ?? "" }));
      const body = { ...fields, ...(add ? { privateEndpoints: { add } } : {}) };
      return {
        request: { route: "updateOrganization", params: { organizationId }, body },
        // privateEndpoints.add[i] is the manifest's privateEndpoints[i].
        field: (path) =>
          path[0] === "privateEndpoints" ? ["privateEndpoints", ...path.slice(2)] : same(path),
      };
    }
    case "ApiKey": {
      const { organizationId, keyId } = manifest.spec;
      const body = keyFields(manifest.spec);
      return { request: { route: "updateApiKey", params: { organizationId, keyId }, body }, field: same };
    }
    case "DataPipe":
      return pipeRequest(manifest.spec);
    case "ReversePrivateEndpoint": {
      const { organizationId, serviceId } = manifest.spec;
      const body = endpointFields(manifest.spec);
      return {
        request: { route: "createReversePrivateEndpoint", params: { organizationId, serviceId }, body },
        field: same,
      };
    }
    case "Dashboard": {
      const { dashboardId, name, tags, tiles } = manifest.spec;
      const body = { name, tiles: tiles.map((tile) => omit(tile, ["key"])), ...(tags ? { tags } : {}) };
      return {
        request: { route: "putDashboard", params: { id: dashboardId }, body },
        field: params("dashboardId"),
      };
    }
    case "AlertWatch":
      return {
        request: { route: "getAlert", params: { id: manifest.spec.alertId }, body: undefined },
        field: params("alertId"),
      };
    case "BackupWatch": {
      const { organizationId, serviceId } = manifest.spec;
      return {
        request: { route: "listBackups", params: { organizationId, serviceId }, body: undefined },
        field: same,
      };
    }
  }
}

function pipeRequest(spec: SpecOf<"DataPipe"> | Manifest["spec"]): Checked | undefined {
  const pipe = spec as SpecOf<"DataPipe">;
  const built = pipeFields(pipe, {
    reassert: false,
    now: new Date(),
    allowCreate: false,
    endpoint: () => ({ state: "ready", id: STAND_IN }),
  });
  if (!("fields" in built)) return undefined;
  const body = built.fields;
  if (built.mappings && body.source)
    body.source.postgres = { ...body.source.postgres, tableMappingsToAdd: built.mappings };
  const { organizationId, serviceId, dataPipeId } = pipe;
  return {
    request: { route: "updateDataPipe", params: { organizationId, serviceId, dataPipeId }, body },
    field: (path) => {
      if (path[0] === "params") return path.slice(1);
      // tableMappingsToAdd[i] is the manifest's tableMappings[i]; endpoint names became ids.
      if (path[2] === "tableMappingsToAdd") return ["source", "postgres", "tableMappings", ...path.slice(3)];
      if (path[2] === "reversePrivateEndpointIds" && pipe.source?.kafka?.reversePrivateEndpoints)
        return ["source", "kafka"];
      return [...path];
    },
  };
}
