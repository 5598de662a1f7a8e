import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultFixture, defaultIds as ids, startSimulator } from "../src/simulator/index.js";

const authorization = `Basic ${Buffer.from(`${ids.managementKeyId}:${ids.managementKeySecret}`).toString("base64")}`;
const endpoints = `/v1/organizations/${ids.organizationId}/services/${ids.serviceId}/datapipesReversePrivateEndpoints`;

describe("simulator state file", () => {
  it("keeps what one run created for the next run, and no credential in the file", async () => {
    const stateFile = join(await mkdtemp(join(tmpdir(), "driftless-sim-state-")), "nested", "platform.json");
    const first = await startSimulator({ stateFile, endpointReadyAfterMs: 0 });
    const created = await fetch(`${first.managementUrl}${endpoints}`, {
      method: "POST",
      headers: { authorization, "content-type": "application/json" },
      body: JSON.stringify({
        description: "kept",
        type: "VPC_ENDPOINT_SERVICE",
        vpcEndpointServiceName: "svc",
      }),
    });
    const endpointId = ((await created.json()) as { result: { id: string } }).result.id;
    await first.close();

    const second = await startSimulator({ stateFile });
    const patched = await fetch(
      `${second.managementUrl}/v1/organizations/${ids.organizationId}/services/${ids.serviceId}/datapipes/${ids.kafkaPipeId}`,
      {
        method: "PATCH",
        headers: { authorization, "content-type": "application/json" },
        body: JSON.stringify({ source: { kafka: { reversePrivateEndpointIds: [endpointId] } } }),
      },
    );
    await second.close();
    const saved = await readFile(stateFile, "utf8");

    expect(patched.status).toBe(200);
    expect(second.state.endpoints.map((e) => e.id)).toEqual([endpointId]);
    expect(saved).toContain(endpointId);
    expect(saved).not.toContain("sim-management-secret");
    expect(saved).not.toContain("sim-observability-token");
  });

  it("does not overwrite what another run saved when it only read (plan beside apply)", async () => {
    const stateFile = join(await mkdtemp(join(tmpdir(), "driftless-sim-state-")), "platform.json");
    const apply = await startSimulator({ stateFile, endpointReadyAfterMs: 0 });
    const plan = await startSimulator({ stateFile });
    const created = await fetch(`${apply.managementUrl}${endpoints}`, {
      method: "POST",
      headers: { authorization, "content-type": "application/json" },
      body: JSON.stringify({
        description: "kept",
        type: "VPC_ENDPOINT_SERVICE",
        vpcEndpointServiceName: "svc",
      }),
    });
    const endpointId = ((await created.json()) as { result: { id: string } }).result.id;
    await apply.close();

    await fetch(`${plan.managementUrl}${endpoints.replace("datapipesReversePrivateEndpoints", "backups")}`, {
      headers: { authorization },
    });
    await plan.close();
    const next = await startSimulator({ stateFile });
    const endpointIds = next.state.endpoints.map((e) => e.id);
    await next.close();

    expect(endpointIds).toEqual([endpointId]);
  });

  it("starts from the fixture when the file does not exist yet", async () => {
    const stateFile = join(await mkdtemp(join(tmpdir(), "driftless-sim-state-")), "platform.json");

    const sim = await startSimulator({ stateFile });
    const pipes = sim.state.pipes.length;
    await sim.close();

    expect(pipes).toBe(4);
  });

  it("gives each service the backup its schedule made while the saved platform was not running", async () => {
    const stateFile = join(await mkdtemp(join(tmpdir(), "driftless-sim-state-")), "platform.json");
    const threeDaysAgo = new Date(Date.now() - 72 * 3_600_000).toISOString();
    const fixture = defaultFixture();
    const backups = fixture.backups?.map((backup) => ({ ...backup, finishedAt: threeDaysAgo }));
    await writeFile(stateFile, JSON.stringify({ ...fixture, backups }));

    const second = await startSimulator({ stateFile });
    const answer = await fetch(
      `${second.managementUrl}/v1/organizations/${ids.organizationId}/services/${ids.serviceId}/backups`,
      { headers: { authorization } },
    );
    const newest = ((await answer.json()) as { result: { finishedAt: string }[] }).result[0];
    await second.close();

    expect(Date.now() - Date.parse(newest?.finishedAt ?? "")).toBeLessThanOrEqual(8 * 3_600_000);
  });

  it("refuses a saved state it cannot read, saying to delete it rather than blaming a fixture", async () => {
    const stateFile = join(await mkdtemp(join(tmpdir(), "driftless-sim-state-")), "platform.json");
    await writeFile(stateFile, JSON.stringify({ organisations: [] }));

    const error = await startSimulator({ stateFile }).catch((e: unknown) => e);

    expect((error as Error).message).toMatch(/saved state .*platform\.json.*organisations.*delete it/);
    expect((error as Error).message).not.toMatch(/fixture/);
  });
});
