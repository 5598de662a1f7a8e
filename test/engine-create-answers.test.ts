import { afterEach, expect, it } from "vitest";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/** A create whose answer carries no usable id cannot be recorded: its outcome is unknown, never repeated. */

const ROUTE = "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";

const endpoint = `${header("ReversePrivateEndpoint", "orders-msk")}  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  description: orders MSK
  type: MSK_MULTI_VPC
  mskClusterArn: arn:aws:kafka:eu-west-1:111122223333:cluster/orders/abc
  mskAuthentication: SASL_IAM
`;

let world: EngineWorld;
afterEach(() => world.close());

for (const [what, id] of [
  ["an empty id", ""],
  ["no id at all", undefined],
] as const) {
  it(`leaves the endpoint Unknown and does not POST again when the create answer has ${what}`, async () => {
    world = await startEngineWorld();
    await world.write("e.yaml", endpoint);
    const result = { ...(id === undefined ? {} : { id }), description: "orders MSK", status: "Ready" };
    world.sim.inject({
      api: "management",
      method: "POST",
      route: ROUTE,
      kind: "status",
      status: 200,
      body: { status: 200, requestId: "7d0c3f52-1111-4aaa-8bbb-123456789abc", result },
    });

    const first = await world.apply();
    const second = await world.apply();

    const posts = world.writes().filter((r) => r.route === ROUTE);
    expect(posts).toHaveLength(1);
    expect(first.statuses.find((s) => s.kind === "ReversePrivateEndpoint")?.status).toBe("Unknown");
    expect(second.statuses.find((s) => s.kind === "ReversePrivateEndpoint")?.status).toBe("Unknown");
    expect((await world.state()).resources["ReversePrivateEndpoint/orders-msk"]?.serverId).toBeUndefined();
  });
}
