import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync as driftless } from "./helpers/cli.js";
import { platformEnv } from "./helpers/platform-env.js";

/**
 * Partial manifests through the built CLI: only the ids are required, a field left out is not managed,
 * and validate still refuses a typo. Needs dist/ built.
 */

const settingsOnly = (extra = "") => `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: clicks
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.kinesisPipeId}
  settings:
    engine_max_threads: 8${extra}
`;

const endpointsOnly = `apiVersion: driftless/v1
kind: Organization
metadata:
  name: acme
spec:
  organizationId: ${ids.organizationId}
  privateEndpoints:
    - id: vpce-0a1b2c3d4e5f60718
      description: from driftless
`;

describe("partial manifests (built CLI)", () => {
  let sim: Simulator;
  let root: string;
  let env: Record<string, string>;

  beforeEach(async () => {
    sim = await startSimulator({ rateLimit: { management: false, observability: false } });
    root = await mkdtemp(join(tmpdir(), "driftless-partial-"));
    await mkdir(join(root, "manifests"));
    env = {
      DRIFTLESS_MANIFESTS: join(root, "manifests"),
      DRIFTLESS_STATE_DIR: join(root, "state"),
      DRIFTLESS_SECRETS_DIR: join(root, "secrets"),
      ...platformEnv(sim),
    };
  });
  afterEach(async () => {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  });

  it("a pipe with only ids and settings validates, plans a PATCH of the settings alone and applies", async () => {
    await writeFile(join(root, "manifests", "pipe.yaml"), settingsOnly());
    const pipe = () => sim.state.pipes.find((p) => p.id === ids.kinesisPipeId);
    const before = structuredClone(pipe());

    const validated = await driftless(["validate"], env);
    const planned = await driftless(["plan", "--output", "json"], env);
    const applied = await driftless(["apply"], env);
    const again = await driftless(["plan"], env);

    expect(validated.code).toBe(0);
    expect(planned.code).toBe(2);
    const [resource] = JSON.parse(planned.stdout).resources;
    expect(resource.request).toMatchObject({
      method: "PATCH",
      body: { settings: { engine_max_threads: 8 } },
    });
    expect(Object.keys(resource.request.body)).toEqual(["settings"]);
    expect(applied.code).toBe(0);
    const patches = sim.requests.filter((r) => r.method === "PATCH");
    expect(patches.map((r) => r.body)).toEqual([{ settings: { engine_max_threads: 8 } }]);
    expect(pipe()).toMatchObject({ name: before?.name, source: before?.source });
    expect(pipe()?.settings).toMatchObject({ engine_max_threads: 8 });
    expect(again.code).toBe(0);
  });

  it("an organization with only its id and private endpoints learns the live list with an empty PATCH", async () => {
    await writeFile(join(root, "manifests", "org.yaml"), endpointsOnly);
    const name = sim.state.organizations[0]?.name;

    const applied = await driftless(["apply"], env);

    expect(applied.code, applied.stderr).toBe(0);
    const patches = sim.requests.filter((r) => r.method === "PATCH");
    expect(patches.map((r) => r.body)).toEqual([
      {},
      { privateEndpoints: { add: [{ id: "vpce-0a1b2c3d4e5f60718", description: "from driftless" }] } },
    ]);
    expect(sim.state.organizations[0]?.name).toBe(name);
  });

  it("validate still refuses a typo in a partial manifest, naming the field and line", async () => {
    await writeFile(join(root, "manifests", "pipe.yaml"), settingsOnly("\n  setings: {}"));

    const validated = await driftless(["validate"], env);

    expect(validated.code).toBe(1);
    expect(validated.stdout + validated.stderr).toMatch(/pipe\.yaml:\d+:\d+ .*spec\.setings: unknown field/);
  });
});
