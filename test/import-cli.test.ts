import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync, repo } from "./helpers/cli.js";
import { estateFixture, estateIds } from "./helpers/estate.js";
import { platformEnv } from "./helpers/platform-env.js";

/**
 * `driftless import` through the built CLI against the simulator's published contract, on an estate a
 * team has on its first day (keys, pipes of every source kind, one with credentials, dashboards stored
 * in config form, more alerts than one page): it writes a manifest per object no manifest addresses,
 * never a credential, never over a file; what it wrote validates, plans with reads on to nothing to send,
 * and applies with reads on without a write.
 */

const PIPE_PASSWORD = "pipe-password-canary-1f9";
const ALERTS = 1005;

let sim: Simulator;
let root: string;
let manifests: string;
let env: Record<string, string>;

beforeEach(async () => {
  sim = await startSimulator({
    contract: "full",
    rateLimit: { management: false, observability: false },
    fixture: estateFixture({ keys: 40, pipes: 30, dashboards: 20, alerts: ALERTS }),
  });
  root = await mkdtemp(join(tmpdir(), "driftless-import-"));
  manifests = join(root, "manifests");
  await mkdir(manifests);
  env = {
    ...platformEnv(sim),
    DRIFTLESS_MANIFESTS: manifests,
    DRIFTLESS_STATE_DIR: join(root, "state"),
  };
});
afterEach(async () => {
  await sim.close();
  await rm(root, { recursive: true, force: true });
});

const run = (...args: string[]) => driftlessAsync(args, env);
const scope = ["--organization", ids.organizationId, "--service", ids.serviceId];
const writes = () => sim.requests.filter((r) => r.method !== "GET").map((r) => `${r.method} ${r.path}`);

/** `driftless args` on a terminal of its own (util-linux `script` gives it one): what the terminal showed. */
function onTerminal(args: string[]): Promise<string> {
  const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;
  const command = [process.execPath, join(repo, "dist", "cli.js"), ...args].map(quote).join(" ");
  const child = spawn("script", ["-qec", command, "/dev/null"], {
    env: { PATH: process.env.PATH ?? "", ...env },
  });
  let shown = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    shown += chunk;
  });
  return new Promise((resolve) => child.once("close", () => resolve(shown)));
}

/** Every file under the manifests folder, by path relative to it. */
async function files(): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const entry of await readdir(manifests, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    found.set(relative(manifests, path), await readFile(path, "utf8"));
  }
  return found;
}

/** A pipe made with credentials, as a team's console would have made it. */
async function pipeWithCredentials(): Promise<void> {
  const answer = await fetch(
    `${sim.managementUrl}/v1/organizations/${ids.organizationId}/services/${ids.serviceId}/datapipes`,
    {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`${ids.managementKeyId}:${ids.managementKeySecret}`).toString("base64")}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        name: "accounts from postgres",
        source: {
          postgres: {
            host: "accounts-db.example.com",
            port: 5432,
            database: "accounts",
            credentials: { username: "replicator", password: PIPE_PASSWORD },
            tableMappings: [{ sourceSchemaName: "public", sourceTable: "accounts", targetTable: "accounts" }],
          },
        },
      }),
    },
  );
  expect(answer.status).toBe(200);
}

/** The key manifest a team already had: the key stays addressed by it, and is not imported again. */
const KEY = `apiVersion: driftless/v1
kind: ApiKey
metadata: { name: ci-deployer }
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ci-deployer
  roles: [developer]
  ipAccessList: [{ source: 10.0.0.0/8, description: office }]
`;

describe("driftless import", () => {
  it("writes the estate as manifests that validate, plan to nothing with reads on, and apply without a write", async () => {
    await pipeWithCredentials();
    await writeFile(join(manifests, "ci-deployer.yaml"), KEY);
    sim.clearRequests();

    const imported = await run("import", ...scope);

    expect(imported.code, imported.stderr).toBe(0);
    // Every list once (the alerts' two pages), each through the rate budget: no write.
    expect(writes()).toEqual([]);
    expect(sim.requests.filter((r) => r.route === "/api/v2/alerts").length).toBe(2);
    const written = await files();
    const byFolder = (folder: string) => [...written.keys()].filter((path) => path.startsWith(`${folder}/`));
    // The fixture's 2 keys and the estate's 40, but ci-deployer, which a manifest adopts already.
    expect(byFolder("api-keys")).toHaveLength(41);
    expect(byFolder("api-keys")).not.toContain("api-keys/ci-deployer.yaml");
    expect(byFolder("data-pipes")).toHaveLength(4 + 30 + 1);
    expect(byFolder("dashboards")).toHaveLength(1 + 20);
    expect(byFolder("alerts")).toHaveLength(1 + ALERTS);
    expect(imported.stdout).toContain(
      `Import: ${2 + 40 + 35 + 21 + 1 + ALERTS} object(s) listed, 1 already addressed`,
    );
    const everything = [...written.values()].join("\n");
    for (const secret of [PIPE_PASSWORD, ids.managementKeySecret, ids.observabilityToken])
      expect(everything).not.toContain(secret);

    // A dashboard stored in config form, written as a manifest writes it: keyed tiles with series.
    const board = parse(written.get("dashboards/service-0.yaml") ?? "");
    expect(board.spec).toMatchObject({
      dashboardId: estateIds.dashboard(0),
      name: "Service 0",
      tags: ["estate"],
    });
    expect(board.spec.tiles[0]).toEqual({
      key: "tile-0",
      id: estateIds.tile(0),
      name: "Tile 0",
      x: 0,
      y: 0,
      w: 12,
      h: 4,
      series: [{ type: "time", sourceId: ids.sourceIds[0], aggFn: "count", where: "", groupBy: [] }],
    });
    // An alert names its dashboard's manifest and tile key; the credentials a pipe may add are named.
    const alert = parse(written.get("alerts/alert-5.yaml") ?? "");
    expect(alert.spec).toMatchObject({
      alertId: estateIds.alert(5),
      dashboard: "service-2",
      tile: "tile-1",
      threshold: 5,
    });
    const accounts = written.get("data-pipes/accounts-from-postgres.yaml") ?? "";
    expect(accounts).toContain(
      "#   source.postgres.credentials: {username: NAME, password: {fromEnv: VARIABLE}}",
    );
    expect(parse(accounts).spec.source.postgres).not.toHaveProperty("credentials");

    const valid = await run("validate");
    expect(valid.code, valid.stdout).toBe(0);

    sim.clearRequests();
    const plan = await run("plan", "--reads", "on");
    expect(plan.code, plan.stdout).toBe(0);
    expect(plan.stdout).toContain("Plan: 0 to send");
    // Each first contact is found in its list: a request per list, not one per object.
    expect(sim.requests.length).toBeLessThan(20);

    sim.clearRequests();
    const applied = await run("apply", "--reads", "on");
    expect(applied.code, applied.stdout).toBe(0);
    expect(writes()).toEqual([]);
  }, 120_000);

  it("lists what it would write with --dry-run, writes nothing, and never writes over a file", async () => {
    await mkdir(join(manifests, "dashboards"));
    await writeFile(
      join(manifests, "dashboards", "service-0.yaml"),
      "# a file of the team's, not a manifest\n",
    );

    const dry = await run("import", ...scope, "--kind", "Dashboard", "--dry-run");
    const before = await files();
    const real = await run("import", ...scope, "--kind", "Dashboard");
    const after = await files();

    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("would write dashboards/service-0-2.yaml  Dashboard/service-0-2");
    expect([...before.keys()]).toEqual(["dashboards/service-0.yaml"]);
    expect(real.code, real.stderr).toBe(0);
    expect(after.get("dashboards/service-0.yaml")).toBe("# a file of the team's, not a manifest\n");
    expect(parse(after.get("dashboards/service-0-2.yaml") ?? "").spec.dashboardId).toBe(
      estateIds.dashboard(0),
    );
    expect([...after.keys()].filter((path) => !path.startsWith("dashboards/"))).toEqual([]);
  });

  it("counts the lists read on a terminal, and prints nothing beyond its report when stderr is not one", async () => {
    const args = ["import", ...scope, "--kind", "ApiKey", "--dry-run"];

    const piped = await run(...args);
    const terminal = await onTerminal(args);

    expect(piped.code).toBe(0);
    expect(piped.stderr).toBe("");
    expect(terminal).toContain("driftless import: 0 of 1 lists read, 0 objects");
    expect(terminal).toContain("driftless import: 1 of 1 lists read, 42 objects");
    expect(terminal).toContain("would write api-keys/key-0.yaml");
  });
});
