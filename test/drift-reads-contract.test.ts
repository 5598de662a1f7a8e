import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPlatform, type Platform } from "../src/commands/platform.js";
import { Config } from "../src/config.js";
import { compare, type ReadTarget, readLive, readRoute } from "../src/drift/index.js";
import { contractCheck } from "../src/platform/contracts.js";
import { ROUTES, type RouteName } from "../src/platform/routes.js";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { createLogger } from "../src/telemetry/logger.js";

/**
 * The reads driftless sends for drift are the published contract's: each request matches the
 * contract's documents (contracts/full/, checked by src/platform/contracts.ts), the simulator's full
 * mode answers each in the contract's shape, and a console edit made through the simulator's console
 * (PATCH /__console/...) is what the next read sees.
 */

const targets: ReadTarget[] = [
  { kind: "Organization", spec: { organizationId: ids.organizationId, name: "Acme Analytics" } },
  {
    kind: "ApiKey",
    spec: { organizationId: ids.organizationId, keyId: ids.ciDeployerKeyId, name: "ci-deployer" },
  },
  {
    kind: "DataPipe",
    spec: {
      organizationId: ids.organizationId,
      serviceId: ids.serviceId,
      dataPipeId: ids.kafkaPipeId,
      name: "orders-from-kafka",
    },
  },
  { kind: "Dashboard", spec: { dashboardId: ids.dashboardId, name: "Platform overview", tiles: [] } },
];

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
      const answer = await readLive(platform.client, target);
      expect(answer?.live, target.kind).toBeDefined();
      // The dashboard manifest here states no tile: the live ones are what a PUT would remove.
      if (target.kind !== "Dashboard") expect(compare(target, answer?.live), target.kind).toEqual([]);
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
    const target: ReadTarget = {
      kind: "ReversePrivateEndpoint",
      spec: {
        organizationId: ids.organizationId,
        serviceId: ids.serviceId,
        description: "x",
        type: "VPC_ENDPOINT_SERVICE",
      },
      serverId: "no-such-endpoint",
    } as ReadTarget;
    const answer = await readLive(platform.client, target);
    expect(answer).toEqual({ live: undefined, requestId: expect.any(String) });
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
    const key = targets[1] as ReadTarget;
    const live = (await readLive(platform.client, key))?.live;
    expect(compare(key, live)).toEqual([
      { path: "name", want: "ci-deployer", have: "renamed in the console" },
    ]);
    expect(sim.state.dashboards[0]?.tiles.find((t) => t.id === ids.tileIds[1])?.w).toBe(12);
  });
});
