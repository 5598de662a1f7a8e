import { afterEach, describe, expect, it } from "vitest";
import type { ResourceStatus } from "../src/resources.js";
import type { StateStore } from "../src/state/store.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";
import { mskEndpoint } from "./helpers/manifests.js";

/** Reverse private endpoints: created once, never blindly again; pipes wait for them. */

const ROUTE = "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";

const endpoint = (extra = "", description = "orders MSK") =>
  mskEndpoint("orders-msk", { description, extra });

const kafkaPipe = `${header("DataPipe", "orders")}  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.kafkaPipeId}
  name: orders
  source:
    kafka:
      reversePrivateEndpoints: [orders-msk]
`;

const renamedKey = `${header("ApiKey", "ci")}  organizationId: ${ids.organizationId}\n  keyId: ${ids.ciDeployerKeyId}\n  name: ci deployer renamed\n  roles: [developer]\n`;

/** Wraps a store so that its `n`-th save fails ("disk full") and every other save goes through. */
function failingSave(n: number): (store: StateStore) => StateStore {
  let saves = 0;
  return (store) => ({
    load: () => store.load(),
    save: (state) => (++saves === n ? Promise.reject(new Error("disk full")) : store.save(state)),
    ensureWritable: () => store.ensureWritable(),
    close: () => store.close(),
  });
}

describe("reverse private endpoints", () => {
  let world: EngineWorld;
  afterEach(() => world.close());
  const posts = () => world.writes().filter((r) => r.route === ROUTE);
  const statusOf = (result: { statuses: ResourceStatus[] }, id: string) =>
    result.statuses.find((s) => `${s.kind}/${s.name}` === id);

  it("is created once across restarts, its id recorded", async () => {
    world = await startEngineWorld();
    await world.write("e.yaml", endpoint());

    await world.apply();
    await world.apply();
    await world.apply();

    expect(posts()).toHaveLength(1);
    expect(world.sim.state.endpoints).toHaveLength(1);
    const state = await world.state();
    expect(state.resources["ReversePrivateEndpoint/orders-msk"]?.serverId).toBe(
      world.sim.state.endpoints[0]?.id,
    );
    expect(state.resources["ReversePrivateEndpoint/orders-msk"]?.intent).toBeUndefined();
  });

  it("is Unknown after a dropped connection, is not created again, and is created when the operator allows it", async () => {
    world = await startEngineWorld();
    await world.write("e.yaml", endpoint());
    world.sim.inject({ api: "management", method: "POST", route: ROUTE, kind: "drop" });

    const first = await world.apply();
    const second = await world.apply();

    expect(statusOf(first, "ReversePrivateEndpoint/orders-msk")?.status).toBe("Unknown");
    const message = statusOf(second, "ReversePrivateEndpoint/orders-msk")?.message ?? "";
    expect(statusOf(second, "ReversePrivateEndpoint/orders-msk")?.status).toBe("Unknown");
    expect(message).toContain("spec.id");
    expect(message).toContain("--allow-create ReversePrivateEndpoint/orders-msk");
    expect(posts()).toHaveLength(1);

    const third = await world.apply({ allowCreate: ["ReversePrivateEndpoint/orders-msk"] });
    const fourth = await world.apply();

    expect(statusOf(third, "ReversePrivateEndpoint/orders-msk")?.status).toBe("Synced");
    expect(fourth.ok).toBe(true);
    expect(posts()).toHaveLength(2);
  });

  it("is Failed after a 400 (the platform answered: nothing was created) and created on the next pass", async () => {
    world = await startEngineWorld();
    await world.write("e.yaml", endpoint());
    world.sim.inject({ api: "management", method: "POST", route: ROUTE, kind: "status", status: 400 });

    const first = await world.apply();
    const second = await world.apply();

    expect(statusOf(first, "ReversePrivateEndpoint/orders-msk")?.status).toBe("Failed");
    expect(statusOf(second, "ReversePrivateEndpoint/orders-msk")?.status).toBe("Synced");
    expect(posts().map((r) => r.status)).toEqual([400, 200]);
    expect(world.sim.state.endpoints).toHaveLength(1);
  });

  it("is Unknown after a crash between the POST and recording its id (an intent without id)", async () => {
    world = await startEngineWorld();
    await world.write("e.yaml", endpoint());
    await world.apply();
    const state = await world.state();
    const record = state.resources["ReversePrivateEndpoint/orders-msk"];
    if (!record) throw new Error("no record");
    delete record.serverId;
    record.intent = { action: "create", startedAt: "2026-01-01T00:00:00.000Z" };
    const { writeFile } = await import("node:fs/promises");
    await writeFile(`${world.stateDir}/state.json`, JSON.stringify(state));
    world.sim.clearRequests();

    const result = await world.apply();

    expect(statusOf(result, "ReversePrivateEndpoint/orders-msk")?.status).toBe("Unknown");
    expect(statusOf(result, "ReversePrivateEndpoint/orders-msk")?.message).toContain(
      "2026-01-01T00:00:00.000Z",
    );
    expect(posts()).toEqual([]);
  });

  it("adopts an existing endpoint by spec.id without a request, and pipes use its id", async () => {
    world = await startEngineWorld();
    const existing = "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e";
    world.sim.state.endpoints.push({
      id: existing,
      serviceId: ids.serviceId,
      description: "made in the console",
      type: "MSK_MULTI_VPC",
      vpcEndpointServiceName: null,
      vpcResourceConfigurationId: null,
      vpcResourceShareArn: null,
      mskClusterArn: "arn:aws:kafka:eu-west-1:111122223333:cluster/orders/abc",
      mskAuthentication: "SASL_IAM",
      endpointId: "vpce-console",
      dnsNames: [],
      privateDnsNames: [],
      status: "Ready",
    });
    await world.write("e.yaml", endpoint(`  id: ${existing}\n`));
    await world.write("p.yaml", kafkaPipe);

    const result = await world.apply();

    expect(result.statuses.filter((s) => s.status !== "Synced")).toEqual([]);
    expect(posts()).toEqual([]);
    const pipe = world.sim.state.pipes.find((p) => p.id === ids.kafkaPipeId);
    expect(pipe?.source.kafka?.reversePrivateEndpointIds).toEqual([existing]);
  });

  it("reports a field change of a created endpoint as needing replacement and sends nothing", async () => {
    world = await startEngineWorld();
    await world.write("e.yaml", endpoint());
    await world.apply();
    world.sim.clearRequests();

    await world.write("e.yaml", endpoint("", "a new description"));
    const result = await world.apply();

    expect(statusOf(result, "ReversePrivateEndpoint/orders-msk")?.status).toBe("Failed");
    expect(statusOf(result, "ReversePrivateEndpoint/orders-msk")?.message).toContain("cannot be updated");
    expect(world.writes()).toEqual([]);
  });

  it("sends the pipe the id of an endpoint created (not yet Ready) in the same apply, once the endpoints are done", async () => {
    world = await startEngineWorld({ simulator: { endpointReadyAfterMs: 60_000 } });
    await world.write("e.yaml", endpoint());
    await world.write("p.yaml", kafkaPipe);

    const first = await world.apply();
    const second = await world.apply();

    expect(first.ok).toBe(true);
    expect(statusOf(first, "DataPipe/orders")?.status).toBe("Synced");
    expect(statusOf(second, "DataPipe/orders")?.status).toBe("Synced");
    const pipePatches = world.writes().filter((r) => r.route?.endsWith("{dataPipeId}"));
    expect(pipePatches.map((r) => r.body)).toEqual([
      {
        name: "orders",
        source: { kafka: { reversePrivateEndpointIds: [world.sim.state.endpoints[0]?.id] } },
      },
    ]);
  });

  it("makes the pipe wait while its endpoint's create is Unknown", async () => {
    world = await startEngineWorld();
    await world.write("e.yaml", endpoint());
    await world.write("p.yaml", kafkaPipe);
    world.sim.inject({ api: "management", method: "POST", route: ROUTE, kind: "drop" });

    const result = await world.apply();

    expect(statusOf(result, "DataPipe/orders")?.status).toBe("Pending");
    expect(statusOf(result, "DataPipe/orders")?.message).toContain("unknown outcome");
    expect(world.writes().filter((r) => r.route?.endsWith("{dataPipeId}"))).toEqual([]);
  });

  it("creates on the next pass when the create intent could not be saved: no Unknown left behind", async () => {
    world = await startEngineWorld();
    await world.write("e.yaml", endpoint());
    // A second resource, whose save after the endpoint's carries the endpoint's record to disk.
    await world.write("k.yaml", renamedKey);
    const first = await world.apply({}, { store: failingSave(1) });
    expect(statusOf(first, "ReversePrivateEndpoint/orders-msk")?.status).toBe("Failed");

    const second = await world.apply();

    expect(statusOf(second, "ReversePrivateEndpoint/orders-msk")?.status).toBe("Synced");
    expect(posts()).toHaveLength(1);
  });

  it("never creates twice when the save after a successful create fails once", async () => {
    world = await startEngineWorld();
    await world.write("e.yaml", endpoint());
    // A second resource, whose save after the endpoint's carries the endpoint's record to disk.
    await world.write("k.yaml", renamedKey);
    // Save 1 is the create intent; save 2, right after the POST's answer, fails.
    const first = await world.apply({}, { store: failingSave(2) });
    expect(statusOf(first, "ReversePrivateEndpoint/orders-msk")?.message).toContain(
      "sent, but the state could not be saved",
    );

    const second = await world.apply();

    expect(statusOf(second, "ReversePrivateEndpoint/orders-msk")?.status).toBe("Synced");
    expect(posts()).toHaveLength(1);
  });
});
