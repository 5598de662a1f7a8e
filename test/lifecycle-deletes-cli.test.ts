import { describe, expect, it } from "vitest";
import { driftlessAsync } from "./helpers/cli.js";
import {
  adoptedKey,
  createdBoard,
  createdEndpoint,
  createdKey,
  createdPipe,
  ROUTE,
  statusLines,
  statusOf,
  useLifecycleCli,
} from "./helpers/lifecycle-cli.js";

/**
 * How deletes are sent, through the built CLI against the simulator's published contract: a 404 is as
 * good as an answer, endpoints go with their published DELETE, deletes come after the pass's creates and
 * updates and dependents before what they name (creates the other way round), and nothing is deleted
 * while a manifest still names the object or while any manifest of the revision has a problem.
 */

const cli = useLifecycleCli();

describe("a delete", () => {
  it("answered 404 counts as deleted: status Deleted, exit 0, the record dropped", async () => {
    await cli.write("pipe.yaml", createdPipe("orders"));
    expect((await cli.apply()).code).toBe(0);
    const pipes = cli.sim.state.pipes;
    pipes.splice(
      pipes.findIndex((p) => p.name === "orders"),
      1,
    );
    await cli.remove("pipe.yaml");
    cli.sim.clearRequests();

    const result = await cli.apply();
    const next = await cli.apply();

    expect(cli.sent("DELETE", ROUTE.pipe).map((r) => r.status)).toEqual([404]);
    expect(result.code, result.stdout).toBe(0);
    expect(statusLines(result)).toEqual(["DataPipe/orders Deleted"]);
    expect(next.code).toBe(0);
    expect(statusLines(next)).toEqual([]);
    expect(cli.writes()).toEqual([`DELETE ${ROUTE.pipe}`]);
  });

  it("of a reverse private endpoint is its published DELETE", async () => {
    await cli.write("endpoint.yaml", createdEndpoint("orders-msk"));
    expect((await cli.apply()).code).toBe(0);
    const endpointId = cli.sim.state.endpoints[0]?.id;
    await cli.remove("endpoint.yaml");
    cli.sim.clearRequests();

    const result = await driftlessAsync(["apply"], cli.env);

    expect(result.code, result.stdout).toBe(0);
    expect(result.stdout).toContain(
      "Deleted  ReversePrivateEndpoint/orders-msk  its manifest left git and its deletion policy is delete: the object was deleted\n    - ReversePrivateEndpoint/orders-msk: DELETE ",
    );
    expect(result.stdout).toMatch(/^Apply: 1 request\(s\) sent; 0 Synced, .*, 1 Deleted;/m);
    expect(cli.writes()).toEqual([`DELETE ${ROUTE.endpoint}`]);
    expect(cli.sent("DELETE", ROUTE.endpoint)[0]?.path).toContain(String(endpointId));
    expect(cli.sim.state.endpoints).toEqual([]);
  });
});

describe("the order of a pass", () => {
  it("creates an endpoint before the pipe that names it, and deletes the pipe before the endpoint, after the pass's creates and updates", async () => {
    await cli.write("endpoint.yaml", createdEndpoint("orders-msk"));
    await cli.write("pipe.yaml", createdPipe("orders", { endpoints: ["orders-msk"] }));
    await cli.write("board.yaml", createdBoard("board"));

    const first = await cli.apply();

    expect(first.code, first.stdout).toBe(0);
    expect(cli.writes().filter((w) => w.startsWith("POST /v1"))).toEqual([
      `POST ${ROUTE.endpoints}`,
      `POST ${ROUTE.pipes}`,
    ]);
    expect(cli.sent("POST", ROUTE.pipes)[0]?.body).toMatchObject({
      source: { kafka: { reversePrivateEndpointIds: [cli.sim.state.endpoints[0]?.id] } },
    });

    await cli.remove("endpoint.yaml", "pipe.yaml");
    await cli.write("key.yaml", createdKey("deployer"));
    await cli.write("board.yaml", createdBoard("board", { title: "Board, renamed" }));
    cli.sim.clearRequests();

    const second = await cli.apply();

    expect(second.code, second.stdout).toBe(0);
    expect(cli.writes().sort()).toEqual(
      [
        `POST ${ROUTE.keys}`,
        `PUT ${ROUTE.dashboard}`,
        `DELETE ${ROUTE.pipe}`,
        `DELETE ${ROUTE.endpoint}`,
      ].sort(),
    );
    expect(cli.writes().slice(2)).toEqual([`DELETE ${ROUTE.pipe}`, `DELETE ${ROUTE.endpoint}`]);
  });
});

describe("what holds a delete", () => {
  it("a manifest that still names the object: not deleted while it does, deleted once none does", async () => {
    await cli.write("endpoint.yaml", createdEndpoint("orders-msk"));
    await cli.write("pipe.yaml", createdPipe("orders", { endpoints: ["orders-msk"] }));
    expect((await cli.apply()).code).toBe(0);
    await cli.remove("endpoint.yaml");
    cli.sim.clearRequests();

    const held = await cli.apply();

    expect(cli.writes()).toEqual([]);
    expect(statusOf(held, "ReversePrivateEndpoint/orders-msk")).toMatchObject({ status: "Pending" });
    expect(statusOf(held, "ReversePrivateEndpoint/orders-msk")?.message).toContain("problem");
    expect(statusOf(held, "DataPipe/orders")).toMatchObject({ status: "Invalid" });
    expect(statusOf(held, "DataPipe/orders")?.message).toContain(
      "no ReversePrivateEndpoint named orders-msk",
    );
    expect(cli.sim.state.endpoints).toHaveLength(1);

    await cli.remove("pipe.yaml");
    const released = await cli.apply();

    expect(released.code, released.stdout).toBe(0);
    expect(cli.writes()).toEqual([`DELETE ${ROUTE.pipe}`, `DELETE ${ROUTE.endpoint}`]);
  });

  it("a manifest that names the object by its id: not deleted while it does", async () => {
    await cli.write("endpoint.yaml", createdEndpoint("orders-msk"));
    expect((await cli.apply()).code).toBe(0);
    const endpointId = String(cli.sim.state.endpoints[0]?.id);
    await cli.write("pipe.yaml", createdPipe("orders", { endpointIds: [endpointId] }));
    expect((await cli.apply()).code).toBe(0);
    await cli.remove("endpoint.yaml");
    cli.sim.clearRequests();

    const held = await cli.apply();

    expect(cli.writes()).toEqual([]);
    expect(statusOf(held, "ReversePrivateEndpoint/orders-msk")).toMatchObject({ status: "Pending" });
    expect(statusOf(held, "ReversePrivateEndpoint/orders-msk")?.message).toContain(
      "DataPipe/orders still names it",
    );
    expect(cli.sim.state.endpoints).toHaveLength(1);
  });

  it("another manifest that adopted the same object by its id: never deleted, the old record orphaned", async () => {
    await cli.write("old.yaml", createdKey("old"));
    expect((await cli.apply()).code).toBe(0);
    const keyId = String(cli.sim.state.keys.find((k) => k.name === "old")?.id);
    await cli.write("new.yaml", adoptedKey("old", keyId).replace("name: old\n", "name: new\n"));
    expect((await cli.apply()).code).toBe(0);
    await cli.remove("old.yaml");
    cli.sim.clearRequests();

    const result = await cli.apply();

    expect(result.code, result.stdout).toBe(0);
    expect(cli.writes()).toEqual([]);
    expect(cli.sim.state.keys.some((k) => k.id === keyId)).toBe(true);
    expect(statusOf(result, "ApiKey/old")).toMatchObject({ status: "Unmanaged" });
    expect(statusOf(result, "ApiKey/old")?.message).toContain("ApiKey/new addresses the same object");
  });

  it("any problem in the revision holds every delete, a file that does not parse as much as an invalid field", async () => {
    await cli.write("key.yaml", createdKey("deployer"));
    await cli.write("board.yaml", createdBoard("board"));
    await cli.write("adopted.yaml", adoptedKey("adopted"));
    expect((await cli.apply()).code).toBe(0);
    await cli.remove("key.yaml", "board.yaml");
    await cli.write("adopted.yaml", adoptedKey("adopted", undefined, { extra: "  rolez: [admin]\n" }));
    cli.sim.clearRequests();

    const invalid = await cli.apply();

    expect(invalid.code).toBe(1);
    expect(cli.writes()).toEqual([]);
    expect(statusOf(invalid, "ApiKey/deployer")).toMatchObject({ status: "Pending" });
    expect(statusOf(invalid, "ApiKey/deployer")?.message).toContain("problem");

    await cli.write("adopted.yaml", adoptedKey("adopted"));
    await cli.write("broken.yaml", "kind: [unclosed\n");
    const unparsed = await cli.apply();

    expect(unparsed.code).toBe(1);
    expect(cli.writes()).toEqual([]);
    expect(statusOf(unparsed, "Dashboard/board")).toMatchObject({ status: "Pending" });

    await cli.remove("broken.yaml");
    const whole = await cli.apply();

    expect(whole.code, whole.stdout).toBe(0);
    expect(cli.writes().sort()).toEqual([`DELETE ${ROUTE.dashboard}`, `DELETE ${ROUTE.key}`]);
  });
});
