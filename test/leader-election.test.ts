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
let time: TestClocks;
beforeEach(async () => {
  fake = await startFakeKubernetes();
  electors = [];
  time = testClocks();
});
afterEach(async () => {
  await Promise.all(electors.map((e) => e.stop()));
  await fake.close();
});

/**
 * The clocks the electors of a test share. The monotonic one (every expiry and deadline) stands still
 * until the test moves it on: a Lease expires, or a renew deadline passes, when the test says, however
 * busy the machine. The wall clock (only written into the Lease) is real time plus what was skipped.
 * Attempts and the step-down timer still run on real timers.
 */
type TestClocks = { monotonic(): number; clock(): number; skip(ms: number): void };
function testClocks(): TestClocks {
  let skipped = 0;
  return {
    monotonic: () => 1_000_000 + skipped,
    clock: () => Date.now() + skipped,
    skip: (ms) => {
      skipped += ms;
    },
  };
}

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
    monotonic: time.monotonic,
    clock: time.clock,
    ...extra,
  });
  electors.push(created);
  return created;
}

/** Every change of leadership of these electors, in order. */
function recordChanges(...all: LeaseLeadership[]) {
  const changes: Array<{ identity: string; leader: boolean }> = [];
  for (const e of all) e.onChange((leader) => changes.push({ identity: e.identity, leader }));
  return changes;
}

/**
 * Samples the electors every few ms until `until` holds or `timeoutMs` passes; fails at once when two
 * of them are leaders at the same sampled moment. The time-out is generous: it only bounds a failure.
 */
async function watch(all: LeaseLeadership[], until: () => boolean, timeoutMs = 10_000) {
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

/** The requests for the Lease sent by `identity` (its attempts: a read, or a leader's renewal). */
const sent = (identity: string, method?: string) =>
  fake.requests.filter((r) => r.path === LEASE && r.token === identity && (!method || r.method === method))
    .length;

/**
 * Waits (watching for two leaders) until `e` has made `count` more attempts than it had made when
 * called: by then the first of them was answered and judged.
 */
async function attempts(all: LeaseLeadership[], e: LeaseLeadership, count: number) {
  const before = sent(e.identity, "GET");
  await watch(all, () => sent(e.identity, "GET") >= before + count);
}

const leaseSpec = () => fake.get("leases", NAMESPACE, "driftless-leader")?.spec as Record<string, unknown>;
const renewTimeOf = (spec: Record<string, unknown>) => new Date(String(spec.renewTime)).getTime();

/** Time moved on by just over `ms`: what was judged against `ms` has passed it. */
const past = (ms: number) => time.skip(ms + 1);

describe("leader election on a Lease", () => {
  it("makes exactly one of two replicas leader, and names it in the Lease", async () => {
    const a = elector("replica-a");
    const b = elector("replica-b");

    await watch([a, b], () => a.isLeader() || b.isLeader());
    const follower = a.isLeader() ? b : a;
    await attempts([a, b], follower, 3);

    const leader = a.isLeader() ? a : b;
    expect([a, b].filter((e) => e.isLeader())).toHaveLength(1);
    expect(leaseSpec()).toMatchObject({
      holderIdentity: leader.identity,
      leaseDurationSeconds: 1.5,
      leaseTransitions: 0,
    });
    expect(String(leaseSpec().renewTime)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it("renews the Lease every retry period while leading, over the one connection it keeps open", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader());
    const first = renewTimeOf(leaseSpec());
    const renewals = () => sent("replica-a", "PUT");

    await watch([a], () => renewals() >= 3);

    expect(renewTimeOf(leaseSpec())).toBeGreaterThan(first);
    expect(a.isLeader()).toBe(true);
    expect(fake.connections()).toBe(1);
  });

  it("hands over once the lease duration has passed since the leader vanished, never with two leaders", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader());
    const b = elector("replica-b");
    const changes = recordChanges(a, b);
    await watch([a, b], () => b.holder() === "replica-a");

    // The leader's pod is gone from the network: none of its requests is answered.
    const lastRenewal = renewTimeOf(leaseSpec());
    fake.setFault("reset", (r) => r.token === "replica-a");
    // b counts the lease down from when it saw a's last renewal, on its own clock: not yet.
    await attempts([a, b], b, 2);
    const leaderBeforeExpiry = b.isLeader();
    // a's step-down timer fires at its renew deadline, before the Lease can expire for b.
    await watch([a, b], () => changes.some((c) => c.identity === "replica-a" && !c.leader));
    past(LEASE_MS);
    await watch([a, b], () => b.isLeader());

    expect(leaderBeforeExpiry).toBe(false);
    expect(changes).toEqual([
      { identity: "replica-a", leader: false },
      { identity: "replica-b", leader: true },
    ]);
    // b waited for the lease to expire as a (dead) a wrote it.
    const acquired = new Date(String(leaseSpec().acquireTime)).getTime();
    expect(acquired).toBeGreaterThan(lastRenewal + LEASE_MS);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-b", leaseTransitions: 1 });
  });

  it("steps down a leader that cannot renew (API errors) before its lease can expire for others", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader());
    const b = elector("replica-b");
    await watch([a, b], () => b.holder() === "replica-a");
    fake.setFault({ status: 500 }, (r) => r.token === "replica-a");
    await attempts([a, b], b, 2);

    // The renew deadline passes: a stops; the Lease, not renewed since, is still a's for b.
    past(DURATIONS.renewDeadlineSeconds * 1000);
    const aLeadsAtDeadline = a.isLeader();
    await attempts([a, b], b, 2);

    expect(aLeadsAtDeadline).toBe(false);
    expect(b.isLeader()).toBe(false);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-a" });
  });

  it("stays safe when a candidate's wall clock runs ahead: only its own monotonic clock counts", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader());
    // 0.3 s ahead, within the 0.5 s margin of these durations (5 s with the defaults).
    const b = elector("replica-b", { clock: () => time.clock() + 300 });
    const changes = recordChanges(a, b);
    await watch([a, b], () => b.holder() === "replica-a");

    fake.setFault("reset", (r) => r.token === "replica-a");
    await attempts([a, b], b, 2);
    past(LEASE_MS);
    await watch([a, b], () => b.isLeader());

    expect(changes.find((c) => c.identity === "replica-b")).toEqual({ identity: "replica-b", leader: true });
    expect(a.isLeader()).toBe(false);
  });

  it("steps down a leader whose requests hang, at the renew deadline, and tells its listeners", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader());
    const changes = recordChanges(a);
    fake.setFault("hang", (r) => r.token === "replica-a");

    past(DURATIONS.renewDeadlineSeconds * 1000);
    const leaderPastDeadline = a.isLeader();
    // The step-down's onChange comes from a timer due at the deadline.
    await watch([a], () => changes.some((c) => !c.leader));

    expect(leaderPastDeadline).toBe(false);
    expect(changes).toEqual([{ identity: "replica-a", leader: false }]);
  });

  it("is no leader past the renew deadline even before its step-down timer could run", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader());
    fake.setFault("hang", (r) => r.token === "replica-a");

    // A long synchronous stretch (a huge parse, a GC pause, SIGSTOP): the clock moves, no timer runs.
    past(DURATIONS.renewDeadlineSeconds * 1000);
    const leaderAfterDeadline = a.isLeader();

    expect(leaderAfterDeadline).toBe(false);
  });

  it("lets a recovered former leader follow the new one instead of taking the Lease back", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader());
    const b = elector("replica-b");
    await watch([a, b], () => b.holder() === "replica-a");
    fake.setFault("reset", (r) => r.token === "replica-a");
    await attempts([a, b], b, 2);
    past(LEASE_MS);
    await watch([a, b], () => b.isLeader());

    fake.setFault(undefined);
    await attempts([a, b], a, 3);

    expect(a.isLeader()).toBe(false);
    expect(a.holder()).toBe("replica-b");
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-b" });
  });

  it("releases the Lease on stop, so that the other takes over without waiting for it to expire", async () => {
    const a = elector("replica-a");
    await watch([a], () => a.isLeader());
    const b = elector("replica-b");
    await watch([a, b], () => b.holder() === "replica-a");

    await a.stop();
    const released = structuredClone(leaseSpec());
    // The clocks stand still: b can only take a released Lease.
    await watch([a, b], () => b.isLeader());

    expect(released).toMatchObject({ holderIdentity: "", leaseDurationSeconds: 1 });
    expect(a.isLeader()).toBe(false);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-b", leaseTransitions: 1 });
  });

  it("takes a Lease whose holder is gone once it has seen it unchanged for its duration, however old it looks", async () => {
    const longAgo = new Date(Date.now() - 60_000).toISOString().replace("Z", "000Z");
    fake.put("leases", NAMESPACE, {
      metadata: { name: "driftless-leader" },
      spec: { holderIdentity: "old-pod", leaseDurationSeconds: 1, renewTime: longAgo, leaseTransitions: 4 },
    });

    const a = elector("replica-a");
    await attempts([a], a, 3);
    // Its renewTime, a minute old, proves nothing: the holder's clock may be a minute behind ours.
    const leaderBeforeItsDuration = a.isLeader();
    past(1000);
    await watch([a], () => a.isLeader());

    expect(leaderBeforeItsDuration).toBe(false);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-a", leaseTransitions: 5 });
  });

  it("waits for a Lease held by someone else until it expires", async () => {
    const now = new Date().toISOString().replace("Z", "000Z");
    fake.put("leases", NAMESPACE, {
      metadata: { name: "driftless-leader" },
      spec: { holderIdentity: "other-pod", leaseDurationSeconds: 1, renewTime: now },
    });

    const a = elector("replica-a");
    await attempts([a], a, 3);
    const holderBeforeExpiry = a.holder();
    past(1000);
    await watch([a], () => a.isLeader());

    expect(holderBeforeExpiry).toBe("other-pod");
    expect(a.holder()).toBe("replica-a");
  });

  it("does not take a healthy Lease from a holder whose clock is minutes behind its own", async () => {
    const a = elector("replica-a", { clock: () => time.clock() - 5 * 60_000 });
    await watch([a], () => a.isLeader());
    const b = elector("replica-b");
    await watch([a, b], () => b.holder() === "replica-a");

    // More than the lease duration passes in steps, a renewing at each, b looking at each.
    for (let step = 0; step <= LEASE_MS / RETRY_MS; step++) {
      time.skip(RETRY_MS);
      const renewals = sent("replica-a", "PUT");
      await watch([a, b], () => sent("replica-a", "PUT") > renewals);
      await attempts([a, b], b, 2);
    }

    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-a", leaseTransitions: 0 });
  });

  it("takes the Lease of a holder that stopped renewing, even when that holder's clock is minutes ahead", async () => {
    const a = elector("replica-a", { clock: () => time.clock() + 5 * 60_000 });
    await watch([a], () => a.isLeader());
    const b = elector("replica-b");
    const changes = recordChanges(a, b);
    await watch([a, b], () => b.holder() === "replica-a");

    fake.setFault("reset", (r) => r.token === "replica-a");
    await attempts([a, b], b, 2);
    await watch([a, b], () => changes.some((c) => c.identity === "replica-a" && !c.leader));
    past(LEASE_MS);
    await watch([a, b], () => b.isLeader());

    expect(changes).toEqual([
      { identity: "replica-a", leader: false },
      { identity: "replica-b", leader: true },
    ]);
    expect(leaseSpec()).toMatchObject({ holderIdentity: "replica-b", leaseTransitions: 1 });
  });

  it("exports driftless_leader: 1 on the leader, 0 on the follower", async () => {
    const registries = [new Registry(), new Registry()] as const;
    const a = elector("replica-a", { metrics: createMetrics(registries[0], { defaultMetrics: false }) });
    await watch([a], () => a.isLeader());
    const b = elector("replica-b", { metrics: createMetrics(registries[1], { defaultMetrics: false }) });
    await watch([a, b], () => b.holder() === "replica-a");

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
    const a = elector("replica-a");
    await watch([a], () => a.isLeader());
    const files = createFileStore(root);
    const store = leaderOnlyStore(files, a);
    const state = await store.load();
    await store.ensureWritable();

    // A SIGSTOP or a long GC pause: time passes, no timer runs, and the next calls come straight after.
    past(DURATIONS.renewDeadlineSeconds * 1000);
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
