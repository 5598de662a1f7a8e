import { afterEach, describe, expect, it } from "vitest";
import type { ResourceStatus } from "../src/resources.js";
import { defaultFixture } from "../src/simulator/index.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/** Every fault class of the platform, through the engine: one failing resource never stops the others. */

const KEY_ROUTE = "/v1/organizations/{organizationId}/keys/{keyId}";

const key = (name: string, keyId: string = ids.ciDeployerKeyId, manifest = "ci-deployer") =>
  `${header("ApiKey", manifest)}  organizationId: ${ids.organizationId}
  keyId: ${keyId}
  name: ${name}
`;

const org = `${header("Organization", "acme")}  organizationId: ${ids.organizationId}
  name: Acme Renamed
`;

describe("platform faults through the engine", () => {
  let world: EngineWorld;
  afterEach(() => world.close());
  const keyRequests = () => world.sim.requests.filter((r) => r.route === KEY_ROUTE);
  const status = (result: { statuses: ResourceStatus[] }, kind: string) =>
    result.statuses.find((s) => s.kind === kind);

  it("waits at least Retry-After after a 429, then succeeds", async () => {
    world = await startEngineWorld();
    await world.write("key.yaml", key("renamed"));
    world.sim.inject({
      api: "management",
      route: KEY_ROUTE,
      kind: "status",
      status: 429,
      headers: { "retry-after": "1" },
    });

    const result = await world.apply();

    const [limited, retried] = keyRequests();
    expect(limited?.status).toBe(429);
    expect(retried?.status).toBe(200);
    expect((retried?.at ?? 0) - (limited?.at ?? 0)).toBeGreaterThanOrEqual(1000);
    expect(result.ok).toBe(true);
  });

  it("retries 5xx answers and succeeds", async () => {
    world = await startEngineWorld();
    await world.write("key.yaml", key("renamed"));
    world.sim.inject({ api: "management", route: KEY_ROUTE, kind: "status", status: 503, count: 2 });

    const result = await world.apply();

    expect(keyRequests().map((r) => r.status)).toEqual([503, 503, 200]);
    expect(result.ok).toBe(true);
  });

  it("does not retry a 400, reports it with the platform's request id, and applies the other resources", async () => {
    world = await startEngineWorld();
    await world.write("key.yaml", key("renamed"));
    await world.write("org.yaml", org);
    world.sim.inject({
      api: "management",
      route: KEY_ROUTE,
      kind: "status",
      status: 400,
      body: { status: 400, error: "BAD_REQUEST: name is taken", requestId: "req-400-abc" },
    });

    const result = await world.apply();

    expect(keyRequests()).toHaveLength(1);
    expect(status(result, "ApiKey")).toMatchObject({ status: "Failed", requestId: "req-400-abc" });
    expect(status(result, "ApiKey")?.message ?? "").toContain("name is taken");
    expect(status(result, "Organization")?.status).toBe("Synced");
    expect(world.sim.state.organizations[0]?.name).toBe("Acme Renamed");
    expect(result.ok).toBe(false);
  });

  it("times out a request that hangs, and the next apply sends it again", async () => {
    world = await startEngineWorld({ platform: { http: { timeoutMs: 300, retry: { maxAttempts: 2 } } } });
    await world.write("key.yaml", key("renamed"));
    await world.write("org.yaml", org);
    world.sim.inject({ api: "management", route: KEY_ROUTE, kind: "hang", count: 2 });

    const first = await world.apply();
    const second = await world.apply();

    expect(status(first, "ApiKey")?.status).toBe("Failed");
    expect(status(first, "ApiKey")?.message ?? "").toContain("no answer within 300 ms");
    expect(status(first, "Organization")?.status).toBe("Synced");
    expect(second.ok).toBe(true);
    expect(world.sim.state.keys.find((k) => k.id === ids.ciDeployerKeyId)?.name).toBe("renamed");
  });
});

describe("rate budget", () => {
  let world: EngineWorld;
  afterEach(() => world.close());

  it("sends N changes under the platform's limit without a single 429", async () => {
    // The same ratio as production (10 per window at the platform, 9 in driftless's budget), in a
    // shorter window so the test stays fast.
    const fixture = defaultFixture();
    const extra = Array.from({ length: 20 }, (_, i) => ({
      id: `0c0d0e0f-0000-4000-8000-0000000000${String(i).padStart(2, "0")}`,
      organizationId: ids.organizationId,
      name: `key-${i}`,
      roles: ["developer" as const],
      keySuffix: "0000",
      createdAt: "2025-01-01T00:00:00Z",
    }));
    fixture.keys = [...(fixture.keys ?? []), ...extra];
    world = await startEngineWorld({
      simulator: { fixture, rateLimit: { management: { requests: 10, windowMs: 1500 } } },
      platform: { budgets: { management: { requests: 9, windowMs: 1500 } } },
    });
    for (const k of extra) await world.write(`${k.name}.yaml`, key(`${k.name}-renamed`, k.id, k.name));

    const result = await world.apply();

    const statuses = world.sim.requests.map((r) => r.status);
    expect(statuses).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toEqual([]);
    expect(result.ok).toBe(true);
  });
});
