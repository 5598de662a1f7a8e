import { afterEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";

let sim: Simulator;
afterEach(() => sim?.close());

const authorization = `Basic ${Buffer.from(`${ids.managementKeyId}:${ids.managementKeySecret}`).toString("base64")}`;
const org = `/v1/organizations/${ids.organizationId}`;
const keyRoute = "/v1/organizations/{organizationId}/keys/{keyId}";

async function start(seed?: number) {
  sim = await startSimulator({ rateLimit: { management: false, observability: false }, seed });
  return sim;
}

function patchOrg(signal?: AbortSignal) {
  return fetch(`${sim.managementUrl}${org}`, {
    method: "PATCH",
    headers: { authorization, "content-type": "application/json" },
    body: JSON.stringify({ name: "Acme" }),
    signal,
  });
}

function patchKey() {
  return fetch(`${sim.managementUrl}${org}/keys/${ids.ciDeployerKeyId}`, {
    method: "PATCH",
    headers: { authorization, "content-type": "application/json" },
    body: JSON.stringify({ name: "ci" }),
  });
}

describe("fault injection", () => {
  it("answers the given status, body and headers to the next N matching requests only", async () => {
    await start();
    sim.inject({
      api: "management",
      method: "PATCH",
      route: "/v1/organizations/{organizationId}",
      kind: "status",
      status: 503,
      headers: { "retry-after": "2" },
      count: 2,
    });

    const other = await patchKey();
    const first = await patchOrg();
    const second = await patchOrg();
    const third = await patchOrg();

    expect(other.status).toBe(200);
    expect([first.status, second.status, third.status]).toEqual([503, 503, 200]);
    expect(first.headers.get("retry-after")).toBe("2");
    expect(((await first.json()) as { error: string }).error).toMatch(/^INJECTED_FAULT/);
    expect(sim.state.organizations[0]?.name).toBe("Acme");
  });

  it("answers a string body as plain text", async () => {
    await start();
    sim.inject({ api: "management", kind: "status", status: 502, body: "Bad Gateway" });

    const answer = await patchOrg();

    expect(answer.status).toBe(502);
    expect(answer.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(await answer.text()).toBe("Bad Gateway");
  });

  it("adds latency, then answers normally", async () => {
    await start();
    sim.inject({ api: "management", route: keyRoute, kind: "latency", ms: 300 });

    const started = Date.now();
    const answer = await patchKey();

    expect(answer.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
  });

  it("drops the connection without an answer, and applies nothing", async () => {
    await start();
    sim.inject({ api: "management", kind: "drop" });

    await expect(patchOrg()).rejects.toThrow();
    expect(sim.state.organizations[0]?.name).toBe("Acme Analytics");
    expect(sim.requests.at(-1)?.status).toBe(0);
  });

  it("with applied, does the work and then drops the answer: an unknown outcome", async () => {
    await start();
    const route = "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";
    sim.inject({ api: "management", method: "POST", route, kind: "drop", applied: true });

    const create = fetch(
      `${sim.managementUrl}${org}/services/${ids.serviceId}/datapipesReversePrivateEndpoints`,
      {
        method: "POST",
        headers: { authorization, "content-type": "application/json" },
        body: JSON.stringify({
          description: "lost",
          type: "VPC_ENDPOINT_SERVICE",
          vpcEndpointServiceName: "svc",
        }),
      },
    );

    await expect(create).rejects.toThrow();
    expect(sim.state.endpoints.map((e) => e.description)).toEqual(["lost"]);
    expect(sim.requests.at(-1)?.status).toBe(0);
  });

  it("hangs until the client gives up, and close() still returns", async () => {
    await start();
    sim.inject({ api: "management", kind: "hang" });

    await expect(patchOrg(AbortSignal.timeout(300))).rejects.toThrow();
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]?.status).toBe(0);
  });

  it("hits the same requests for the same seed, and a spent fault hits nothing", async () => {
    const pattern = async (seed: number) => {
      await start(seed);
      sim.inject({
        api: "observability",
        kind: "status",
        status: 500,
        probability: 0.5,
        count: Number.POSITIVE_INFINITY,
      });
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        const response = await fetch(`${sim.observabilityUrl}/api/v2/alerts/${ids.alertId}`, {
          headers: { authorization: "Bearer sim-observability-token" },
        });
        statuses.push(response.status);
      }
      await sim.close();
      return statuses;
    };

    const first = await pattern(7);
    const again = await pattern(7);
    const other = await pattern(8);

    expect(first).toEqual(again);
    expect(first).toContain(500);
    expect(first).toContain(200);
    expect(other).not.toEqual(first);
  });

  it("stops every fault on clearFaults()", async () => {
    await start();
    sim.inject({ api: "management", kind: "status", status: 500, count: 5 });

    sim.clearFaults();
    const answer = await patchOrg();

    expect(answer.status).toBe(200);
  });
});
