import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { parseFixture } from "../src/simulator/fixture.js";
import { defaultFixture, startSimulator } from "../src/simulator/index.js";
import { driftless } from "./helpers/cli.js";

// Needs the built CLI: `npm run build` (npm test builds first).
const cli = join(import.meta.dirname, "..", "dist", "cli.js");
let child: ChildProcess | undefined;
afterEach(() => {
  if (child?.exitCode === null) child.kill("SIGKILL");
});

/** Starts `driftless simulator` and resolves with the KEY=value lines it prints once it listens. */
async function startCli(...args: string[]) {
  const proc = spawn(
    process.execPath,
    [cli, "simulator", "--management-port", "0", "--observability-port", "0", ...args],
    {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, DRIFTLESS_LOG_LEVEL: "warn" },
    },
  );
  child = proc;
  let stdout = "";
  let stderr = "";
  proc.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  await new Promise<void>((resolve, reject) => {
    proc.stdout?.on("data", (chunk) => {
      stdout += chunk;
      if (stdout.includes("DRIFTLESS_OBSERVABILITY_TOKEN=")) resolve();
    });
    proc.once("exit", (code) => reject(new Error(`simulator exited ${code}: ${stderr}`)));
  });
  const settings = Object.fromEntries(
    stdout
      .split("\n")
      .filter((line) => line.startsWith("DRIFTLESS_"))
      .map((line) => line.split("=", 2) as [string, string]),
  );
  return { proc, settings, stdout };
}

describe("driftless simulator", () => {
  it("prints the URLs and credentials it accepts, serves both APIs, and exits 0 on SIGTERM", async () => {
    const { proc, settings, stdout } = await startCli();
    const basic = Buffer.from(
      `${settings.DRIFTLESS_MANAGEMENT_KEY_ID}:${settings.DRIFTLESS_MANAGEMENT_KEY_SECRET}`,
    ).toString("base64");

    const backups = await fetch(
      `${settings.DRIFTLESS_MANAGEMENT_URL}/v1/organizations/9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f/services/2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7/backups`,
      { headers: { authorization: `Basic ${basic}` } },
    );
    const alert = await fetch(
      `${settings.DRIFTLESS_OBSERVABILITY_URL}/api/v2/alerts/65f1a2b3c4d5e6f708192a51`,
      {
        headers: { authorization: `Bearer ${settings.DRIFTLESS_OBSERVABILITY_TOKEN}` },
      },
    );
    proc.kill("SIGTERM");
    const [code] = await once(proc, "exit");

    expect(stdout).toMatch(/not the real/);
    expect(settings.DRIFTLESS_MANAGEMENT_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(settings.DRIFTLESS_MANAGEMENT_KEY_ID).toBe("4c8e2a61-7d5b-4e3f-9a1c-0b2d3e4f5a6b");
    expect(settings.DRIFTLESS_MANAGEMENT_KEY_SECRET).toBe("sim-management-secret");
    expect(settings.DRIFTLESS_OBSERVABILITY_TOKEN).toBe("sim-observability-token");
    expect(backups.status).toBe(200);
    expect(alert.status).toBe(200);
    expect(code).toBe(0);
  });

  it("serves the platform of a --fixture YAML file", async () => {
    const dir = await mkdtemp(join(tmpdir(), "driftless-sim-"));
    const fixture = join(dir, "fixture.yaml");
    await writeFile(
      fixture,
      [
        "observabilityTokens: [yaml-token]",
        "dashboards:",
        "  - id: d1",
        "    name: From YAML",
        "    tiles: []",
        "alerts: []",
      ].join("\n"),
    );
    // The minimal contract: the published one takes only 24-hex dashboard ids.
    const { proc, settings } = await startCli("--contract", "minimal", "--fixture", fixture);

    const answer = await fetch(`${settings.DRIFTLESS_OBSERVABILITY_URL}/api/v2/dashboards/d1`, {
      method: "PUT",
      headers: { authorization: "Bearer yaml-token", "content-type": "application/json" },
      body: JSON.stringify({ name: "Renamed", tiles: [] }),
    });
    proc.kill("SIGINT");
    const [code] = await once(proc, "exit");

    expect(settings.DRIFTLESS_OBSERVABILITY_TOKEN).toBe("yaml-token");
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { data: { name: string } }).data.name).toBe("Renamed");
    expect(code).toBe(0);
  });

  it("turns the rate limit off and keeps the platform in --state-file between runs", async () => {
    const dir = await mkdtemp(join(tmpdir(), "driftless-sim-"));
    const stateFile = join(dir, "platform.json");
    const renameOrganization = async (url: string, key: string, secret: string, name?: string) =>
      fetch(`${url}/v1/organizations/9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f`, {
        method: "PATCH",
        headers: {
          authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString("base64")}`,
          "content-type": "application/json",
        },
        body: JSON.stringify(name === undefined ? {} : { name }),
      });
    const first = await startCli("--rate-limit", "off", "--state-file", stateFile);
    const s = first.settings;
    const codes: number[] = [];
    for (let i = 0; i < 12; i++) {
      const answer = await renameOrganization(
        s.DRIFTLESS_MANAGEMENT_URL ?? "",
        s.DRIFTLESS_MANAGEMENT_KEY_ID ?? "",
        s.DRIFTLESS_MANAGEMENT_KEY_SECRET ?? "",
        `Renamed ${i}`,
      );
      codes.push(answer.status);
    }
    first.proc.kill("SIGTERM");
    await once(first.proc, "exit");

    const second = await startCli("--state-file", stateFile);
    const t = second.settings;
    const answer = await renameOrganization(
      t.DRIFTLESS_MANAGEMENT_URL ?? "",
      t.DRIFTLESS_MANAGEMENT_KEY_ID ?? "",
      t.DRIFTLESS_MANAGEMENT_KEY_SECRET ?? "",
    );
    second.proc.kill("SIGTERM");
    await once(second.proc, "exit");

    expect(codes).toEqual(Array(12).fill(200));
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { result: { name: string } }).result.name).toBe("Renamed 11");
    expect(await readFile(stateFile, "utf8")).not.toContain("sim-management-secret");
  });

  it("exits 1 naming a port that is in use, without a stack trace", async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    const { port } = busy.address() as { port: number };
    const proc = spawn(
      process.execPath,
      [cli, "simulator", "--management-port", "0", "--observability-port", String(port)],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    child = proc;
    let stderr = "";
    proc.stderr?.on("data", (chunk) => {
      stderr += chunk;
    });

    const [code] = await once(proc, "exit");
    busy.close();

    expect(code).toBe(1);
    expect(stderr).toContain(`observability API cannot listen on 127.0.0.1:${port}`);
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it("exits 1 naming the field of an invalid fixture", async () => {
    const dir = await mkdtemp(join(tmpdir(), "driftless-sim-"));
    const fixture = join(dir, "fixture.yaml");
    await writeFile(fixture, "keys:\n  - id: k\n    roles: [owner]\n");
    const proc = spawn(process.execPath, [cli, "simulator", "--management-port", "0", "--fixture", fixture], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = proc;
    let stderr = "";
    proc.stderr?.on("data", (chunk) => {
      stderr += chunk;
    });

    const [code] = await once(proc, "exit");

    expect(code).toBe(1);
    expect(stderr).toMatch(/invalid simulator fixture .*fixture\.yaml.*keys\.0\./);
  });
});

describe("driftless simulator --print-fixture", () => {
  it("prints the built-in fixture as YAML, which --fixture starts the same platform from", async () => {
    const printed = driftless(["simulator", "--print-fixture"]);
    const file = join(await mkdtemp(join(tmpdir(), "driftless-print-fixture-")), "platform.yaml");
    await writeFile(file, printed.stdout);
    const again = driftless(["simulator", "--print-fixture", "--fixture", file]);
    const sim = await startSimulator({ fixture: file });
    const state = structuredClone(sim.state);
    await sim.close();

    const expected = parseFixture(defaultFixture());
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toMatch(/^# /);
    expect(parse(printed.stdout)).toEqual({ ...expected, backups: expect.any(Array) });
    expect(state).toEqual({ ...expected, backups: state.backups });
    expect(state.backups.map((backup) => backup.id)).toEqual(expected.backups.map((backup) => backup.id));
    expect(again.code, again.stderr).toBe(0);
    expect(parse(again.stdout)).toEqual(parse(printed.stdout));
  });

  it("prints a fixture of --fixture with its defaults, and names the file and field of a bad one", async () => {
    const file = join(await mkdtemp(join(tmpdir(), "driftless-print-fixture-")), "platform.yaml");
    await writeFile(file, "services:\n  - {id: s1, organizationId: o1, name: main}\n");
    const bad = `${file}.bad`;
    await writeFile(bad, "services:\n  - {id: s1, organisationId: o1, name: main}\n");

    const printed = driftless(["simulator", "--print-fixture", "--fixture", file]);
    const refused = driftless(["simulator", "--print-fixture", "--fixture", bad]);

    expect(parse(printed.stdout)).toMatchObject({
      organizations: [],
      services: [{ id: "s1", organizationId: "o1", name: "main" }],
      observabilityTokens: [],
    });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(
      new RegExp(`invalid simulator fixture ${bad}: .*services\\.0: Unrecognized key: "organisationId"`),
    );
  });
});
