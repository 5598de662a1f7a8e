import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { isDriftlessError } from "../src/errors.js";
import { defaultFixture, defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";

let sim: Simulator | undefined;
afterEach(() => sim?.close());

async function yamlFile(text: string) {
  const file = join(await mkdtemp(join(tmpdir(), "driftless-fixture-")), "fixture.yaml");
  await writeFile(file, text);
  return file;
}

describe("simulator fixtures", () => {
  it("starts each simulator from its own copy of the fixture", async () => {
    const first = await startSimulator();
    const second = await startSimulator();

    for (const organization of first.state.organizations) organization.name = "changed";

    expect(second.state.organizations[0]?.name).toBe("Acme Analytics");
    await Promise.all([first.close(), second.close()]);
  });

  it("holds everything examples/ names", () => {
    const fixture = defaultFixture();

    expect(fixture.pipes?.map((p) => p.id)).toEqual([
      ids.kafkaPipeId,
      ids.objectStoragePipeId,
      ids.kinesisPipeId,
      ids.postgresPipeId,
    ]);
    expect(fixture.keys?.map((k) => k.id)).toEqual([ids.managementKeyId, ids.ciDeployerKeyId]);
    expect(fixture.dashboards?.[0]?.tiles.map((t) => t.id)).toEqual(ids.tileIds);
    expect(fixture.alerts?.[0]).toMatchObject({ id: ids.alertId, tileId: ids.tileIds[0] });
    expect(fixture.organizations?.[0]?.privateEndpoints).toEqual([
      { id: "pe-console-1", description: "added in the console" },
    ]);
  });

  it("loads a YAML fixture with management keys and tokens", async () => {
    const file = await yamlFile(`
organizations:
  - {id: o1, name: One, createdAt: "2024-01-01T00:00:00Z"}
services:
  - {id: s1, organizationId: o1, name: main}
keys:
  - {id: k1, organizationId: o1, name: ops, roles: [admin], keySuffix: ab, createdAt: "2024-01-01T00:00:00Z", secret: s3}
observabilityTokens: [t1]
`);
    sim = await startSimulator({ fixture: file });

    const answer = await fetch(`${sim.managementUrl}/v1/organizations/o1`, {
      method: "PATCH",
      headers: {
        authorization: `Basic ${Buffer.from("k1:s3").toString("base64")}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ name: "Uno" }),
    });

    expect(sim.credentials).toEqual({
      managementKeyId: "k1",
      managementKeySecret: "s3",
      observabilityToken: "t1",
    });
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { result: unknown }).result).toMatchObject({
      id: "o1",
      name: "Uno",
      privateEndpoints: [],
    });
  });

  it.each([
    ["an unknown field", "organisations: []\n", /organisations/],
    [
      "a wrong type",
      "keys:\n  - {id: k, organizationId: o, name: n, roles: [], keySuffix: x, createdAt: t}\n",
      /keys\.0\.roles/,
    ],
    ["broken YAML", "keys: [\n", /not valid YAML/],
  ])("refuses a fixture with %s, naming the file", async (_name, text, problem) => {
    const file = await yamlFile(text);

    const error = await startSimulator({ fixture: file }).catch((e: unknown) => e);

    expect(isDriftlessError(error)).toBe(true);
    expect((error as Error).message).toMatch(problem);
    expect((error as Error).message).toContain(file);
  });

  it("adds backups over time when asked", async () => {
    vi.useFakeTimers({ toFake: ["setInterval"] });
    try {
      sim = await startSimulator({ backupEveryMs: 50 });
      const before = sim.state.backups.length;

      vi.advanceTimersByTime(100);

      expect(sim.state.backups).toHaveLength(before + 2 * sim.state.services.length);
      expect(Date.parse(sim.state.backups[0]?.finishedAt ?? "")).toBeGreaterThan(Date.now() - 1000);
    } finally {
      vi.useRealTimers();
    }
  });

  it("adds a backup of every service every 8 hours by default", async () => {
    vi.useFakeTimers({ toFake: ["setInterval"] });
    try {
      sim = await startSimulator();

      vi.advanceTimersByTime(8 * 3_600_000);

      expect(sim.state.backups).toHaveLength(4);
      expect(sim.state.backups[0]?.serviceId).toBe(ids.serviceId);
    } finally {
      vi.useRealTimers();
    }
  });
});
