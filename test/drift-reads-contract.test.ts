import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPlatform, type Platform } from "../src/commands/platform.js";
import { Config } from "../src/config.js";
import { kindOf } from "../src/kinds/index.js";
import { isNone } from "../src/kinds/kind.js";
import type { Manifest } from "../src/manifests/manifest.js";
import { createRead } from "../src/platform/client.js";
import { contractCheck } from "../src/platform/contracts.js";
import { ROUTES, type RouteName } from "../src/platform/routes.js";
import { contextOfRecords, readAndCompare } from "../src/reconcile/plan-drift.js";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import type { ResourceRecord } from "../src/state/store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { manifestOf } from "./helpers/manifests.js";

/**
 * The reads driftless sends for drift are the published contract's: each request matches the
 * contract's documents (contracts/full/, checked by src/platform/contracts.ts), the simulator's full
 * mode answers each in the contract's shape, and a console edit made through the simulator's console
 * (PATCH /__console/...) is what the next read sees.
 */

const targets: Manifest[] = [
  manifestOf("Organization", "org", { organizationId: ids.organizationId, name: "Acme Analytics" }),
  manifestOf("ApiKey", "ci", {
    organizationId: ids.organizationId,
    keyId: ids.ciDeployerKeyId,
    name: "ci-deployer",
  }),
  manifestOf("DataPipe", "orders", {
    organizationId: ids.organizationId,
    serviceId: ids.serviceId,
    dataPipeId: ids.kafkaPipeId,
    name: "orders-from-kafka",
  }),
  manifestOf("Dashboard", "overview", { dashboardId: ids.dashboardId, name: "Platform overview", tiles: [] }),
];

/** Reads `target` as drift does, with `record` as its record. */
const readOne = (target: Manifest, record?: ResourceRecord) =>
  readAndCompare(createRead(platform.client), target, record, contextOfRecords({}, new Date()));

/** The route a kind reads its live object with. */
function readRoute(target: Manifest, record?: ResourceRecord): RouteName | undefined {
  const observe = kindOf(target.kind).observe;
  if (isNone(observe)) return undefined;
  const subject = { kind: target.kind, name: target.name, spec: target.spec, record };
  return observe.read(subject)?.request.route;
}

let sim: Simulator;
let platform: Platform;
beforeEach(async () => {
  sim = await startSimulator({ contract: "full", rateLimit: { management: false, observability: false } });
  const config = Config.parse({
    managementUrl: sim.managementUrl,
    observabilityUrl: sim.observabilityUrl,
    managementKeyId: { value: sim.credentials.managementKeyId },
    managementKeySecret: { value: sim.credentials.managementKeySecret },
    observabilityToken: { value: sim.credentials.observabilityToken },
  });
  platform = await createPlatform(config, { logger: createLogger("silent") });
});
afterEach(async () => {
  await platform.close();
  await sim.close();
});

/** The route name and path parameters of a recorded request. */
function routeOf(method: string, path: string): { name: RouteName; params: Record<string, string> } {
  for (const [name, route] of Object.entries(ROUTES)) {
    if (route.method !== method) continue;
    const names: string[] = [];
    const pattern = route.template.replace(/\{(\w+)\}/g, (_, param: string) => {
      names.push(param);
      return "([^/]+)";
    });
    const found = new RegExp(`^${pattern}$`).exec(path);
    if (found) {
      const params = Object.fromEntries(
        names.map((param, i) => [param, decodeURIComponent(found[i + 1] ?? "")]),
      );
      return { name: name as RouteName, params };
    }
  }
  throw new Error(`no route for ${method} ${path}`);
}

describe("the reads of drift", () => {
  it("are requests of the published contract, each answered in its shape", async () => {
    const check = contractCheck("full");
    for (const target of targets) {
      sim.clearRequests();
      const found = await readOne(target);
      expect(found?.live, target.kind).toBeDefined();
      // The dashboard manifest here states no tile: the live ones are what a PUT would remove.
      if (target.kind !== "Dashboard") expect(found?.fields, target.kind).toEqual([]);
      const [sent] = sim.requests;
      if (!sent) throw new Error(`no request for ${target.kind}`);
      const { name, params } = routeOf(sent.method, sent.path);
      expect(name).toBe(readRoute(target));
      expect(check.request(name, params, undefined), `${name} request`).toEqual([]);
      const authorization = sent.headers.authorization ?? "";
      const url = ROUTES[name].api === "observability" ? sim.observabilityUrl : sim.managementUrl;
      const body = await (await fetch(`${url}${sent.path}`, { headers: { authorization } })).json();
      expect(check.answer(name, 200, body), `${name} answer`).toEqual([]);
    }
  });

  it("lists a service's endpoints for a reverse private endpoint, and finds one gone as missing", async () => {
    const target = manifestOf("ReversePrivateEndpoint", "gone", {
      organizationId: ids.organizationId,
      serviceId: ids.serviceId,
      description: "x",
      type: "VPC_ENDPOINT_SERVICE",
      vpcEndpointServiceName: "com.amazonaws.vpce.x",
    });
    const record = { kind: target.kind, name: target.name, serverId: "no-such-endpoint" };
    const found = await readOne(target, record);
    expect(found).toMatchObject({ live: undefined, fields: [], requestId: expect.any(String) });
    expect(sim.requests.map((r) => [r.method, r.route])).toEqual([
      ["GET", ROUTES.listReversePrivateEndpoints.template],
    ]);
  });

  it("see an edit made through the simulator's console, which is not a request of either API", async () => {
    const edit = await fetch(`${sim.managementUrl}/__console/keys/${ids.ciDeployerKeyId}`, {
      method: "PATCH",
      body: JSON.stringify({ name: "renamed in the console" }),
    });
    const tile = await fetch(
      `${sim.observabilityUrl}/__console/dashboards/${ids.dashboardId}/tiles/${ids.tileIds[1]}`,
      { method: "PATCH", body: JSON.stringify({ w: 12 }) },
    );
    const unknown = await fetch(`${sim.managementUrl}/__console/keys/nope`, { method: "PATCH", body: "{}" });

    expect([edit.status, tile.status, unknown.status]).toEqual([200, 200, 404]);
    expect(sim.requests).toEqual([]);
    const key = targets[1] as Manifest;
    const found = await readOne(key);
    expect(found?.fields).toEqual([{ path: "name", want: "ci-deployer", have: "renamed in the console" }]);
    expect(sim.state.dashboards[0]?.tiles.find((t) => t.id === ids.tileIds[1])?.w).toBe(12);
  });
});
