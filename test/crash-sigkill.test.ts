import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import type { Fault } from "../src/simulator/faults.js";
import { seededRandom } from "../src/simulator/faults.js";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { createFileStore } from "../src/state/file-store.js";
import type { State } from "../src/state/store.js";
import { driftlessAsync, startDriftless } from "./helpers/cli.js";
import { mskEndpoint } from "./helpers/manifests.js";
import { platformEnv } from "./helpers/platform-env.js";
import { until } from "./helpers/wait.js";

/**
 * driftless apply and driftless run, killed with SIGKILL in the middle of a create, round after round:
 * each round adds an endpoint, and the kill lands at a moment the seed picks, either once the platform
 * has the POST and holds its answer, or once it has made the endpoint and its answer is lost. After
 * every kill the state must load (journal included) as a later driftless reads it, and hold the
 * create's intent; no endpoint is ever created twice, and a last clean apply leaves every endpoint
 * Synced or Unknown. The seed is printed on failure; set CRASH_SEED to replay one.
 */

const SEED = Number(process.env.CRASH_SEED ?? 2);
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 12);
const ROUTE = "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";

const description = (name: string) => `crash test ${name}`;
const endpoint = (name: string) => mskEndpoint(name, { description: description(name), cluster: name });
const key = (round: number) => `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ci
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ci deployer, round ${round}
`;

/**
 * Where in the create the kill lands: `sent`, the platform has the POST and holds it until the process
 * is killed (then makes the endpoint); `done`, the platform made the endpoint and its answer never leaves.
 */
type Moment = "sent" | "done";
const hold = (moment: Moment, killed: Promise<unknown>): Fault =>
  moment === "sent"
    ? { api: "management", method: "POST", route: ROUTE, kind: "latency", until: killed }
    : { api: "management", method: "POST", route: ROUTE, kind: "hang", applied: true };

let sim: Simulator | undefined;
let root: string | undefined;
afterEach(async () => {
  await sim?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** The state as a later driftless loads it: the project's file store, read-only, journal included. */
async function loadState(dir: string): Promise<State> {
  const store = createFileStore(dir, { readOnly: true });
  try {
    return await store.load();
  } finally {
    await store.close();
  }
}

it(`never creates twice nor tears the state when killed inside creates (seed ${SEED})`, async () => {
  const random = seededRandom(SEED);
  const simulator = await startSimulator({
    endpointReadyAfterMs: 0,
    rateLimit: { management: false, observability: false },
  });
  sim = simulator;
  root = await mkdtemp(join(tmpdir(), "driftless-crash-"));
  const manifests = join(root, "manifests");
  const stateDir = join(root, "state");
  await mkdir(manifests);
  const env = {
    DRIFTLESS_MANIFESTS: manifests,
    DRIFTLESS_STATE_DIR: stateDir,
    DRIFTLESS_SECRETS_DIR: root,
    ...platformEnv(simulator),
    DRIFTLESS_RECONCILE_SCHEDULE: "* * * * * *",
    DRIFTLESS_LISTEN: "127.0.0.1:0",
  };
  const rounds: string[] = [];
  const context = () => `seed ${SEED}, rounds ${rounds.join(" ")}`;
  const posted = (name: string) =>
    simulator.requests.find(
      (r) =>
        r.method === "POST" &&
        r.route === ROUTE &&
        (r.body as { description?: unknown } | undefined)?.description === description(name),
    );
  const made = (name: string) => simulator.state.endpoints.find((e) => e.description === description(name));

  for (let round = 1; round <= ROUNDS; round++) {
    const name = `orders-${round}`;
    await writeFile(join(manifests, `${name}.yaml`), endpoint(name));
    await writeFile(join(manifests, "key.yaml"), key(round));
    const command = random() < 0.5 ? "apply" : "run";
    const moment: Moment = random() < 0.5 ? "sent" : "done";
    rounds.push(`${command}/${moment}`);
    const running = startDriftless([command], env);
    simulator.inject(hold(moment, running.exited));
    await until(() => {
      if (running.child.exitCode !== null) {
        throw new Error(
          `driftless ${command} exited before creating ${name}: ${running.stderr()}; ${context()}`,
        );
      }
      return moment === "sent" ? posted(name) : made(name) && posted(name);
    });
    running.child.kill("SIGKILL");
    await running.exited;
    // Held until the kill, the platform makes the endpoint, answering a process that is gone.
    await until(() => made(name));

    const state = await loadState(stateDir).catch((error: Error) => {
      throw new Error(
        `round ${round}: the state does not load after the kill: ${error.message}; ${context()}`,
      );
    });
    const record = state.resources[`ReversePrivateEndpoint/${name}`];
    expect(
      record?.intent,
      `round ${round}: the kill landed outside the create of ${name}; ${context()}`,
    ).toEqual(expect.objectContaining({ action: "create" }));
    expect(record?.serverId, `round ${round}: ${name}'s answer was recorded; ${context()}`).toBeUndefined();
  }
  const final = await driftlessAsync(["apply", "--output", "json"], env);

  for (let round = 1; round <= ROUNDS; round++) {
    const name = `orders-${round}`;
    const created = simulator.state.endpoints.filter((e) => e.description === description(name));
    expect(created.length, `${name} created ${created.length} times; ${context()}`).toBe(1);
  }
  expect(final.stdout, `exit ${final.code}: ${final.stderr}; ${context()}`).toMatch(/^\{/);
  const report = JSON.parse(final.stdout) as { statuses: { kind: string; name: string; status: string }[] };
  const endpoints = report.statuses.filter((s) => s.kind === "ReversePrivateEndpoint");
  expect(endpoints).toHaveLength(ROUNDS);
  for (const status of endpoints) {
    expect(["Synced", "Unknown"], `${status.name}: ${status.status}; ${context()}`).toContain(status.status);
  }
}, 300_000);
