import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { KubeConfig } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError, isStateError } from "../src/errors.js";
import { leaderOnlyStore } from "../src/leader/leader-only-store.js";
import { createLeaseLeadership, type LeaseLeadership } from "../src/leader/lease.js";
import { createFileStore } from "../src/state/file-store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createMetrics } from "../src/telemetry/metrics.js";
import { type FakeKubernetes, startFakeKubernetes } from "./helpers/fake-kubernetes.js";

const NAMESPACE = "driftless-test";
const LEASE = `/apis/coordination.k8s.io/v1/namespaces/${NAMESPACE}/leases/driftless-leader`;
// Short durations, in the ratios of controller-runtime's defaults (15 s / 10 s / 2 s).
const DURATIONS = { leaseDurationSeconds: 1.5, renewDeadlineSeconds: 1, retryPeriodSeconds: 0.2 };
const LEASE_MS = DURATIONS.leaseDurationSeconds * 1000;
const RETRY_MS = DURATIONS.retryPeriodSeconds * 1000;

let fake: FakeKubernetes;
let electors: LeaseLeadership[];
beforeEach(async () => {
  fake = await startFakeKubernetes();
  electors = [];
});
afterEach(async () => {
  await Promise.all(electors.map((e) => e.stop()));
  await fake.close();
});

/** An elector with its own client, whose requests carry its identity as their token. */
function elector(
  identity: string,
  extra: {
    metrics?: ReturnType<typeof createMetrics>;
    clock?: () => number;
    monotonic?: () => number;
  } = {},
) {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(fake.kubeconfig(identity));
  const created = createLeaseLeadership({
    kubeConfig,
    namespace: NAMESPACE,
    identity,
    logger: createLogger("silent"),
    ...DURATIONS,
    ...extra,
  });
  electors.push(created);
  return created;
}

/** Every change of leadership of these electors, with its monotonic time. */
function recordChanges(...all: LeaseLeadership[]) {
  const changes: Array<{ identity: string; leader: boolean; at: number }> = [];
  for (const e of all)
    e.onChange((leader) => changes.push({ identity: e.identity, leader, at: performance.now() }));
  return changes;
}

/**
 * Samples the electors every few ms until `until` holds or `timeoutMs` passes; fails at once when two
 * of them are leaders at the same sampled moment.
 */
async function watch(all: LeaseLeadership[], until: () => boolean, timeoutMs: number) {
  const end = performance.now() + timeoutMs;
  let samples = 0;
  while (performance.now() < end) {
    samples++;
    const leaders = all.filter((e) => e.isLeader()).map((e) => e.identity);
    if (leaders.length > 1) throw new Error(`two leaders at once: ${leaders.join(", ")}`);
    if (until()) return samples;
    await sleep(5);
  }
  throw new Error(`not reached within ${timeoutMs} ms`);
}

const leaseSpec = () => fake.get("leases", NAMESPACE, "driftless-leader")?.spec as Record<string, unknown>;
const renewTimeOf = (spec: Record<string, unknown>) => new Date(String(spec.renewTime)).getTime();

describe("leader election on a Lease", () => {
  it("makes exactly one of two replicas leader, and names it in the Lease", async () => {
    const a = elector("replica-a");
    const b = elector("replica-b");

    await watch([a, b], () => a.isLeader() || b.isLeader(), 3000);
    await watch([a, b], () => false, 1000).catch((e: Error) => {
      if (!e.message.startsWith("not reached")) throw e;
    });

    const leader = a.isLeader() ? a : b;
    expect([a, b].filter((e) => e.isLeader())).toHaveLength(1);
    expect(leaseSpec()).toMatchObject({
      holderIdentity: leader.identity,
      leaseDurationSeconds: 1.5,
      leaseTransitions: 0,
    });
    expect(String(leaseSpec().renewTime)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it("renews the Lease every retry period while leading", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader(), 3000);
    const first = renewTimeOf(leaseSpec());

    await sleep(5 * RETRY_MS);

    const renewals = fake.requests.filter(
      (r) => r.method === "PUT" && r.path === LEASE && r.token === "replica-a",
    );
    expect(renewals.length).toBeGreaterThanOrEqual(3);
    expect(renewTimeOf(leaseSpec())).toBeGreaterThan(first);
    expect(a.isLeader()).toBe(true);
  });

  it("hands over within the lease duration when the leader vanishes, never with two leaders", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader(), 3000);
    const b = elector("replica-b");
    const changes = recordChanges(a, b);
    await sleep(3 * RETRY_MS);

    // The leader's pod is gone from the network: none of its requests is answered.
    const lastRenewal = renewTimeOf(leaseSpec());
    const killedAt = performance.now();
    fake.setFault("reset", (r) => r.token === "replica-a");
    await watch([a, b], () => b.isLeader(), 3 * LEASE_MS);

    const tookOver = changes.find((c) => c.identity === "replica-b" && c.leader);
    const steppedDown = changes.find((c) => c.identity === "replica-a" && !c.leader);
    expect(steppedDown && tookOver && steppedDown.at < tookOver.at).toBe(true);
    // b counts the lease down from when it saw a's last renewal: up to one of its attempts later.
    expect((tookOver?.at ?? Infinity) - killedAt).toBeLessThanOrEqual(LEASE_MS + 2 * 1.2 * RETRY_MS + 100);
    // b waited for the lease to expire as a (dead) a wrote it.
    const acquired = new Date(String(leaseSpec().acquireTime)).getTime();
    expect(acquired).toBeGreaterThan(lastRenewal + LEASE_MS);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-b", leaseTransitions: 1 });
  });

  it("steps down a leader that cannot renew (API errors) before its lease can expire for others", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader(), 3000);
    const b = elector("replica-b");
    const changes = recordChanges(a, b);
    await sleep(3 * RETRY_MS);

    fake.setFault({ status: 500 }, (r) => r.token === "replica-a");
    const heldUntil = renewTimeOf(leaseSpec()) + LEASE_MS;
    const steppedDown = () => changes.find((c) => c.identity === "replica-a" && !c.leader);
    await watch([a, b], () => steppedDown() !== undefined, 3 * LEASE_MS);

    expect(a.isLeader()).toBe(false);
    // Date.now() now is the wall time of the step-down, give or take a sample.
    expect(Date.now()).toBeLessThan(heldUntil);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-a" });
    expect(b.isLeader()).toBe(false);
  });

  it("stays safe when a candidate's clock runs ahead by less than leaseDuration - renewDeadline", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader(), 3000);
    // 0.3 s ahead, within the 0.5 s margin of these durations (5 s with the defaults).
    const b = elector("replica-b", { clock: () => Date.now() + 300 });
    const changes = recordChanges(a, b);
    await sleep(2 * RETRY_MS);

    fake.setFault("reset", (r) => r.token === "replica-a");
    await watch([a, b], () => b.isLeader(), 3 * LEASE_MS);

    const steppedDown = changes.find((c) => c.identity === "replica-a" && !c.leader);
    const tookOver = changes.find((c) => c.identity === "replica-b" && c.leader);
    expect(steppedDown && tookOver && steppedDown.at < tookOver.at).toBe(true);
  });

  it("steps down a leader whose requests hang, at the renew deadline", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader(), 3000);
    const changes = recordChanges(a);

    const partitionedAt = performance.now();
    fake.setFault("hang", (r) => r.token === "replica-a");
    // isLeader() turns false by the clock; the step-down's onChange comes from a timer due then.
    await watch([a], () => changes.some((c) => !c.leader), 3 * LEASE_MS);

    const steppedDown = changes.find((c) => !c.leader);
    expect((steppedDown?.at ?? Infinity) - partitionedAt).toBeLessThanOrEqual(
      DURATIONS.renewDeadlineSeconds * 1000 + 250,
    );
  });

  it("is no leader past the renew deadline even while a blocked event loop holds back its step-down timer", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader(), 3000);
    fake.setFault("hang", (r) => r.token === "replica-a");

    // A long synchronous stretch (a huge parse, a GC pause): no timer can fire meanwhile.
    const blockedUntil = performance.now() + DURATIONS.renewDeadlineSeconds * 1000 + 100;
    while (performance.now() < blockedUntil) {
      // busy: the step-down timer is due but cannot run
    }
    const leaderAfterDeadline = a.isLeader();

    expect(leaderAfterDeadline).toBe(false);
  });

  it("lets a recovered former leader follow the new one instead of taking the Lease back", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader(), 3000);
    const b = elector("replica-b");
    fake.setFault("reset", (r) => r.token === "replica-a");
    await watch([a, b], () => b.isLeader(), 3 * LEASE_MS);

    fake.setFault(undefined);
    await watch([a, b], () => false, LEASE_MS).catch((e: Error) => {
      if (!e.message.startsWith("not reached")) throw e;
    });

    expect(a.isLeader()).toBe(false);
    expect(a.holder()).toBe("replica-b");
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-b" });
  });

  it("releases the Lease on stop, so that the other takes over well before it would expire", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader(), 3000);
    const b = elector("replica-b");
    await sleep(2 * RETRY_MS);

    const stoppedAt = performance.now();
    await a.stop();
    const released = structuredClone(leaseSpec());
    await watch([a, b], () => b.isLeader(), 3 * LEASE_MS);

    expect(released).toMatchObject({ holderIdentity: "", leaseDurationSeconds: 1 });
    expect(a.isLeader()).toBe(false);
    expect(performance.now() - stoppedAt).toBeLessThan(LEASE_MS);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-b", leaseTransitions: 1 });
  });

  it("takes a Lease whose holder is gone once it has seen it unchanged for its duration, however old it looks", async () => {
    const longAgo = new Date(Date.now() - 60_000).toISOString().replace("Z", "000Z");
    fake.put("leases", NAMESPACE, {
      metadata: { name: "driftless-leader" },
      spec: { holderIdentity: "old-pod", leaseDurationSeconds: 1, renewTime: longAgo, leaseTransitions: 4 },
    });
    const startedAt = performance.now();

    const a = elector("replica-a");
    await watch([a], () => a.isLeader(), 3000);

    // Its renewTime, a minute old, proves nothing: the holder's clock may be a minute behind ours.
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(900);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-a", leaseTransitions: 5 });
  });

  it("waits for a Lease held by someone else until it expires", async () => {
    const now = new Date().toISOString().replace("Z", "000Z");
    fake.put("leases", NAMESPACE, {
      metadata: { name: "driftless-leader" },
      spec: { holderIdentity: "other-pod", leaseDurationSeconds: 1, renewTime: now },
    });
    const startedAt = performance.now();

    const a = elector("replica-a");
    await watch([a], () => a.isLeader(), 3000);

    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(900);
    expect(a.holder()).toBe("replica-a");
  });

  it("does not take a healthy Lease from a holder whose clock is minutes behind its own", async () => {
    const a = elector("replica-a", { clock: () => Date.now() - 5 * 60_000 });
    await watch([a], () => a.isLeader(), 3000);
    const b = elector("replica-b");

    await watch([a, b], () => false, 3 * LEASE_MS).catch((e: Error) => {
      if (!e.message.startsWith("not reached")) throw e;
    });

    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-a", leaseTransitions: 0 });
  });

  it("takes the Lease of a holder that stopped renewing, even when that holder's clock is minutes ahead", async () => {
    const a = elector("replica-a", { clock: () => Date.now() + 5 * 60_000 });
    await watch([a], () => a.isLeader(), 3000);
    const b = elector("replica-b");
    const changes = recordChanges(a, b);
    await sleep(2 * RETRY_MS);

    fake.setFault("reset", (r) => r.token === "replica-a");
    await watch([a, b], () => b.isLeader(), 3 * LEASE_MS);

    const steppedDown = changes.find((c) => c.identity === "replica-a" && !c.leader);
    const tookOver = changes.find((c) => c.identity === "replica-b" && c.leader);
    expect(steppedDown && tookOver && steppedDown.at < tookOver.at).toBe(true);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-b", leaseTransitions: 1 });
  });

  it("exports driftless_leader: 1 on the leader, 0 on the follower", async () => {
    const registries = [new Registry(), new Registry()] as const;
    const a = elector("replica-a", { metrics: createMetrics(registries[0], { defaultMetrics: false }) });
    await watch([a], () => a.isLeader(), 3000);
    const b = elector("replica-b", { metrics: createMetrics(registries[1], { defaultMetrics: false }) });
    await sleep(2 * RETRY_MS);

    const [leaderText, followerText] = await Promise.all(registries.map((r) => r.metrics()));

    expect(leaderText).toMatch(/^driftless_leader 1$/m);
    expect(followerText).toMatch(/^driftless_leader 0$/m);
    expect(b.isLeader()).toBe(false);
  });

  it("refuses durations that would let two replicas lead at once", () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(fake.kubeconfigPath);
    const make = () =>
      createLeaseLeadership({
        kubeConfig,
        namespace: NAMESPACE,
        logger: createLogger("silent"),
        leaseDurationSeconds: 10,
        renewDeadlineSeconds: 15,
      });

    expect(make).toThrow(ConfigError);
    expect(make).toThrow(/leaseDuration > renewDeadline > 1.2 × retryPeriod > 0, got 10 s, 15 s and 2 s/);
  });
});

describe("the leader-only store of a leader past its renew deadline", () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "driftless-leader-store-"));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("refuses to write once the monotonic clock passes the deadline, before any timer has run", async () => {
    let stalledMs = 0;
    const a = elector("replica-a", { monotonic: () => performance.now() + stalledMs });
    await watch([a], () => a.isLeader(), 3000);
    const files = createFileStore(root);
    const store = leaderOnlyStore(files, a);
    const state = await store.load();
    await store.ensureWritable();

    // A SIGSTOP or a long GC pause: time passes, no timer runs, and the next calls come straight after.
    stalledMs = DURATIONS.renewDeadlineSeconds * 1000 + 1;
    const [refused, saving] = await Promise.all([
      store.ensureWritable().catch((e: unknown) => e),
      store.save(state).catch((e: unknown) => e),
    ]);
    await files.close();

    expect(isStateError(refused)).toBe(true);
    expect((refused as Error).message).toMatch(/no longer the leader.*sends nothing more/);
    expect(isStateError(saving)).toBe(true);
    expect(await readdir(root)).not.toContain("state.json");
  });
});
