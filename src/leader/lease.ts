import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { performance } from "node:perf_hooks";
import { CoordinationV1Api, type KubeConfig, type V1Lease } from "@kubernetes/client-node";
import { abortWith, pooledApiClient, reasonOf, statusOf } from "../kubernetes/client.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import type { Leadership } from "./leadership.js";
import {
  afterAttempt,
  attemptBudget,
  checkDurations,
  type LeaseDurations,
  leadsAt,
  mayTake,
  newLease,
  nextAttemptIn,
  type Observation,
  observe,
  releasedLease,
  renewedLease,
} from "./lease-rules.js";

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection (which
 * controller-runtime uses) does it: candidates try every retry period to take the Lease once it is free
 * or expired; the leader renews it every retry period; a leader that has not renewed for the renew
 * deadline stops being leader, which is before anyone else may take the Lease (the lease duration), so
 * two replicas never write at once. Expiry is judged as client-go does, never by comparing clocks: a
 * candidate notes on its own monotonic clock when it last saw the Lease record change, and takes the
 * Lease only once it has stayed unchanged for its leaseDurationSeconds. The renewTime written in it is
 * for people; replicas' wall clocks may disagree by any amount. The cost: a candidate that starts beside
 * a Lease whose holder died long ago still waits one lease duration. The decisions are in
 * lease-rules.ts, as pure functions of the Lease and the clocks; this file is the loop around them.
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
  const durations: LeaseDurations = {
    leaseDuration: (options.leaseDurationSeconds ?? 15) * 1000,
    renewDeadline: (options.renewDeadlineSeconds ?? 10) * 1000,
    retryPeriod: (options.retryPeriodSeconds ?? 2) * 1000,
  };
  checkDurations(durations);
  const campaign = new LeaseCampaign(options, durations);
  campaign.start();
  return {
    identity: campaign.identity,
    isLeader: () => campaign.isLeader(),
    holder: () => campaign.holder(),
    onChange: (listener) => campaign.onChange(listener),
    stop: () => campaign.stop(),
  };
}

/** The loop: an attempt every retry period, the step-down timer, the listeners, the release. */
class LeaseCampaign {
  readonly identity: string;
  private readonly name: string;
  private readonly namespace: string;
  private readonly api: CoordinationV1Api;
  private readonly closeConnections: () => void;
  private readonly log: Logger;
  private readonly metrics: Pick<Metrics, "leader"> | undefined;
  private readonly clock: () => number;
  private readonly monotonic: () => number;
  private readonly listeners = new Set<(leader: boolean) => void>();
  private readonly stopping = new AbortController();

  private leader = false;
  /** The Lease as last read or written, for the leader's renewals and the release. */
  private lease: V1Lease | undefined;
  /** The monotonic time of the start of the last successful renewal. */
  private renewedAt = 0;
  private stepDownTimer: NodeJS.Timeout | undefined;
  private nextTick: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private lastHolder: string | undefined;
  private lastError: string | undefined;
  private observed: Observation | undefined;

  constructor(
    options: LeaseLeadershipOptions,
    private readonly durations: LeaseDurations,
  ) {
    this.name = options.name ?? DEFAULT_LEASE_NAME;
    this.namespace = options.namespace;
    this.identity = options.identity ?? `${hostname()}_${randomUUID().slice(0, 8)}`;
    this.clock = options.clock ?? Date.now;
    this.monotonic = options.monotonic ?? (() => performance.now());
    this.metrics = options.metrics;
    const client = pooledApiClient(options.kubeConfig, CoordinationV1Api);
    this.api = client.api;
    this.closeConnections = client.close;
    this.log = options.logger.child({ lease: `${this.namespace}/${this.name}`, identity: this.identity });
    this.metrics?.leader.set(0);
  }

  start(): void {
    this.log.info(this.durations, "campaigning for the leader lease");
    this.ticking = this.attempt();
  }

  // Checked against the clock too: the step-down timer fires late when the event loop is blocked,
  // and a write asked for after the renew deadline must be refused all the same.
  isLeader(): boolean {
    return leadsAt(this.leader, this.renewedAt, this.durations.renewDeadline, this.monotonic());
  }

  holder(): string | undefined {
    return this.lastHolder;
  }

  onChange(listener: (leader: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    this.stopping.abort();
    clearTimeout(this.nextTick);
    clearTimeout(this.stepDownTimer);
    await this.ticking;
    const wasLeader = this.leader;
    this.setLeader(false, "stopping");
    if (wasLeader) await this.release();
    this.closeConnections();
  }

  private setLeader(next: boolean, why: string): void {
    if (this.leader === next) return;
    this.leader = next;
    this.metrics?.leader.set(next ? 1 : 0);
    if (next) this.log.info({ why }, "became leader");
    else if (this.stopping.signal.aborted) this.log.info({ why }, "stopped being leader");
    else this.log.warn({ why }, "stopped being leader");
    for (const listener of this.listeners) {
      try {
        listener(next);
      } catch (error) {
        this.log.error({ err: error }, "a leadership listener failed");
      }
    }
  }

  private observeHolder(holder: string | undefined): void {
    if (holder === this.lastHolder) return;
    this.lastHolder = holder;
    if (holder && holder !== this.identity) this.log.info({ holder }, "another replica leads");
  }

  /** One attempt to acquire or renew; true when this replica holds the Lease as of `wallNow`. */
  private async tryAcquireOrRenew(wallNow: number, signal: AbortSignal): Promise<boolean> {
    const { name, namespace, api } = this;
    const request = abortWith(signal);
    // The leader renews straight from its last write; any conflict sends it the long way round.
    if (this.leader && this.lease) {
      try {
        const body = renewedLease(this.lease, this.identity, this.durations.leaseDuration, wallNow);
        this.lease = await api.replaceNamespacedLease({ name, namespace, body }, request);
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
      return this.create(wallNow, request);
    }
    return this.takeOrFollow(current, wallNow, request);
  }

  /** Takes `current` when it is free, ours or expired (see mayTake); true when this replica holds it. */
  private async takeOrFollow(
    current: V1Lease,
    wallNow: number,
    request: ReturnType<typeof abortWith>,
  ): Promise<boolean> {
    const { name, namespace, identity } = this;
    this.lease = current;
    this.observeHolder(current.spec?.holderIdentity || undefined);
    this.observed = observe(this.observed, current, this.monotonic());
    if (!mayTake(current, identity, this.observed, this.monotonic(), this.durations.leaseDuration))
      return false;
    try {
      const body = renewedLease(current, identity, this.durations.leaseDuration, wallNow);
      this.lease = await this.api.replaceNamespacedLease({ name, namespace, body }, request);
      this.observeHolder(identity);
      return true;
    } catch (error) {
      // Another candidate won the race for the same version.
      if (statusOf(error) === 409) return false;
      throw error;
    }
  }

  private async create(wallNow: number, request: ReturnType<typeof abortWith>): Promise<boolean> {
    const { name, namespace } = this;
    const body = newLease({ name, namespace }, this.identity, this.durations.leaseDuration, wallNow);
    try {
      this.lease = await this.api.createNamespacedLease({ namespace, body }, request);
      this.observeHolder(this.identity);
      return true;
    } catch (error) {
      // Another candidate created it first.
      if (statusOf(error) === 409) return false;
      throw error;
    }
  }

  private async tick(): Promise<void> {
    const { renewDeadline } = this.durations;
    const started = this.monotonic();
    const budget = attemptBudget(this.leader, this.renewedAt, renewDeadline, started);
    const signal = AbortSignal.any([this.stopping.signal, AbortSignal.timeout(budget)]);
    let held = false;
    try {
      held = await this.tryAcquireOrRenew(this.clock(), signal);
      this.lastError = undefined;
    } catch (error) {
      if (this.stopping.signal.aborted) return;
      this.warnOnce(error);
    }
    if (this.stopping.signal.aborted) return;
    const { leader, lastHolder: holder, identity } = this;
    const outcome = afterAttempt({
      held,
      started,
      now: this.monotonic(),
      renewDeadline,
      leader,
      holder,
      identity,
    });
    if (outcome.kind === "lead") {
      this.renewedAt = outcome.renewedAt;
      this.armStepDown(outcome.stepDownIn);
      this.setLeader(true, "acquired the lease");
    } else if (outcome.kind === "follow") {
      this.setLeader(false, outcome.why);
    }
  }

  /** Said once per distinct problem (a missing RBAC rule, an unreachable API), not every retry period. */
  private warnOnce(error: unknown): void {
    const problem = reasonOf(error);
    if (problem !== this.lastError) {
      this.log.warn({ err: problem, leader: this.leader }, "could not acquire or renew the lease");
    }
    this.lastError = problem;
  }

  /** Stops leading at the renew deadline unless a renewal moves it first. */
  private armStepDown(inMs: number): void {
    clearTimeout(this.stepDownTimer);
    this.stepDownTimer = setTimeout(() => {
      this.setLeader(false, "could not renew the lease within the renew deadline");
    }, inMs);
  }

  /** One tick, then the next one is scheduled whatever happened. */
  private attempt(): Promise<void> {
    return this.tick()
      .catch((error) => this.log.error({ err: error }, "leader election attempt failed"))
      .finally(() => this.schedule());
  }

  private schedule(): void {
    if (this.stopping.signal.aborted) return;
    const wait = nextAttemptIn(this.leader, this.durations.retryPeriod, Math.random());
    this.nextTick = setTimeout(() => {
      this.ticking = this.attempt();
    }, wait);
  }

  /** Empties the holder so that a candidate takes over at its next attempt instead of after expiry. */
  private async release(): Promise<void> {
    const { name, namespace } = this;
    const request = abortWith(AbortSignal.timeout(this.durations.renewDeadline));
    try {
      // Re-read: the renewal that stop() interrupted may have landed after all.
      const current = await this.api.readNamespacedLease({ name, namespace }, request);
      if (current.spec?.holderIdentity !== this.identity) return;
      const body = releasedLease(current, this.clock());
      await this.api.replaceNamespacedLease({ name, namespace, body }, request);
      this.log.info("released the lease");
    } catch (error) {
      // Not fatal: the others take over once the lease expires.
      this.log.warn({ err: reasonOf(error) }, "could not release the lease");
    }
  }
}
