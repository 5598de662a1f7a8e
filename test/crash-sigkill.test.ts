import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, expect, it } from "vitest";
import { seededRandom } from "../src/simulator/faults.js";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync, repo } from "./helpers/cli.js";
import { mskEndpoint } from "./helpers/manifests.js";
import { platformEnv } from "./helpers/platform-env.js";

/**
 * driftless apply and driftless run, killed with SIGKILL at random moments while they create endpoints
 * and write: never a duplicate create, never an unreadable state, and every endpoint ends Synced or
 * Unknown. The seed is printed on failure; set CRASH_SEED to replay one.
 */

const SEED = Number(process.env.CRASH_SEED ?? 2);
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 16);
const ENDPOINTS = ["orders-a", "orders-b", "orders-c"];
const ROUTE = "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";

const endpoint = (name: string) => mskEndpoint(name, { description: `crash test ${name}`, cluster: name });
const key = (round: number) => `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ci
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ci deployer, round ${round}
`;

let sim: Simulator | undefined;
let root: string | undefined;
afterEach(async () => {
  await sim?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** Starts `driftless <command>` and kills it with SIGKILL after `afterMs`; resolves once it is gone. */
async function killAfter(command: "apply" | "run", env: Record<string, string>, afterMs: number) {
  const child = spawn(process.execPath, [join(repo, "dist", "cli.js"), command], {
    env: { PATH: process.env.PATH ?? "", DRIFTLESS_LISTEN: "127.0.0.1:0", ...env },
    stdio: "ignore",
  });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  await Promise.race([sleep(afterMs), exited]);
  child.kill("SIGKILL");
  await exited;
}

it(`never creates twice nor tears the state when killed at random (seed ${SEED})`, async () => {
  const random = seededRandom(SEED);
  sim = await startSimulator({
    endpointReadyAfterMs: 0,
    rateLimit: { management: false, observability: false },
  });
  // Creates take a while, so that kills land before, during and after them.
  sim.inject({ api: "management", method: "POST", route: ROUTE, kind: "latency", ms: 150, count: Infinity });
  root = await mkdtemp(join(tmpdir(), "driftless-crash-"));
  const manifests = join(root, "manifests");
  await mkdir(manifests);
  for (const name of ENDPOINTS) await writeFile(join(manifests, `${name}.yaml`), endpoint(name));
  const env = {
    DRIFTLESS_MANIFESTS: manifests,
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_SECRETS_DIR: root,
    ...platformEnv(sim),
    DRIFTLESS_RECONCILE_SCHEDULE: "* * * * * *",
  };
  const rounds: string[] = [];

  for (let round = 1; round <= ROUNDS; round++) {
    await writeFile(join(manifests, "key.yaml"), key(round));
    const command = random() < 0.5 ? "apply" : "run";
    const afterMs = Math.round(50 + random() * 900);
    rounds.push(`${command}@${afterMs}ms`);
    await killAfter(command, env, afterMs);

    const state = await readFile(join(root, "state", "state.json"), "utf8").catch(() => "{}");
    expect(() => JSON.parse(state), `seed ${SEED}, rounds ${rounds.join(" ")}`).not.toThrow();
  }
  const final = await driftlessAsync(["apply", "--output", "json"], env);

  const context = `seed ${SEED}, rounds ${rounds.join(" ")}`;
  for (const name of ENDPOINTS) {
    const created = sim.state.endpoints.filter((e) => e.description === `crash test ${name}`);
    expect(created.length, `${name} created ${created.length} times; ${context}`).toBeLessThanOrEqual(1);
  }
  expect(final.stdout, `exit ${final.code}: ${final.stderr}; ${context}`).toMatch(/^\{/);
  const report = JSON.parse(final.stdout) as { statuses: { kind: string; name: string; status: string }[] };
  for (const status of report.statuses.filter((s) => s.kind === "ReversePrivateEndpoint")) {
    expect(["Synced", "Unknown"], `${status.name}: ${status.status}; ${context}`).toContain(status.status);
  }
}, 120_000);
