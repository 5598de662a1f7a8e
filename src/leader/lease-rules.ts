import { type V1Lease, V1MicroTime } from "@kubernetes/client-node";
import { ConfigError } from "../errors.js";

/**
 * The decisions of leader election, as client-go's leaderelection takes them, as pure functions of the
 * Lease object and the clocks: when a Lease is free to take, what a renewal writes, how long an attempt
 * may last, whether this replica still leads. lease.ts is the loop around them that sleeps and calls
 * the API. Times named `now` are this replica's monotonic clock (ms), never compared with another
 * host's; times named `wallNow` are its wall clock (ms), only written into the Lease for people.
 */

/** The durations of an election, in ms. */
export type LeaseDurations = {
  /** How long others wait, after they last saw the Lease change, before taking it. */
  leaseDuration: number;
  /** How long the leader keeps failing to renew before it stops being leader. */
  renewDeadline: number;
  /** How often candidates try to acquire and the leader renews. */
  retryPeriod: number;
};

/**
 * Throws ConfigError unless leaseDuration > renewDeadline > 1.2 × retryPeriod > 0: the leader must
 * give up before anyone else may take the Lease, and must have time for more than one attempt.
 */
export function checkDurations({ leaseDuration, renewDeadline, retryPeriod }: LeaseDurations): void {
  if (!(retryPeriod > 0 && renewDeadline > 1.2 * retryPeriod && leaseDuration > renewDeadline)) {
    throw new ConfigError(
      `leader election needs leaseDuration > renewDeadline > 1.2 × retryPeriod > 0, got ${leaseDuration / 1000} s, ${renewDeadline / 1000} s and ${retryPeriod / 1000} s`,
    );
  }
}

/** The Lease record as last seen, and the monotonic time at which it was first seen so (observedTime). */
export type Observation = { record: string; at: number };

/** What identifies one write of the Lease: its version, holder, renewal time and transitions. */
export function recordOf(lease: V1Lease): string {
  const spec = lease.spec ?? {};
  return JSON.stringify([
    lease.metadata?.resourceVersion,
    spec.holderIdentity,
    String(spec.renewTime),
    spec.leaseTransitions,
  ]);
}

/** `seen` after reading `lease` at `now`: the count to expiry restarts whenever the record changed. */
export function observe(seen: Observation | undefined, lease: V1Lease, now: number): Observation {
  const record = recordOf(lease);
  return seen?.record === record ? seen : { record, at: now };
}

/**
 * Whether `lease` is free to take at `now`: seen unchanged (`seen`) for its leaseDurationSeconds (as
 * its holder wrote it, else `fallbackMs`) on this replica's monotonic clock. Its holder's renewTime is
 * not compared with our clock: replicas' wall clocks may disagree by any amount.
 */
export function isExpired(
  lease: V1Lease,
  seen: Observation | undefined,
  now: number,
  fallbackMs: number,
): boolean {
  const seconds = lease.spec?.leaseDurationSeconds;
  const duration = seconds && seconds > 0 ? seconds * 1000 : fallbackMs;
  return seen !== undefined && now > seen.at + duration;
}

/** Whether `identity` may write `lease` as its holder at `now`: nobody holds it, we do, or it expired. */
export function mayTake(
  lease: V1Lease,
  identity: string,
  seen: Observation | undefined,
  now: number,
  fallbackMs: number,
): boolean {
  const holder = lease.spec?.holderIdentity;
  return !holder || holder === identity || isExpired(lease, seen, now, fallbackMs);
}

/** A new Lease `name` held by `identity` since `wallNow`. */
export function newLease(
  where: { name: string; namespace: string },
  identity: string,
  leaseDuration: number,
  wallNow: number,
): V1Lease {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { ...where, labels: { "app.kubernetes.io/name": "driftless" } },
    spec: {
      holderIdentity: identity,
      leaseDurationSeconds: leaseDuration / 1000,
      acquireTime: new V1MicroTime(wallNow),
      renewTime: new V1MicroTime(wallNow),
      leaseTransitions: 0,
    },
  };
}

/**
 * `current` held by `identity` as of `wallNow`: a renewal if it already held it (its acquireTime and
 * transitions kept), else a transition (acquired now, one more transition).
 */
export function renewedLease(
  current: V1Lease,
  identity: string,
  leaseDuration: number,
  wallNow: number,
): V1Lease {
  const spec = current.spec ?? {};
  const ours = spec.holderIdentity === identity;
  return {
    ...current,
    spec: {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds: leaseDuration / 1000,
      renewTime: new V1MicroTime(wallNow),
      acquireTime: ours && spec.acquireTime ? spec.acquireTime : new V1MicroTime(wallNow),
      leaseTransitions: (spec.leaseTransitions ?? 0) + (ours ? 0 : 1),
    },
  };
}

/**
 * `current` released as client-go's ReleaseOnCancel does: no holder, and a one-second duration, so
 * that a candidate takes over at its next attempt instead of after the whole lease duration.
 */
export function releasedLease(current: V1Lease, wallNow: number): V1Lease {
  const now = new V1MicroTime(wallNow);
  return {
    ...current,
    spec: { ...current.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
  };
}

/**
 * Whether this replica leads at `now`: it became leader, and its last renewal (started at `renewedAt`)
 * is younger than the renew deadline. Judged on the clock, not by the step-down timer, which a blocked
 * event loop or a paused process runs late.
 */
export function leadsAt(leader: boolean, renewedAt: number, renewDeadline: number, now: number): boolean {
  return leader && now < renewedAt + renewDeadline;
}

/**
 * How long an attempt started at `started` may last, in whole ms (at least 1): a leader's until its
 * renew deadline, a candidate's one renew deadline.
 */
export function attemptBudget(
  leader: boolean,
  renewedAt: number,
  renewDeadline: number,
  started: number,
): number {
  const budget = leader ? renewedAt + renewDeadline - started : renewDeadline;
  return Math.max(1, Math.floor(budget));
}

/** What an attempt leads to: lead (renewed at its start), stop leading, or no change. */
export type AttemptOutcome =
  | { kind: "lead"; renewedAt: number; stepDownIn: number }
  | { kind: "follow"; why: string }
  | { kind: "keep" };

/**
 * What an attempt started at `started` and ended at `now` leads to. Holding the Lease counts only when
 * the attempt ended within the renew deadline of its start: the renewal it made is then younger than
 * the deadline, and the step-down is due at the deadline after its start. A leader that found another
 * holder (or none) stops; a failed attempt changes nothing: the step-down timer and leadsAt end a
 * leadership that cannot be renewed.
 */
export function afterAttempt(attempt: {
  held: boolean;
  started: number;
  now: number;
  renewDeadline: number;
  leader: boolean;
  holder: string | undefined;
  identity: string;
}): AttemptOutcome {
  const { held, started, now, renewDeadline, leader, holder, identity } = attempt;
  if (held && now < started + renewDeadline) {
    return { kind: "lead", renewedAt: started, stepDownIn: started + renewDeadline - now };
  }
  if (leader && !held && holder !== identity)
    return { kind: "follow", why: `the lease is held by ${holder ?? "nobody"}` };
  return { kind: "keep" };
}

/**
 * The wait before the next attempt: the retry period for a leader; up to 20% more for a candidate
 * (`draw` in [0, 1)), so that candidates do not all ask at the same moment.
 */
export function nextAttemptIn(leader: boolean, retryPeriod: number, draw: number): number {
  return leader ? retryPeriod : retryPeriod * (1 + draw * 0.2);
}
