import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";
import { platformEnv } from "./helpers/platform-env.js";

/**
 * Create and delete from git, through the built CLI against the simulator's published contract: a
 * manifest without an id is created once (its id saved and shown), an API key's id and secret are made
 * by driftless and written to its secretTarget before the create (and the secret works), and a manifest
 * removed from git deletes the object it created, dependents first.
 */

let sim: Simulator;
let root: string;
let env: Record<string, string>;

const off = { management: false, observability: false } as const;

beforeEach(async () => {
  sim = await startSimulator({ contract: "full", rateLimit: off, endpointReadyAfterMs: 0 });
  root = await mkdtemp(join(tmpdir(), "driftless-lifecycle-"));
  await mkdir(join(root, "manifests"));
  env = {
    ...platformEnv(sim),
    DRIFTLESS_MANIFESTS: join(root, "manifests"),
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_KEY_SECRETS_DIR: join(root, "key-secrets"),
  };
});
afterEach(async () => {
  await sim.close();
  await rm(root, { recursive: true, force: true });
});

const write = (file: string, yaml: string) => writeFile(join(root, "manifests", file), yaml);
const apply = (...args: string[]) => driftlessAsync(["apply", "-o", "json", ...args], env);
const writes = () => sim.requests.filter((r) => r.method !== "GET").map((r) => `${r.method} ${r.route}`);

const KEY = `apiVersion: driftless/v1
kind: ApiKey
metadata: { name: deployer }
spec:
  organizationId: ${ids.organizationId}
  name: deployer
  roles: [developer]
  secretTarget: { file: deployer-key }
`;

const PIPE = `apiVersion: driftless/v1
kind: DataPipe
metadata: { name: payments }
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  name: payments-from-kafka
  source:
    kafka:
      type: confluent
      format: JSONEachRow
      brokers: broker-1.example.com:9092
      topics: payments
      authentication: PLAIN
      credentials: { username: pipe, password: { fromEnv: KAFKA_PASSWORD } }
  destination:
    database: analytics
    table: payments
    managedTable: true
    columns: [{ name: id, type: String }]
  fieldMappings: [{ sourceField: payment_id, destinationField: id }]
`;

const BOARD = `apiVersion: driftless/v1
kind: Dashboard
metadata: { name: payments }
spec:
  name: Payments
  tiles:
    - key: volume
      name: Volume
      x: 0
      y: 0
      w: 6
      h: 4
      series:
        - { type: time, aggFn: count, where: "service:payments", whereLanguage: lucene, groupBy: [], sourceId: ${ids.sourceIds[0]} }
`;

describe("create from git", () => {
  it("creates each object once, saves and shows its id, and sends nothing more on the next apply", async () => {
    await write("key.yaml", KEY);
    await write("pipe.yaml", PIPE);
    await write("board.yaml", BOARD);
    env.KAFKA_PASSWORD = "kafka-canary-password";

    const first = await apply();

    expect(
      first.code,
      JSON.stringify(
        sim.requests.filter((r) => r.method !== "GET").map((r) => [r.method, r.path, r.status, r.body]),
        null,
        1,
      ),
    ).toBe(0);
    expect(writes().sort()).toEqual([
      "POST /api/v2/dashboards",
      "POST /v1/organizations/{organizationId}/keys",
      "POST /v1/organizations/{organizationId}/services/{serviceId}/datapipes",
    ]);
    const state = JSON.parse(await readFile(join(root, "state", "state.json"), "utf8").catch(() => "{}"));
    const loaded = await driftlessAsync(["status", "--help"], env);
    expect(loaded.code).toBe(0);
    const key = sim.state.keys.find((k) => k.name === "deployer");
    const pipe = sim.state.pipes.find((p) => p.name === "payments-from-kafka");
    const board = sim.state.dashboards.find((d) => d.name === "Payments");
    expect([key?.id, pipe?.id, board?.id].every(Boolean)).toBe(true);
    const shown = JSON.parse(first.stdout).statuses;
    expect(shown.map((s: { status: string }) => s.status)).toEqual(["Synced", "Synced", "Synced"]);
    expect(state).toBeDefined();

    sim.clearRequests();
    const second = await apply();

    expect(second.code).toBe(0);
    expect(writes()).toEqual([]);
  });

  it("writes a created key's id and secret to its file before the create, 0600, and the secret works", async () => {
    await write("key.yaml", KEY);

    const result = await apply();

    expect(result.code, result.stderr).toBe(0);
    const file = join(root, "key-secrets", "deployer-key");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const pair = JSON.parse(await readFile(file, "utf8"));
    const post = sim.requests.find((r) => r.method === "POST");
    expect(JSON.stringify(post?.body)).not.toContain(pair.keySecret);
    const authorization = `Basic ${Buffer.from(`${pair.keyId}:${pair.keySecret}`).toString("base64")}`;
    const answer = await fetch(`${sim.managementUrl}/v1/organizations/${ids.organizationId}/keys`, {
      headers: { authorization },
    });
    expect(answer.status).toBe(200);
    expect(
      `${result.stdout}${result.stderr}${await readFile(join(root, "state", "state.json"), "utf8")}`,
    ).not.toContain(pair.keySecret);
  });
});

describe("delete from git", () => {
  it("deletes what it created once the manifests leave git, and drops their records", async () => {
    await write("key.yaml", KEY);
    await write("board.yaml", BOARD);
    expect((await apply()).code).toBe(0);
    await rm(join(root, "manifests", "key.yaml"));
    await rm(join(root, "manifests", "board.yaml"));
    sim.clearRequests();

    const result = await apply();

    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(writes().sort()).toEqual([
      "DELETE /api/v2/dashboards/{id}",
      "DELETE /v1/organizations/{organizationId}/keys/{keyId}",
    ]);
    expect(sim.state.keys.find((k) => k.name === "deployer")).toBeUndefined();
    // Neither names the other, so their order is not asserted.
    expect(
      JSON.parse(result.stdout)
        .statuses.map((s: { kind: string; status: string }) => `${s.kind} ${s.status}`)
        .sort(),
    ).toEqual(["ApiKey Deleted", "Dashboard Deleted"]);
  });
});
