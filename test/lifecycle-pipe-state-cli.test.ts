import { describe, expect, it } from "vitest";
import { createdPipe, ROUTE, statusOf, useLifecycleCli } from "./helpers/lifecycle-cli.js";

/**
 * A data pipe's `spec.state` and `spec.scaling` through their published PATCHes, and the fields only a
 * create sets, through the built CLI against the simulator's published contract (whose pipes start only
 * from Stopped or Failed, as the contract's rules say).
 */

const cli = useLifecycleCli();
const READS = { DRIFTLESS_READS: "on" };

const pipe = (spec: string, topics?: string) =>
  createdPipe("orders", { spec, ...(topics ? { topics } : {}) });
const live = () => cli.sim.state.pipes.find((p) => p.name === "orders");
const commands = () => cli.sent("PATCH", ROUTE.pipeState).map((r) => r.body);

describe("spec.state", () => {
  it("sends stop, then start, when it changes, and nothing while it stays", async () => {
    await cli.write("pipe.yaml", pipe("  state: stopped\n"));

    const created = await cli.apply();

    expect(created.code, created.stdout).toBe(0);
    expect(cli.writes()).toEqual([`POST ${ROUTE.pipes}`, `PATCH ${ROUTE.pipeState}`]);
    expect(commands()).toEqual([{ command: "stop" }]);
    expect(live()?.state).toBe("Stopped");

    cli.sim.clearRequests();
    await cli.write("pipe.yaml", pipe("  state: running\n"));
    const started = await cli.apply();
    const again = await cli.apply();

    expect(started.code, started.stdout).toBe(0);
    expect(again.code).toBe(0);
    expect(cli.writes()).toEqual([`PATCH ${ROUTE.pipeState}`]);
    expect(commands()).toEqual([{ command: "start" }]);
    expect(live()?.state).toBe("Running");
  });

  it("with reads on, sends start when the live pipe was stopped outside git, and stop when it was started", async () => {
    await cli.write("pipe.yaml", pipe("  state: running\n"));
    expect((await cli.apply()).code).toBe(0);
    cli.sim.consoleEdit({ collection: "pipes", id: String(live()?.id) }, { state: "Stopped" });
    cli.sim.clearRequests();

    const unread = await cli.apply();

    expect(unread.code).toBe(0);
    expect(cli.writes()).toEqual([]);

    const read = await cli.apply([], READS);

    expect(read.code, read.stdout).toBe(0);
    expect(commands()).toEqual([{ command: "start" }]);
    expect(live()?.state).toBe("Running");

    await cli.write("pipe.yaml", pipe("  state: stopped\n"));
    expect((await cli.apply([], READS)).code).toBe(0);
    cli.sim.consoleEdit({ collection: "pipes", id: String(live()?.id) }, { state: "Running" });
    cli.sim.clearRequests();

    const stopped = await cli.apply([], READS);

    expect(stopped.code, stopped.stdout).toBe(0);
    expect(commands()).toEqual([{ command: "stop" }]);
  });

  it("starts only from a stopped or failed pipe: a stopping one waits, Pending, and a failed one is started", async () => {
    await cli.write("pipe.yaml", pipe("  state: running\n"));
    expect((await cli.apply()).code).toBe(0);
    const id = String(live()?.id);
    cli.sim.consoleEdit({ collection: "pipes", id }, { state: "Stopping" });
    cli.sim.clearRequests();

    const stopping = await cli.apply([], READS);

    expect(commands()).toEqual([]);
    expect(stopping.code).toBe(1);
    expect(statusOf(stopping, "DataPipe/orders")).toMatchObject({ status: "Pending", next: "retry" });
    expect(statusOf(stopping, "DataPipe/orders")?.message).toContain("Stopping");

    cli.sim.consoleEdit({ collection: "pipes", id }, { state: "Failed" });
    const failed = await cli.apply([], READS);

    expect(failed.code, failed.stdout).toBe(0);
    expect(commands()).toEqual([{ command: "start" }]);
    expect(cli.sent("PATCH", ROUTE.pipeState).map((r) => r.status)).toEqual([200]);
  });
});

describe("spec.scaling", () => {
  it("is sent with the create, then changes go through the scaling PATCH, and with reads on a change made outside git is put back", async () => {
    await cli.write("pipe.yaml", pipe("  scaling: { replicas: 2, replicaCpuMillicores: 500 }\n"));

    expect((await cli.apply()).code).toBe(0);
    expect(cli.sent("POST", ROUTE.pipes)[0]?.body).toMatchObject({
      scaling: { replicas: 2, replicaCpuMillicores: 500 },
    });

    cli.sim.clearRequests();
    await cli.write("pipe.yaml", pipe("  scaling: { replicas: 3, replicaCpuMillicores: 500 }\n"));
    const scaled = await cli.apply();

    expect(scaled.code, scaled.stdout).toBe(0);
    expect(cli.writes()).toEqual([`PATCH ${ROUTE.pipeScaling}`]);
    expect(cli.sent("PATCH", ROUTE.pipeScaling)[0]?.body).toEqual({ replicas: 3 });

    cli.sim.consoleEdit(
      { collection: "pipes", id: String(live()?.id) },
      { scaling: { replicas: 1, replicaCpuMillicores: 500 } },
    );
    cli.sim.clearRequests();
    const healed = await cli.apply([], READS);

    expect(healed.code, healed.stdout).toBe(0);
    expect(cli.sent("PATCH", ROUTE.pipeScaling).map((r) => r.body)).toEqual([{ replicas: 3 }]);
    expect(live()?.scaling).toMatchObject({ replicas: 3, replicaCpuMillicores: 500 });
  });
});

describe("a field only a create sets", () => {
  it("changed on a created pipe is refused with a clear message, and nothing is sent", async () => {
    await cli.write("pipe.yaml", pipe("", "orders-v1"));
    expect((await cli.apply()).code).toBe(0);
    await cli.write("pipe.yaml", pipe("", "orders-v2"));
    cli.sim.clearRequests();

    const result = await cli.apply();

    expect(result.code).toBe(1);
    expect(cli.writes()).toEqual([]);
    expect(statusOf(result, "DataPipe/orders")).toMatchObject({ status: "Failed", next: "change" });
    expect(statusOf(result, "DataPipe/orders")?.message).toContain(
      "source.kafka.topics changed, but only a create sets it: revert the change, or create a replacement under a new manifest name",
    );
  });
});
