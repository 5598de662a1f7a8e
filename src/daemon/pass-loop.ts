import { randomUUID } from "node:crypto";
import { messageOf } from "../errors.js";
import type { Leadership } from "../leader/leadership.js";
import type { Reconciler } from "../reconcile/types.js";
import { type PassResult, type ResourceStatus, resourceId, type Trigger } from "../resources.js";
import type { Logger } from "../telemetry/logger.js";
import { Backoff } from "./backoff.js";
import { type Clock, systemClock } from "./clock.js";

/** Triggers of passes that bring nothing new from git: a read may be judged while they run. */
const QUIET_TRIGGERS: ReadonlySet<Trigger> = new Set(["schedule", "retry", "reassert", "drift"]);

/** Passes in a row that may start again because their source vanished, before it counts as an error. */
const MAX_SUPERSEDED = 3;

export type PassRequest = {
  trigger: Trigger;
  /** Start without waiting for the burst to go quiet (webhook, schedule, retry). */
  immediate?: boolean;
  /** Re-send unchanged resources too (the periodic re-assertion). */
  reassert?: boolean;
  /** `Kind/name` of resources a read found drifted: re-sent in this pass (PassOptions.heal). */
  heal?: readonly string[];
  /** The revision the trigger saw; a request for the revision a running pass already reads is dropped. */
  revision?: string;
  /**
   * `driftless reconcile --allow-deletes N`: the pass that answers this request, and no later one, may
   * send up to N deletes the mass-deletion guard holds (PassOptions.allowDeletes).
   */
  allowDeletes?: number;
};

export type PassLoopDeps = {
  reconciler: Reconciler;
  leadership: Leadership;
  logger: Logger;
  /** The revision a pass would read now (the link target's name), or undefined for a plain folder. */
  currentRevision: () => Promise<string | undefined>;
  /** Called after every finished pass, before the next one starts; `healed`: the drifted resources it re-sent. */
  onPass: (result: PassResult, trigger: Trigger, healed: readonly string[]) => void;
  /** True when a thrown error means "the source changed under the pass": start again, not a failure. */
  isSuperseded: (error: unknown) => boolean;
  /** Called when a pass throws (not superseded). */
  onPassError: (error: unknown) => void;
  /** Quiet time a watch trigger waits for more triggers; default 150 ms. */
  quietMs?: number;
  /** Longest a burst of watch triggers can hold a pass back; default 1 s. */
  maxQuietMs?: number;
  backoff?: Backoff;
  /** The time of the quiet waits and the retries; default the system's. */
  clock?: Clock;
  /**
   * Resources allowed one new create attempt (DRIFTLESS_ALLOW_CREATE), given to every pass: the engine
   * records in the state when an allowance was spent, and a pass without it takes it back.
   */
  allowCreate?: readonly string[];
};

/** The allowance of two requests merged into one pass: the larger, since each operator asked for that pass. */
function allowDeletesOf(...requests: (PassRequest | undefined)[]): { allowDeletes?: number } {
  const allowed = requests.flatMap((r) => (r?.allowDeletes === undefined ? [] : [r.allowDeletes]));
  return allowed.length > 0 ? { allowDeletes: Math.max(...allowed) } : {};
}

/**
 * Runs reconcile passes one at a time and decides when the next one starts. Triggers coalesce: a burst
 * of watch events waits until the source is quiet for `quietMs` (at most `maxQuietMs`), and any number
 * of triggers during a running pass make exactly one more pass after it, which reads the newest
 * revision. Failed resources are retried by a whole pass at their backoff time. Only the leader passes;
 * losing leadership aborts the running pass.
 */
export class PassLoop {
  private running: Promise<void> | undefined;
  private runningRevision: string | undefined;
  private runningTrigger: Trigger | undefined;
  /** The revision the last started pass read; a link swap to it (seen after a webhook) is old news. */
  private lastRevision: string | undefined;
  private abort: AbortController | undefined;
  private pending: PassRequest | undefined;
  private pendingSince = 0;
  /** Set while a quiet wait is armed: cancels it. */
  private cancelQuiet: (() => void) | undefined;
  /** Set while a retry is armed: cancels it. */
  private cancelRetry: (() => void) | undefined;
  private stopped = false;
  private passes = 0;
  private superseded = 0;
  private readonly allowCreate: readonly string[];
  private lastStatuses = new Map<string, ResourceStatus>();
  private readonly backoff: Backoff;
  private readonly clock: Clock;
  private readonly quietMs: number;
  private readonly maxQuietMs: number;
  private readonly removeLeaderListener: () => void;

  constructor(private readonly deps: PassLoopDeps) {
    this.backoff = deps.backoff ?? new Backoff();
    this.clock = deps.clock ?? systemClock;
    this.allowCreate = deps.allowCreate ?? [];
    this.quietMs = deps.quietMs ?? 150;
    this.maxQuietMs = deps.maxQuietMs ?? 1_000;
    this.removeLeaderListener = deps.leadership.onChange((leader) => {
      if (!leader) this.abort?.abort(new Error("leadership lost"));
      else this.request({ trigger: "leader", immediate: true });
    });
  }

  /** Asks for a pass. Never throws; ignored after stop() and on a follower. */
  request(request: PassRequest): void {
    if (this.stopped || !this.deps.leadership.isLeader()) return;
    if (this.running && request.revision !== undefined && request.revision === this.runningRevision) return;
    if (this.isOldSwap(request)) return;
    this.pending = this.merge(this.pending, request);
    if (this.running) return;
    if (this.pending.immediate) this.startNow();
    else this.awaitQuiet();
  }

  /**
   * True while a pass that may bring a change from git runs or waits to start (not one of the passes
   * that only retry, re-send or heal): a read compared meanwhile may compare with manifests that are
   * not applied yet.
   */
  get changePending(): boolean {
    const triggers = [this.pending?.trigger, this.runningTrigger];
    return triggers.some((trigger) => trigger !== undefined && !QUIET_TRIGGERS.has(trigger));
  }

  /** Number of passes started so far. */
  get passCount(): number {
    return this.passes;
  }

  /** Resolves when no pass runs and none is waiting to start. */
  async idle(): Promise<void> {
    while (this.running || this.cancelQuiet) {
      await (this.running ?? new Promise((resolve) => setTimeout(resolve, this.quietMs)));
    }
  }

  /**
   * Stops taking work and aborts the running pass (it finishes its in-flight request and records what it
   * did); waits for it at most `graceMs`. Returns false when the pass did not end in time.
   */
  async stop(graceMs: number): Promise<boolean> {
    this.stopped = true;
    this.removeLeaderListener();
    this.cancelQuiet?.();
    this.cancelRetry?.();
    this.cancelQuiet = this.cancelRetry = undefined;
    this.pending = undefined;
    if (!this.running) return true;
    this.abort?.abort(new Error("shutting down"));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), graceMs);
    });
    const ended = await Promise.race([this.running.then(() => true as const), late]);
    clearTimeout(timer);
    return ended;
  }

  private isOldSwap(request: PassRequest): boolean {
    return (
      request.trigger === "watch" && request.revision !== undefined && request.revision === this.lastRevision
    );
  }

  private merge(current: PassRequest | undefined, next: PassRequest): PassRequest {
    if (!current) {
      this.pendingSince = this.clock.now();
      return { ...next };
    }
    const onlySwaps = current.trigger === "watch" && next.trigger === "watch" && next.revision !== undefined;
    return {
      // A retry pass holds back resources still backing off; merged with any other trigger, it must not
      // hold back a change from git, so the other trigger names the pass.
      trigger: next.trigger === "retry" ? current.trigger : next.trigger,
      immediate: Boolean(current.immediate || next.immediate),
      reassert: Boolean(current.reassert || next.reassert),
      ...(current.heal || next.heal
        ? { heal: [...new Set([...(current.heal ?? []), ...(next.heal ?? [])])] }
        : {}),
      ...(onlySwaps ? { revision: next.revision } : {}),
      ...allowDeletesOf(current, next),
    };
  }

  /** (Re)arms the quiet timer: fire after a quiet `quietMs`, but no later than `maxQuietMs`. */
  private awaitQuiet(): void {
    this.cancelQuiet?.();
    const waited = this.clock.now() - this.pendingSince;
    const delay = Math.max(0, Math.min(this.quietMs, this.maxQuietMs - waited));
    this.cancelQuiet = this.clock.after(delay, () => {
      this.cancelQuiet = undefined;
      this.startNow();
    });
  }

  private startNow(): void {
    this.cancelQuiet?.();
    this.cancelQuiet = undefined;
    const request = this.pending;
    this.pending = undefined;
    if (!request || this.stopped || !this.deps.leadership.isLeader()) return;
    // Link swaps seen while a pass ran, to the revision that pass read (the webhook came first).
    if (this.isOldSwap(request)) return;
    this.running = this.run(request).finally(() => {
      this.running = undefined;
      this.runningRevision = undefined;
      this.runningTrigger = undefined;
      this.abort = undefined;
      // Triggers that came during the pass: one more pass, at once, on the newest revision.
      if (this.pending && !this.stopped) this.startNow();
    });
  }

  private async run(request: PassRequest): Promise<void> {
    this.passes++;
    this.runningTrigger = request.trigger;
    const passId = randomUUID();
    const logger = this.deps.logger.child({ pass: passId, trigger: request.trigger });
    this.abort = new AbortController();
    this.cancelRetry?.();
    this.cancelRetry = undefined;
    const started = performance.now();
    try {
      this.runningRevision = await this.deps.currentRevision();
      this.lastRevision = this.runningRevision;
      const held = new Set<string>();
      const result = await this.deps.reconciler.pass({
        trigger: request.trigger,
        reassert: request.reassert ?? false,
        ...(request.heal ? { heal: request.heal } : {}),
        ...(request.allowDeletes === undefined ? {} : { allowDeletes: request.allowDeletes }),
        signal: this.abort.signal,
        logger,
        ...(this.allowCreate.length > 0 ? { allowCreate: this.allowCreate } : {}),
        ...(request.trigger === "retry" ? { hold: this.holdWaiting(this.clock.now(), held) } : {}),
      });
      this.superseded = 0;
      logger.info(
        {
          revision: result.revision,
          durationMs: Math.round(performance.now() - started),
          ok: result.ok,
          resources: result.statuses.length,
          notSynced: result.statuses.filter((s) => s.status !== "Synced").length,
          manifestErrors: result.manifestErrors,
          aborted: this.abort.signal.aborted,
        },
        "pass finished",
      );
      this.deps.onPass(result, request.trigger, request.heal ?? []);
      // Only a resource to retry can be backing off (and held by a retry pass).
      this.lastStatuses = new Map();
      for (const s of result.statuses) if (s.next === "retry") this.lastStatuses.set(resourceId(s), s);
      this.scheduleRetry(this.backoff.record(result.statuses, this.clock.now(), held));
    } catch (error) {
      // The revision was swapped and the old worktree deleted under the pass: read the new one. Capped,
      // so that a folder that is simply missing is reported as an error rather than spinning.
      if (this.deps.isSuperseded(error) && this.superseded < MAX_SUPERSEDED) {
        this.superseded++;
        logger.info({ revision: this.runningRevision, reason: messageOf(error) }, "pass superseded");
        // The pass that starts again answers the operator who asked for this one: it keeps the allowance.
        this.pending = this.merge(this.pending, {
          trigger: "superseded",
          immediate: true,
          ...allowDeletesOf(request),
        });
        return;
      }
      this.superseded = 0;
      logger.error(
        { err: error, revision: this.runningRevision, durationMs: Math.round(performance.now() - started) },
        "pass failed",
      );
      this.deps.onPassError(error);
      this.scheduleRetry(this.backoff.recordPassFailure(this.clock.now()));
    }
  }

  /** In a retry pass, each resource still backing off keeps its last status and is not sent again. */
  private holdWaiting(now: number, held: Set<string>): (id: string) => ResourceStatus | undefined {
    return (id) => {
      const status = this.backoff.isWaiting(id, now) ? this.lastStatuses.get(id) : undefined;
      if (status) held.add(id);
      return status;
    };
  }

  private scheduleRetry(dueAt: number | undefined): void {
    this.cancelRetry?.();
    this.cancelRetry = undefined;
    if (dueAt === undefined || this.stopped) return;
    this.cancelRetry = this.clock.after(Math.max(0, dueAt - this.clock.now()), () => {
      this.cancelRetry = undefined;
      this.request({ trigger: "retry", immediate: true });
    });
  }
}
