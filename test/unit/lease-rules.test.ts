import type { V1Lease } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import {
  afterAttempt,
  attemptBudget,
  checkDurations,
  isExpired,
  leadsAt,
  mayTake,
  newLease,
  nextAttemptIn,
  observe,
  releasedLease,
  renewedLease,
} from "../../src/leader/lease-rules.js";

/**
 * The decisions of leader election as pure functions of the Lease and the clocks (client-go's model):
 * monotonic times in ms from an arbitrary origin; wall times only ever written, never judged.
 */

const MINUTE = 60_000;
const WALL = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

/** A Lease as the API server returns it. */
function lease(spec: V1Lease["spec"], resourceVersion = "7"): V1Lease {
  return { metadata: { name: "driftless-leader", namespace: "ns", resourceVersion }, spec };
}

const heldBy = (holder: string, renewTime = new Date(WALL), extra: V1Lease["spec"] = {}) =>
  lease({ holderIdentity: holder, leaseDurationSeconds: 15, renewTime, leaseTransitions: 2, ...extra });

describe("the durations", () => {
  it("rule: controller-runtime's 15 s / 10 s / 2 s are accepted", () => {
    expect(() =>
      checkDurations({ leaseDuration: 15_000, renewDeadline: 10_000, retryPeriod: 2_000 }),
    ).not.toThrow();
  });

  it("rule: a leader must give up before others may take over, with room for more than one attempt", () => {
    const refused = [
      { leaseDuration: 10_000, renewDeadline: 10_000, retryPeriod: 2_000 },
      { leaseDuration: 15_000, renewDeadline: 2_400, retryPeriod: 2_000 },
      { leaseDuration: 15_000, renewDeadline: 10_000, retryPeriod: 0 },
    ];

    for (const durations of refused) expect(() => checkDurations(durations)).toThrow(ConfigError);
    expect(() => checkDurations(refused[0] as (typeof refused)[0])).toThrow(
      "leader election needs leaseDuration > renewDeadline > 1.2 × retryPeriod > 0, got 10 s, 10 s and 2 s",
    );
  });
});

describe("when a Lease is free to take", () => {
  it("rule: the count to expiry starts when this replica first sees a record, and goes on while it is unchanged", () => {
    const first = observe(undefined, heldBy("a"), 1_000);

    const again = observe(first, heldBy("a"), 9_000);

    expect(first.at).toBe(1_000);
    expect(again).toBe(first);
  });

  it("rule: any new write of the Lease (version, holder, renewal, transitions) restarts the count", () => {
    const seen = observe(undefined, heldBy("a"), 1_000);

    for (const changed of [
      lease(heldBy("a").spec, "8"),
      heldBy("b"),
      heldBy("a", new Date(WALL + 2_000)),
      heldBy("a", new Date(WALL), { leaseTransitions: 3 }),
    ]) {
      expect(observe(seen, changed, 5_000).at).toBe(5_000);
    }
  });

  it("rule: a Lease expires once seen unchanged for longer than the duration its holder wrote", () => {
    const held = heldBy("a");
    const seen = observe(undefined, held, 1_000);

    expect(isExpired(held, seen, 16_000, 60_000)).toBe(false);
    expect(isExpired(held, seen, 16_001, 60_000)).toBe(true);
  });

  it("rule: without a duration written in it, a Lease expires after this replica's own", () => {
    const held = heldBy("a", new Date(WALL), { leaseDurationSeconds: 0 });
    const seen = observe(undefined, held, 0);

    expect(isExpired(held, seen, 4_000, 4_000)).toBe(false);
    expect(isExpired(held, seen, 4_001, 4_000)).toBe(true);
  });

  it("rule: a Lease never seen is not expired, whatever its renewTime says", () => {
    expect(isExpired(heldBy("a", new Date(0)), undefined, 10 * MINUTE, 15_000)).toBe(false);
  });

  it("rule: a holder whose clock runs minutes behind keeps a Lease it renews (its old-looking renewTime proves nothing)", () => {
    let seen = observe(undefined, heldBy("a", new Date(WALL - 5 * MINUTE)), 0);

    // The holder renews every 2 s, each renewal 5 minutes behind our clock.
    for (let now = 2_000; now <= 60_000; now += 2_000) {
      const renewed = heldBy("a", new Date(WALL - 5 * MINUTE + now));
      seen = observe(seen, renewed, now);
      expect(mayTake(renewed, "b", seen, now, 15_000)).toBe(false);
    }
  });

  it("rule: a holder whose clock runs minutes ahead loses its Lease once it stops renewing (its future renewTime proves nothing)", () => {
    const stale = heldBy("a", new Date(WALL + 5 * MINUTE));
    const seen = observe(undefined, stale, 0);

    expect(mayTake(stale, "b", seen, 15_000, 15_000)).toBe(false);
    expect(mayTake(stale, "b", seen, 15_001, 15_000)).toBe(true);
  });

  it("rule: a Lease nobody holds, or that this replica holds, may be taken at once", () => {
    expect(mayTake(lease({ holderIdentity: "" }), "b", undefined, 0, 15_000)).toBe(true);
    expect(mayTake(lease({}), "b", undefined, 0, 15_000)).toBe(true);
    expect(mayTake(heldBy("b"), "b", undefined, 0, 15_000)).toBe(true);
  });
});

describe("what is written in the Lease", () => {
  it("rule: a renewal by its holder keeps acquireTime and transitions, and moves renewTime", () => {
    const acquired = new Date(WALL - MINUTE);
    const current = heldBy("a", new Date(WALL - 2_000), { acquireTime: acquired });

    const body = renewedLease(current, "a", 15_000, WALL);

    expect(body.spec).toMatchObject({ holderIdentity: "a", leaseTransitions: 2, acquireTime: acquired });
    expect(body.spec?.renewTime?.getTime()).toBe(WALL);
    expect(body.metadata?.resourceVersion).toBe("7");
  });

  it("rule: a takeover counts one more transition and is acquired now, with the taker's duration", () => {
    const body = renewedLease(
      heldBy("a", new Date(WALL - MINUTE), { acquireTime: new Date(0) }),
      "b",
      4_000,
      WALL,
    );

    expect(body.spec).toMatchObject({ holderIdentity: "b", leaseTransitions: 3, leaseDurationSeconds: 4 });
    expect(body.spec?.acquireTime?.getTime()).toBe(WALL);
  });

  it("rule: times are written as MicroTime, six digits of fraction", () => {
    const body = newLease({ name: "driftless-leader", namespace: "ns" }, "a", 15_000, WALL);

    expect(JSON.parse(JSON.stringify(body)).spec).toEqual({
      holderIdentity: "a",
      leaseDurationSeconds: 15,
      acquireTime: "2026-01-02T03:04:05.678000Z",
      renewTime: "2026-01-02T03:04:05.678000Z",
      leaseTransitions: 0,
    });
  });

  it("rule: a release empties the holder and shortens the duration to 1 s, so a candidate takes over at its next attempt", () => {
    const body = releasedLease(heldBy("a"), WALL);

    expect(body.spec).toMatchObject({ holderIdentity: "", leaseDurationSeconds: 1, leaseTransitions: 2 });
  });
});

describe("the renew deadline", () => {
  it("rule: a leader leads until, not at, the renew deadline after its last renewal started", () => {
    expect(leadsAt(true, 5_000, 10_000, 14_999)).toBe(true);
    expect(leadsAt(true, 5_000, 10_000, 15_000)).toBe(false);
    expect(leadsAt(false, 5_000, 10_000, 5_001)).toBe(false);
  });

  it("rule: a leader's attempt may last until its deadline, a candidate's one renew deadline, never under 1 ms", () => {
    expect(attemptBudget(true, 5_000, 10_000, 8_000.5)).toBe(6_999);
    expect(attemptBudget(false, 5_000, 10_000, 8_000)).toBe(10_000);
    expect(attemptBudget(true, 5_000, 10_000, 20_000)).toBe(1);
  });

  it("rule: holding the Lease makes a leader only when the attempt ended within the renew deadline of its start", () => {
    const attempt = {
      held: true,
      started: 1_000,
      renewDeadline: 10_000,
      leader: false,
      holder: "a",
      identity: "a",
    };

    expect(afterAttempt({ ...attempt, now: 3_000 })).toEqual({
      kind: "lead",
      renewedAt: 1_000,
      stepDownIn: 8_000,
    });
    expect(afterAttempt({ ...attempt, now: 11_000 })).toEqual({ kind: "keep" });
  });

  it("rule: a leader that finds the Lease held by another, or by nobody, stops leading at once", () => {
    const attempt = { held: false, started: 0, now: 10, renewDeadline: 10_000, leader: true, identity: "a" };

    expect(afterAttempt({ ...attempt, holder: "b" })).toEqual({
      kind: "follow",
      why: "the lease is held by b",
    });
    expect(afterAttempt({ ...attempt, holder: undefined })).toEqual({
      kind: "follow",
      why: "the lease is held by nobody",
    });
  });

  it("rule: a failed attempt changes nothing: the renew deadline, not one failure, ends a leadership", () => {
    const attempt = { held: false, started: 0, now: 10, renewDeadline: 10_000, holder: "a", identity: "a" };

    expect(afterAttempt({ ...attempt, leader: true })).toEqual({ kind: "keep" });
    expect(afterAttempt({ ...attempt, leader: false, holder: "b" })).toEqual({ kind: "keep" });
  });
});

describe("the pace of attempts", () => {
  it("rule: a leader renews every retry period; candidates spread theirs over up to 20% more", () => {
    expect(nextAttemptIn(true, 2_000, 0.99)).toBe(2_000);
    expect(nextAttemptIn(false, 2_000, 0)).toBe(2_000);
    expect(nextAttemptIn(false, 2_000, 0.5)).toBe(2_200);
  });
});
