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

describe("hostile answers: valid JSON no sane platform sends", () => {
  const getKey = async () => {
    const answer = await fetch(`${sim.managementUrl}${org}/keys/${ids.ciDeployerKeyId}`, {
      headers: { authorization },
    });
    return { status: answer.status, text: await answer.text() };
  };
  const startFull = async () => {
    sim = await startSimulator({ contract: "full", rateLimit: { management: false, observability: false } });
  };

  it("deep: answers the field nested as many levels as asked, once, and the work is done", async () => {
    await startFull();
    sim.inject({ api: "management", method: "PATCH", route: keyRoute, kind: "deep", field: "ipAccessList" });

    const patched = await patchKey();
    const text = await patched.text();
    const after = await getKey();

    expect(patched.status).toBe(200);
    expect(text.length).toBeGreaterThan(36_000);
    let node = (JSON.parse(text) as { result: { ipAccessList: unknown } }).result.ipAccessList;
    let depth = 0;
    while (typeof node === "object" && node !== null) {
      node = (node as { a: unknown }).a;
      depth++;
    }
    expect(depth).toBe(6_000);
    expect(sim.state.keys.find((k) => k.id === ids.ciDeployerKeyId)?.name).toBe("ci");
    expect(JSON.parse(after.text).result.ipAccessList).toEqual([
      { source: "10.0.0.0/8", description: "office" },
    ]);
  });

  it("huge: answers the list with as many entries as asked, made from its own", async () => {
    await startFull();
    sim.inject({ api: "management", method: "GET", kind: "huge", field: "ipAccessList", size: 3 });

    const answer = await getKey();

    expect(JSON.parse(answer.text).result.ipAccessList).toEqual([
      { source: "10.0.0.0/8 #0", description: "office #0" },
      { source: "10.0.0.0/8 #1", description: "office #1" },
      { source: "10.0.0.0/8 #2", description: "office #2" },
    ]);
  });

  it("reordered: answers the same members in another order at each answer, one after another", async () => {
    await startFull();
    const plain = await getKey();
    sim.inject({ api: "management", method: "GET", kind: "reordered", count: 3 });

    const results = [await getKey(), await getKey(), await getKey()].map((a) => JSON.parse(a.text).result);

    const before = JSON.parse(plain.text).result;
    const order = (value: object) => JSON.stringify(Object.keys(value));
    const orders = [before, ...results].map(order);
    for (const result of results) expect(result).toEqual(before);
    expect(new Set(orders).size).toBe(4);
  });

  it("wrong-type: answers the field as a value of another type", async () => {
    await startFull();
    sim.inject({ api: "management", method: "GET", kind: "wrong-type", field: "name" });
    sim.inject({ api: "management", method: "GET", kind: "wrong-type", field: "ipAccessList" });

    const name = JSON.parse((await getKey()).text).result;
    const list = JSON.parse((await getKey()).text).result;

    expect(name.name).toBe(42);
    expect(list.ipAccessList).toEqual({ unexpected: "an object where a list belongs" });
  });

  it("leaves an error answer as it is, and refuses a rewrite that names no field", async () => {
    await startFull();
    sim.inject({ api: "management", kind: "deep", field: "name" });

    const missing = await fetch(`${sim.managementUrl}${org}/keys/00000000-0000-4000-8000-000000000000`, {
      headers: { authorization },
    });
    const text = await missing.text();

    expect(missing.status).toBe(404);
    expect(JSON.parse(text)).toMatchObject({ status: 404, error: expect.stringContaining("") });
    expect(text).not.toContain('{"a":');
    expect(() => sim.inject({ api: "management", kind: "huge" })).toThrow(/needs the field it rewrites/);
  });
});
