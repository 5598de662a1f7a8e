import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { performance } from "node:perf_hooks";
import { CoordinationV1Api, type KubeConfig, type V1Lease, V1MicroTime } from "@kubernetes/client-node";
import { ConfigError } from "../errors.js";
import { abortWith, reasonOf, statusOf } from "../kubernetes/client.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import type { Leadership } from "./leadership.js";

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection (which
 * controller-runtime uses) does it: candidates try every retry period to take the Lease once it is free
 * or expired; the leader renews it every retry period; a leader that has not renewed for the renew
 * deadline stops being leader, which is before anyone else may take the Lease (the lease duration), so
 * two replicas never write at once. Expiry is judged as client-go does, never by comparing clocks: a
 * candidate notes on its own monotonic clock when it last saw the Lease record change, and takes the
 * Lease only once it has stayed unchanged for its leaseDurationSeconds. The renewTime written in it is
 * for people; replicas' wall clocks may disagree by any amount. The cost: a candidate that starts beside
 * a Lease whose holder died long ago still waits one lease duration.
 */

/** The Lease's name unless told otherwise; deploy/overlays/ha/role.yaml grants access to this name. */
export const DEFAULT_LEASE_NAME = "driftless-leader";

export type LeaseLeadershipOptions = {
  kubeConfig: KubeConfig;
  namespace: string;
  /** Name of the Lease; default `driftless-leader`. */
  name?: string;
  /** This replica's name in the Lease; default `<hostname>_<random>` (the pod name, made unique). */
  identity?: string;
  /** How long others wait, after they last saw the Lease renewed, before taking it; default 15 s. */
  leaseDurationSeconds?: number;
  /** How long the leader keeps failing to renew before it stops being leader; default 10 s. */
  renewDeadlineSeconds?: number;
  /** How often candidates try to acquire and the leader renews; default 2 s. */
  retryPeriodSeconds?: number;
  logger: Logger;
  /** Sets `driftless_leader` to 1 while leader, 0 otherwise. */
  metrics?: Pick<Metrics, "leader">;
  /** Wall clock of the timestamps written in the Lease, in ms; default Date.now. Never used to judge expiry. */
  clock?: () => number;
  /** Monotonic clock of the renew deadline and of the Lease's expiry, in ms; default performance.now. */
  monotonic?: () => number;
};

export type LeaseLeadership = Leadership & {
  readonly identity: string;
  /** The holder last seen in the Lease (this replica when leader), or undefined. */
  holder(): string | undefined;
};

/**
 * Starts campaigning for the Lease `name` in `namespace` at once and keeps at it until stop(), which
 * steps down and releases the Lease (holder emptied, as client-go's ReleaseOnCancel) if held. Throws
 * ConfigError when the durations do not satisfy leaseDuration > renewDeadline > 1.2 × retryPeriod > 0.
 */
export function createLeaseLeadership(options: LeaseLeadershipOptions): LeaseLeadership {
  const { kubeConfig, namespace, logger, metrics } = options;
  const name = options.name ?? DEFAULT_LEASE_NAME;
  const identity = options.identity ?? `${hostname()}_${randomUUID().slice(0, 8)}`;
  const leaseDuration = (options.leaseDurationSeconds ?? 15) * 1000;
  const renewDeadline = (options.renewDeadlineSeconds ?? 10) * 1000;
  const retryPeriod = (options.retryPeriodSeconds ?? 2) * 1000;
  const clock = options.clock ?? Date.now;
  const monotonic = options.monotonic ?? (() => performance.now());
  checkDurations(leaseDuration, renewDeadline, retryPeriod);

  const api = kubeConfig.makeApiClient(CoordinationV1Api);
  const log = logger.child({ lease: `${namespace}/${name}`, identity });
  const listeners = new Set<(leader: boolean) => void>();
  const stopping = new AbortController();

  let leader = false;
  /** The Lease as last read or written, for the leader's renewals and the release. */
  let lease: V1Lease | undefined;
  /** The monotonic time of the start of the last successful renewal. */
  let renewedAt = 0;
  let stepDownTimer: NodeJS.Timeout | undefined;
  let nextTick: NodeJS.Timeout | undefined;
  let ticking: Promise<void> = Promise.resolve();
  let lastHolder: string | undefined;
  let lastError: string | undefined;
  /** The Lease record as last seen, and the monotonic time at which it was first seen so (observedTime). */
  let observed: { record: string; at: number } | undefined;

  metrics?.leader.set(0);

  function setLeader(next: boolean, why: string) {
    if (leader === next) return;
    leader = next;
    metrics?.leader.set(next ? 1 : 0);
    if (next) log.info({ why }, "became leader");
    else if (stopping.signal.aborted) log.info({ why }, "stopped being leader");
    else log.warn({ why }, "stopped being leader");
    for (const listener of listeners) {
      try {
        listener(next);
      } catch (error) {
        log.error({ err: error }, "a leadership listener failed");
      }
    }
  }

  function observe(holder: string | undefined) {
    if (holder === lastHolder) return;
    lastHolder = holder;
    if (holder && holder !== identity) log.info({ holder }, "another replica leads");
  }

  /** One attempt to acquire or renew; true when this replica holds the Lease as of `now`. */
  async function tryAcquireOrRenew(now: number, signal: AbortSignal): Promise<boolean> {
    const request = abortWith(signal);
    // The leader renews straight from its last write; any conflict sends it the long way round.
    if (leader && lease) {
      try {
        lease = await api.replaceNamespacedLease({ name, namespace, body: renewed(lease, now) }, request);
        return true;
      } catch (error) {
        if (statusOf(error) !== 409) throw error;
      }
    }
    let current: V1Lease;
    try {
      current = await api.readNamespacedLease({ name, namespace }, request);
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
      return create(now, request);
    }
    lease = current;
    const spec = current.spec ?? {};
    observe(spec.holderIdentity || undefined);
    noteRecord(current);
    if (spec.holderIdentity && spec.holderIdentity !== identity && !expired(current)) return false;
    try {
      lease = await api.replaceNamespacedLease({ name, namespace, body: renewed(current, now) }, request);
      observe(identity);
      return true;
    } catch (error) {
      // Another candidate won the race for the same version.
      if (statusOf(error) === 409) return false;
      throw error;
    }
  }

  async function create(now: number, request: ReturnType<typeof abortWith>): Promise<boolean> {
    const body: V1Lease = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name, namespace, labels: { "app.kubernetes.io/name": "driftless" } },
      spec: {
        holderIdentity: identity,
        leaseDurationSeconds: leaseDuration / 1000,
        acquireTime: new V1MicroTime(now),
        renewTime: new V1MicroTime(now),
        leaseTransitions: 0,
      },
    };
    try {
      lease = await api.createNamespacedLease({ namespace, body }, request);
      observe(identity);
      return true;
    } catch (error) {
      // Another candidate created it first.
      if (statusOf(error) === 409) return false;
      throw error;
    }
  }

  /** The Lease held by this replica as of `now`: a renewal if it already held it, else a transition. */
  function renewed(current: V1Lease, now: number): V1Lease {
    const spec = current.spec ?? {};
    const ours = spec.holderIdentity === identity;
    return {
      ...current,
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds: leaseDuration / 1000,
        renewTime: new V1MicroTime(now),
        acquireTime: ours && spec.acquireTime ? spec.acquireTime : new V1MicroTime(now),
        leaseTransitions: (spec.leaseTransitions ?? 0) + (ours ? 0 : 1),
      },
    };
  }

  /** Restarts the expiry count whenever the record differs from the one last seen. */
  function noteRecord(current: V1Lease) {
    const spec = current.spec ?? {};
    const record = JSON.stringify([
      current.metadata?.resourceVersion,
      spec.holderIdentity,
      String(spec.renewTime),
      spec.leaseTransitions,
    ]);
    if (observed?.record !== record) observed = { record, at: monotonic() };
  }

  /**
   * Free to take: seen unchanged for its leaseDurationSeconds (as its holder wrote it, else ours) on
   * this replica's monotonic clock. Its holder's renewTime is not compared with our clock.
   */
  function expired(current: V1Lease): boolean {
    const seconds = current.spec?.leaseDurationSeconds;
    const duration = seconds && seconds > 0 ? seconds * 1000 : leaseDuration;
    return observed !== undefined && monotonic() > observed.at + duration;
  }

  async function tick() {
    const started = monotonic();
    // A leader's attempt may last until its deadline, a candidate's one renew deadline.
    const budget = leader ? renewedAt + renewDeadline - started : renewDeadline;
    const signal = AbortSignal.any([stopping.signal, AbortSignal.timeout(Math.max(1, Math.floor(budget)))]);
    let held = false;
    try {
      held = await tryAcquireOrRenew(clock(), signal);
      lastError = undefined;
    } catch (error) {
      if (stopping.signal.aborted) return;
      // Said once per distinct problem (a missing RBAC rule, an unreachable API), not every retry period.
      const problem = reasonOf(error);
      if (problem !== lastError) log.warn({ err: problem, leader }, "could not acquire or renew the lease");
      lastError = problem;
    }
    if (stopping.signal.aborted) return;
    if (held && monotonic() < started + renewDeadline) {
      renewedAt = started;
      armStepDown(started + renewDeadline - monotonic());
      setLeader(true, "acquired the lease");
    } else if (leader && !held && lastHolder !== identity) {
      setLeader(false, `the lease is held by ${lastHolder ?? "nobody"}`);
    }
  }

  /** Stops leading at the renew deadline unless a renewal moves it first. */
  function armStepDown(inMs: number) {
    clearTimeout(stepDownTimer);
    stepDownTimer = setTimeout(() => {
      setLeader(false, "could not renew the lease within the renew deadline");
    }, inMs);
  }

  /** One tick, then the next one is scheduled whatever happened. */
  function attempt(): Promise<void> {
    return tick()
      .catch((error) => log.error({ err: error }, "leader election attempt failed"))
      .finally(schedule);
  }

  function schedule() {
    if (stopping.signal.aborted) return;
    // Candidates spread their attempts a little so that they do not all ask at the same moment.
    const wait = leader ? retryPeriod : retryPeriod * (1 + Math.random() * 0.2);
    nextTick = setTimeout(() => {
      ticking = attempt();
    }, wait);
  }

  /** Empties the holder so that a candidate takes over at its next attempt instead of after expiry. */
  async function release() {
    const request = abortWith(AbortSignal.timeout(renewDeadline));
    try {
      // Re-read: the renewal that stop() interrupted may have landed after all.
      const current = await api.readNamespacedLease({ name, namespace }, request);
      if (current.spec?.holderIdentity !== identity) return;
      const now = new V1MicroTime(clock());
      const body: V1Lease = {
        ...current,
        spec: {
          ...current.spec,
          holderIdentity: "",
          leaseDurationSeconds: 1,
          renewTime: now,
          acquireTime: now,
        },
      };
      await api.replaceNamespacedLease({ name, namespace, body }, request);
      log.info("released the lease");
    } catch (error) {
      // Not fatal: the others take over once the lease expires.
      log.warn({ err: reasonOf(error) }, "could not release the lease");
    }
  }

  log.info({ leaseDuration, renewDeadline, retryPeriod }, "campaigning for the leader lease");
  ticking = attempt();

  return {
    identity,
    // Checked against the clock too: the step-down timer fires late when the event loop is blocked,
    // and a write asked for after the renew deadline must be refused all the same.
    isLeader: () => leader && monotonic() < renewedAt + renewDeadline,
    holder: () => lastHolder,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async stop() {
      if (stopping.signal.aborted) return;
      stopping.abort();
      clearTimeout(nextTick);
      clearTimeout(stepDownTimer);
      await ticking;
      const wasLeader = leader;
      setLeader(false, "stopping");
      if (wasLeader) await release();
    },
  };
}

function checkDurations(leaseDuration: number, renewDeadline: number, retryPeriod: number) {
  if (!(retryPeriod > 0 && renewDeadline > 1.2 * retryPeriod && leaseDuration > renewDeadline)) {
    throw new ConfigError(
      `leader election needs leaseDuration > renewDeadline > 1.2 × retryPeriod > 0, got ${leaseDuration / 1000} s, ${renewDeadline / 1000} s and ${retryPeriod / 1000} s`,
    );
  }
}
