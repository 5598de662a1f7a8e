import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { platformEnv } from "./helpers/platform-env.js";

/** `driftless plan` and `driftless apply` as a CI job runs them: `node dist/cli.js`, exit codes, output. */

const CLI = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
const CANARY = "cli-canary-5e6f7a8b";

type Run = { code: number | null; stdout: string; stderr: string };

function run(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => {
      stdout += c;
    });
    child.stderr.on("data", (c) => {
      stderr += c;
    });
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const key = (name: string) => `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ci
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ${name}
`;

const pipe = `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: kinesis
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.kinesisPipeId}
  name: clicks
  source:
    kinesis:
      accessKey:
        accessKeyId: {fromEnv: CLICKS_KEY_ID}
        secretKey: {fromFile: clicks-secret}
`;

describe("driftless plan / apply (built CLI)", () => {
  let sim: Simulator;
  let root: string;
  let env: Record<string, string>;

  beforeEach(async () => {
    sim = await startSimulator({ endpointReadyAfterMs: 0 });
    root = await mkdtemp(join(tmpdir(), "driftless-cli-"));
    await mkdir(join(root, "manifests"));
    await mkdir(join(root, "secrets"));
    await writeFile(join(root, "secrets", "clicks-secret"), CANARY);
    env = {
      DRIFTLESS_MANIFESTS: join(root, "manifests"),
      DRIFTLESS_STATE_DIR: join(root, "state"),
      DRIFTLESS_SECRETS_DIR: join(root, "secrets"),
      ...platformEnv(sim),
      DRIFTLESS_LOG_LEVEL: "debug",
      CLICKS_KEY_ID: `${CANARY}-id`,
    };
  });
  afterEach(async () => {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  });

  it("plan exits 2 with changes pending, apply exits 0, then plan exits 0; no secret in any output or state", async () => {
    await writeFile(join(root, "manifests", "key.yaml"), key("renamed"));
    await writeFile(join(root, "manifests", "pipe.yaml"), pipe);

    const planned = await run(["plan"], env);
    const writesAfterPlan = sim.requests.length;
    const applied = await run(["apply"], env);
    const again = await run(["plan", "--output", "json"], env);
    const reapplied = await run(["apply", "--output", "json"], env);

    expect(planned.code).toBe(2);
    expect(planned.stdout).toContain('name: "renamed"');
    expect(planned.stdout).toContain("source.kinesis.accessKey.secretKey: (changed)");
    expect(writesAfterPlan).toBe(0);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/Synced\s+ApiKey\/ci/);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).summary).toMatchObject({ toSend: 0, inSync: 2 });
    expect(reapplied.code).toBe(0);
    expect(JSON.parse(reapplied.stdout)).toMatchObject({ ok: true, sent: [] });
    expect(sim.requests.map((r) => r.status)).toEqual([200, 200]);
    const stateFiles = await readdir(join(root, "state"));
    const stateText = (
      await Promise.all(stateFiles.map((f) => readFile(join(root, "state", f), "utf8")))
    ).join("");
    const everything =
      [planned, applied, again, reapplied].map((r) => r.stdout + r.stderr).join("") + stateText;
    expect(everything).not.toContain(CANARY);
    expect(JSON.stringify(sim.requests.map((r) => r.body))).toContain(CANARY);
  });

  it("plan and apply exit 1 on an invalid manifest", async () => {
    await writeFile(join(root, "manifests", "key.yaml"), `${key("x")}  roles: [root]\n`);

    const planned = await run(["plan"], env);
    const applied = await run(["apply"], env);

    expect(planned.code).toBe(1);
    expect(planned.stdout).toContain("key.yaml");
    expect(applied.code).toBe(1);
    expect(applied.stdout).toMatch(/Invalid\s+ApiKey\/ci/);
  });

  it("apply exits 1 when a resource fails, and plan exits 1 on a refused change", async () => {
    await writeFile(join(root, "manifests", "key.yaml"), key("renamed"));
    sim.inject({ api: "management", kind: "status", status: 403, count: 1 });

    const applied = await run(["apply"], env);
    await writeFile(
      join(root, "manifests", "own.yaml"),
      key("driftless")
        .replace("name: ci", "name: own")
        .replace(ids.ciDeployerKeyId, ids.managementKeyId)
        .concat("  roles: [developer]\n"),
    );
    const planned = await run(["plan"], env);

    expect(applied.code).toBe(1);
    expect(applied.stdout).toMatch(/Failed\s+ApiKey\/ci/);
    // The refused request was sent: it counts.
    expect(applied.stdout).toMatch(
      /^Apply: 1 request\(s\) sent \(1 answered with an error\); 0 Synced, 0 Pending, 1 Failed/m,
    );
    expect(planned.code).toBe(1);
    expect(planned.stdout).toContain("drops its admin role");
  });

  it("apply exits 1 while a resource is suspended, and says so in its summary: nothing was sent for it", async () => {
    const suspended = key("renamed").replace(
      "  name: ci\n",
      '  name: ci\n  annotations:\n    driftless/suspend: "true"\n',
    );
    await writeFile(join(root, "manifests", "key.yaml"), suspended);

    const applied = await run(["apply"], env);
    const json = await run(["apply", "-o", "json"], env);

    expect(applied.code).toBe(1);
    expect(applied.stdout).toMatch(/^Suspended ApiKey\/ci {2}suspended by its annotation/m);
    expect(applied.stdout).toMatch(
      /^Apply: 0 request\(s\) sent; 0 Synced, 0 Pending, 0 Failed, 0 Unknown, 0 Invalid, 1 Suspended; 0 manifest problem\(s\); not in sync: 1 suspended \(nothing is sent for it until driftless resume, or until its driftless\/suspend annotation is removed\)\.$/m,
    );
    expect(JSON.parse(json.stdout)).toMatchObject({ exitCode: 1 });
    expect(json.code).toBe(1);
    expect(sim.requests).toEqual([]);
  });

  it("says on a 404 what the missing id means and what to do, by kind", async () => {
    const unknownId = "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e";
    await writeFile(join(root, "manifests", "key.yaml"), key("ci").replace(ids.ciDeployerKeyId, unknownId));
    await writeFile(
      join(root, "manifests", "org.yaml"),
      `apiVersion: driftless/v1\nkind: Organization\nmetadata:\n  name: other\nspec:\n  organizationId: ${unknownId}\n  name: Other\n`,
    );
    await writeFile(
      join(root, "manifests", "board.yaml"),
      "apiVersion: driftless/v1\nkind: Dashboard\nmetadata:\n  name: gone\nspec:\n  dashboardId: 65f1a2b3c4d5e6f708192fff\n  name: Gone\n  tiles: []\n",
    );

    const applied = await run(["apply"], env);

    expect(applied.code).toBe(1);
    const line = (resource: string) =>
      applied.stdout.split("\n").find((l) => l.includes(` ${resource} `)) ?? "";
    expect(line("ApiKey/ci")).toMatch(
      /answered 404: .*; the organizationId or keyId names no object: fix the id, or remove keyId from the manifest to let driftless create the key$/,
    );
    expect(line("Organization/other")).toMatch(
      /answered 404: .*; the organizationId names no organization this key can reach: fix the id$/,
    );
    expect(line("Dashboard/gone")).toMatch(
      /answered 404\b.*; the dashboardId names no dashboard: fix the id, or remove dashboardId from the manifest to let driftless create the dashboard$/,
    );
  });
});
