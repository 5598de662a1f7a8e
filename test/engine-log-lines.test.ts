import { afterEach, describe, expect, it } from "vitest";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/** The engine's log lines say what a person needs: each field once, timings by name, problems whole. */

const organization = `${header("Organization", "acme")}  organizationId: ${ids.organizationId}
  name: Acme Analytics
  privateEndpoints:
    - id: vpce-0a1b2c3d4e5f60718
      description: production VPC
    - id: vpce-0f1e2d3c4b5a69788
      description: staging VPC
`;

type Line = Record<string, unknown>;

const parsed = (world: EngineWorld): Line[] =>
  world.logs.flatMap((text) => text.split("\n").filter(Boolean)).map((line) => JSON.parse(line) as Line);

describe("the engine's log lines", () => {
  let world: EngineWorld;
  afterEach(() => world.close());

  it("lists a field changed by two list entries once, with the request's time apart from its wait", async () => {
    world = await startEngineWorld();
    await world.write("org.yaml", organization);

    await world.apply();

    const applied = parsed(world).filter((line) => line.msg === "resource applied");
    // The name first, then the endpoints against the list the first answer showed.
    expect(applied.map((line) => line.fields)).toEqual([["name"], ["privateEndpoints"]]);
    expect(applied[0]).toMatchObject({
      budgetWaitMs: expect.any(Number),
      requestMs: expect.any(Number),
      totalMs: expect.any(Number),
    });
    expect(applied[0]).not.toHaveProperty("durationMs");
  });

  it("carries an invalid manifest's problems themselves: where, which field, what", async () => {
    world = await startEngineWorld();
    await world.write(
      "org.yaml",
      organization.replace("  name: Acme Analytics\n", "  nmae: Acme Analytics\n"),
    );

    await world.apply();

    const warned = parsed(world).filter((line) => line.msg === "manifests have problems");
    expect(warned).toHaveLength(1);
    expect(warned[0]?.problems).toEqual([
      expect.objectContaining({ at: expect.stringMatching(/^org\.yaml:\d+:\d+$/), field: "spec.nmae" }),
    ]);
    expect(JSON.stringify(warned[0])).toMatch(/unknown field|not allowed|unrecognized/i);
  });
});

describe("a resource's request id", () => {
  let world: EngineWorld;
  afterEach(() => world.close());

  it("is that of its last write while it stays Synced, in later passes too", async () => {
    world = await startEngineWorld();
    await world.write("org.yaml", organization);

    const first = await world.apply();
    const second = await world.apply();

    const written = world.writes().at(-1);
    const status = (result: typeof first) => result.statuses.find((s) => s.name === "acme");
    expect(second.statuses.length).toBeGreaterThan(0);
    expect(status(first)).toMatchObject({ status: "Synced", requestId: expect.any(String) });
    expect(status(second)).toMatchObject({ status: "Synced", requestId: status(first)?.requestId });
    expect(written?.method).toBe("PATCH");
  });
});

describe("a new manifest addressing an object another manifest manages", () => {
  let world: EngineWorld;
  afterEach(() => world.close());

  const key = (name: string) => `${header("ApiKey", name)}  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ci deployer
  roles: [developer]
`;

  it("is the one found Invalid, even when it is read first; the managed one stays Synced", async () => {
    world = await startEngineWorld();
    await world.write("z-existing.yaml", key("ci"));
    await world.apply();
    // Read before z-existing.yaml: without the state's word it would keep the object.
    await world.write("a-new.yaml", key("ci-copy"));

    const result = await world.apply();

    const byName = new Map(result.statuses.map((s) => [s.name, s]));
    expect(byName.get("ci")?.status).toBe("Synced");
    expect(byName.get("ci-copy")).toMatchObject({
      status: "Invalid",
      message: expect.stringContaining(
        "spec.keyId: addresses the same API object as ApiKey/ci (z-existing.yaml:1), which driftless already manages",
      ),
    });
  });
});
