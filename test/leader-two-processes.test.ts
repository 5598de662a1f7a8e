import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds, type Simulator, startSimulator } from "../src/simulator/index.js";
import { type DaemonProcess, startDaemonProcess } from "./helpers/daemon-process.js";
import { type FakeKubernetes, startFakeKubernetes } from "./helpers/fake-kubernetes.js";
import { platformEnv } from "./helpers/platform-env.js";
import { stateInSecrets } from "./helpers/state-secrets.js";

/**
 * Two `driftless run` processes with leader election and the Kubernetes state store, against the fake
 * Kubernetes API and one simulator: one leads and writes, the other follows; when the leader goes, the
 * other takes over with the state the first one saved. Needs the built CLI (`npm run build`).
 */

const NAMESPACE = "driftless-ha";
const ENDPOINT_ROUTE =
  "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";
// The CLI's defaults (controller-runtime's): a 15 s lease, attempts every 2 s.
const LEASE_MS = 15_000;
// Shorter durations in the same proportions, for a test that waits for a lease to run out.
const SHORT_LEASE_MS = 4000;
const SHORT_RETRY_MS = 500;
const SHORT_DURATIONS = {
  DRIFTLESS_LEADER_LEASE_DURATION: String(SHORT_LEASE_MS / 1000),
  DRIFTLESS_LEADER_RENEW_DEADLINE: "3",
  DRIFTLESS_LEADER_RETRY_PERIOD: String(SHORT_RETRY_MS / 1000),
};

const ENDPOINT = `apiVersion: driftless/v1
kind: ReversePrivateEndpoint
metadata:
  name: orders-msk
spec:
  organizationId: ${defaultIds.organizationId}
  serviceId: ${defaultIds.serviceId}
  description: MSK cluster of the orders team
  type: MSK_MULTI_VPC
  mskClusterArn: arn:aws:kafka:eu-west-1:111122223333:cluster/orders/5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d-2
  mskAuthentication: SASL_SCRAM
`;

let fake: FakeKubernetes;
let simulator: Simulator;
let root: string;
const daemons: DaemonProcess[] = [];
/** A replica's name, which its Kubernetes requests carry as their token. */
const names = new Map<DaemonProcess, string>();

beforeEach(async () => {
  if (!existsSync("dist/cli.js")) {
    throw new Error("the built CLI is missing: run `npm run build` (npm test does) first");
  }
  fake = await startFakeKubernetes();
  simulator = await startSimulator({ rateLimit: { management: false, observability: false } });
  root = await mkdtemp(join(tmpdir(), "driftless-ha-"));
  await writeFile(join(root, "endpoint.yaml"), ENDPOINT);
});

afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop("SIGKILL")));
  await simulator.close();
  await fake.close();
  await rm(root, { recursive: true, force: true });
});

/** A replica: its own kubeconfig (its name is its token, to tell its requests apart) and pod name. */
async function replica(name: string, env: Record<string, string> = {}): Promise<DaemonProcess> {
  const kubeconfig = join(root, `${name}.kubeconfig`);
  await writeFile(kubeconfig, fake.kubeconfig(name));
  const daemon = await startDaemonProcess({
    KUBECONFIG: kubeconfig,
    DRIFTLESS_NAMESPACE: NAMESPACE,
    DRIFTLESS_STATE_STORE: "kubernetes",
    DRIFTLESS_LEADER_ELECT: "true",
    DRIFTLESS_MANIFESTS: root,
    DRIFTLESS_SECRETS_DIR: root,
    ...platformEnv(simulator),
    DRIFTLESS_LOG_LEVEL: "info",
    ...env,
  });
  daemons.push(daemon);
  names.set(daemon, name);
  return daemon;
}

type Status = {
  leader: boolean;
  readyz: number;
  resources: Array<{ kind: string; name: string; status: string }>;
};

async function statusOf(daemon: DaemonProcess): Promise<Status | undefined> {
  try {
    const status = (await (await fetch(`${daemon.url}/status`)).json()) as Status;
    return { ...status, readyz: (await fetch(`${daemon.url}/readyz`)).status };
  } catch {
    return undefined; // a killed process answers nothing
  }
}

/**
 * Samples both replicas' /status every 20 ms until `until` holds; fails at once if both say they lead
 * at the same moment.
 */
async function watch(
  all: DaemonProcess[],
  until: (statuses: Array<Status | undefined>) => boolean,
  ms: number,
) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const statuses = await Promise.all(all.map(statusOf));
    if (statuses.filter((s) => s?.leader).length > 1) throw new Error("two replicas lead at once");
    if (until(statuses)) return;
    await sleep(20);
  }
  throw new Error(`not reached within ${ms} ms:\n${all.map((d) => d.stderr().slice(-2000)).join("\n---\n")}`);
}

/** Two replicas started at once; resolves once one leads and has reconciled, and the other is ready. */
async function leaderAndFollower(
  env: Record<string, string> = {},
): Promise<{ leader: DaemonProcess; follower: DaemonProcess }> {
  const both = await Promise.all([replica("replica-a", env), replica("replica-b", env)]);
  let leader: DaemonProcess | undefined;
  await watch(
    both,
    (statuses) => {
      const i = statuses.findIndex((s) => s?.leader && synced(s));
      leader = both[i];
      return i >= 0 && statuses[1 - i]?.readyz === 200;
    },
    20_000,
  );
  const follower = both.find((d) => d !== leader);
  if (!leader || !follower) throw new Error("unreachable: watch returned without a leader");
  return { leader, follower };
}

/** The identity a replica campaigns under, from its log. */
const identityOf = (daemon: DaemonProcess) =>
  daemon.logs.find((line) => line.msg === "campaigning for the leader lease")?.identity;

const synced = (s: Status | undefined) =>
  s?.resources.some((r) => r.name === "orders-msk" && r.status !== "Pending" && r.status !== "Failed") ??
  false;

const endpointPosts = () =>
  simulator.requests.filter((r) => r.method === "POST" && r.route === ENDPOINT_ROUTE);

const savedState = () => stateInSecrets(fake, NAMESPACE);

/** Who wrote the state Secret, in order (a replica's token is its name). */
const stateWriters = () =>
  fake.requests.filter((r) => r.method !== "GET" && r.path.includes("/secrets")).map((r) => r.token);

describe("two replicas with leader election", () => {
  it("lets one lead; when it is killed the other takes over with its state, and creates the endpoint no second time", async () => {
    const { leader: a, follower: b } = await leaderAndFollower(SHORT_DURATIONS);
    const serverId = savedState()?.resources["ReversePrivateEndpoint/orders-msk"]?.serverId;
    const followerStatus = await statusOf(b);
    const followerHealth = (await fetch(`${b.url}/healthz`)).status;
    const followerMetrics = await (await fetch(`${b.url}/metrics`)).text();

    // The leader's pod dies: no release, its lease runs out (b counts it down on its own clock from
    // when it last saw the Lease change, which is up to one of its attempts after a's last renewal).
    const killedAt = performance.now();
    a.child.kill("SIGKILL");
    await a.exited;
    await watch([a, b], ([, s]) => Boolean(s?.leader), 3 * SHORT_LEASE_MS);
    const tookOverAfter = performance.now() - killedAt;
    await watch([b], ([s]) => synced(s), 15_000);

    expect(followerStatus).toMatchObject({ leader: false, readyz: 200 });
    expect(followerHealth).toBe(200);
    expect(followerMetrics).toMatch(/^driftless_leader 0$/m);
    expect(await (await fetch(`${b.url}/metrics`)).text()).toMatch(/^driftless_leader 1$/m);
    expect(serverId).toEqual(expect.any(String));
    expect(tookOverAfter).toBeLessThanOrEqual(SHORT_LEASE_MS + 2 * 1.2 * SHORT_RETRY_MS + 1000);
    expect(fake.get("leases", NAMESPACE, "driftless-leader")?.spec).toMatchObject({
      holderIdentity: identityOf(b),
      leaseTransitions: 1,
    });
    expect(endpointPosts()).toHaveLength(1);
    expect(savedState()?.resources["ReversePrivateEndpoint/orders-msk"]?.serverId).toBe(serverId);
    // Every write of the state came from the leader of its time: a until it died, b after.
    const writers = stateWriters();
    expect(writers[0]).toBe(names.get(a));
    expect(writers.slice(writers.lastIndexOf(names.get(a)) + 1).every((w) => w === names.get(b))).toBe(true);
  });

  it("hands over well within the lease duration when the leader shuts down (SIGTERM releases the lease)", async () => {
    const { leader: a, follower: b } = await leaderAndFollower();

    const stoppedAt = performance.now();
    const code = await a.stop("SIGTERM");
    await watch([a, b], ([, s]) => Boolean(s?.leader), LEASE_MS);
    const tookOverAfter = performance.now() - stoppedAt;
    await watch([b], ([s]) => synced(s), 15_000);

    expect(code).toBe(0);
    expect(tookOverAfter).toBeLessThan(LEASE_MS / 2);
    expect(endpointPosts()).toHaveLength(1);
  });
});
