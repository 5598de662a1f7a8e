import type { Registry } from "prom-client";
import { type Credential, readCredential } from "../credentials.js";
import { causeOf, errnoOf, isSupersededError, messageOf } from "../errors.js";
import type { Leadership } from "../leader/leadership.js";
import type { Manifest } from "../manifests/manifest.js";
import type { Notifier } from "../notify/notifier.js";
import type { PlatformClient } from "../platform/client.js";
import type { Reconciler } from "../reconcile/types.js";
import { resourceId } from "../resources.js";
import type { Records } from "../state/saved-records.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import { PassMetrics } from "../telemetry/pass-metrics.js";
import type { Clock } from "./clock.js";
import { ReadRounds } from "./drift-reads.js";
import { DEFAULT_READ_CAPS, type KeyOf, READ_SPREAD, type ReadCaps, readCapsOf } from "./drift-schedule.js";
import {
  type HttpServer,
  type HttpServerLimits,
  type ReconcileRequest,
  type SwitchAnswer,
  type SwitchRequest,
  startHttpServer,
} from "./http-server.js";
import { PassLoop } from "./pass-loop.js";
import { PassWaiters } from "./pass-waiters.js";
import { Poller } from "./polls.js";
import { periodOf, type Schedules, startSchedules } from "./schedules.js";
import { type SourceWatcher, watchSource } from "./source-watcher.js";
import { StatusBoard, type StatusDocument } from "./status-board.js";
import { Suspension } from "./suspension.js";

export type DaemonSettings = {
  /** The manifests folder (a plain folder, or a git-sync link). */
  manifests: string;
  /** host:port of the HTTP server; port 0 takes any free port. */
  listen: string;
  reconcileSchedule: string;
  pollSchedule: string;
  /** Cron of re-assertions of unchanged resources, or "off". */
  reassertSchedule: string;
  webhookToken?: Credential;
  /** Bearer token GET /status requires; unset: /status is open. */
  statusToken?: Credential;
  /** Quiet time a burst of file events waits before its pass; unset: the pass loop's default. */
  quietMs?: number;
  /** Time-outs and caps of the HTTP server; unset: its defaults. */
  httpLimits?: Partial<HttpServerLimits>;
  /** Alert states in which driftless_alert_firing is 1 (any case); unset: the setting's default. */
  alertFiringStates?: readonly string[];
  /** DRIFTLESS_READS=on: read each managed object on the poll schedule, to verify it and find drift. */
  reads?: "on" | "off";
  /** Reads per round per credential; unset: what the poll period fits (drift-schedule.ts, readCapsOf). */
  readCaps?: ReadCaps;
  /** What /status says driftless reconciles: "simulator", or the platform's origin; unset: not said. */
  platform?: string;
};

export type DaemonDeps = {
  settings: DaemonSettings;
  reconciler: Reconciler;
  leadership: Leadership;
  /** The valid manifests of the current revision, for the polls. */
  loadManifests: () => Promise<readonly Manifest[]>;
  /**
   * Tile key → server tile id of a Dashboard (by manifest name), as the reconciler last loaded or saved
   * them: a poll round never loads the state.
   */
  tileIdsOf: (dashboardName: string) => Promise<Record<string, string> | undefined>;
  /** The records as the reconciler last loaded or saved them, for the read rounds (SavedRecords). */
  records?: () => Promise<Records>;
  /** The management key an organization's requests go with, for the reads' caps; unset: one per organization. */
  keyOf?: KeyOf;
  /** Polls alerts and backups through it. */
  platform: PlatformClient;
  registry: Registry;
  metrics: Metrics;
  logger: Logger;
  /** Told of every finished pass of this leader (webhook, commit status); unset: none is configured. */
  notifier?: Pick<Notifier, "passFinished"> & Partial<Pick<Notifier, "drift">>;
  /** Each API's rate budget now, for /status and the page. */
  budget?: () => StatusDocument["budget"];
  /** `driftless suspend` / `resume`; the reconciler must be given the same one (default: a new one). */
  suspension?: Suspension;
  /** Resources allowed one new create attempt, in the first pass that finishes (DRIFTLESS_ALLOW_CREATE). */
  allowCreate?: readonly string[];
  /** The pass loop's time (settle waits, retries); default the system's. */
  clock?: Clock;
  /** Told the HTTP server's bound address (`host:port`) as soon as it listens, before any pass. */
  onListening?: (address: string) => void;
};

export type Daemon = {
  /** The HTTP server's bound address, `host:port`. */
  address: string;
  loop: PassLoop;
  board: StatusBoard;
  /**
   * Runs one poll round now, or joins the one already running (rounds run on the poll schedule and
   * after the first pass of each leadership term too).
   */
  poll(): Promise<void>;
  /**
   * Stops taking work, gives the running pass `graceMs` to finish its in-flight requests and record
   * them, then closes the HTTP server. Resolves false when the pass did not end in time.
   */
  stop(graceMs: number): Promise<boolean>;
};

/**
 * `driftless run` without the process around it: triggers (file watch, webhook, schedules) feed one
 * pass loop; polls keep alert and backup metrics; the HTTP server shows all of it. Throws when the
 * HTTP address cannot be bound or a schedule is invalid.
 */
export async function startDaemon(deps: DaemonDeps): Promise<Daemon> {
  let loop: PassLoop | undefined;
  const reader = deps.settings.reads === "on" ? createReadRounds(deps, () => parts) : undefined;
  const parts: Parts = {
    board: new StatusBoard(reader),
    passMetrics: new PassMetrics(deps.metrics),
    suspension: deps.suspension ?? new Suspension(),
    ...(reader ? { reader } : {}),
    waiters: new PassWaiters(),
  };
  let watcher: SourceWatcher | undefined;
  const polls = createPolls(deps, parts, () => loop);
  loop = createPassLoop(deps, parts, polls, async () => watcher?.currentRevision());
  const stopFollowing = followLeadership(deps, parts, polls);
  const server = await startServer(deps, parts, loop);

  let schedules: Schedules;
  try {
    watcher = await watchManifests(deps, loop);
    schedules = startTriggerSchedules(deps, loop, polls);
  } catch (error) {
    stopFollowing();
    await watcher?.close();
    await server.close(0);
    throw error;
  }

  loop.request({ trigger: "start", immediate: true });
  const started = loop;
  return {
    address: server.address,
    loop: started,
    board: parts.board,
    poll: polls.poll,
    async stop(graceMs) {
      schedules.stop();
      stopFollowing();
      polls.abort();
      await watcher?.close();
      const ended = await started.stop(graceMs);
      parts.waiters.close();
      await server.close(1_000);
      return ended;
    },
  };
}

/** What the steps of startDaemon share: the /status board, the pass and resource metrics, the reads. */
type Parts = {
  board: StatusBoard;
  passMetrics: PassMetrics;
  suspension: Suspension;
  waiters: PassWaiters;
  reader?: ReadRounds;
};

/**
 * The read rounds' reader: a drift found is told (webhook); the round then asks for a pass that
 * re-sends the drifts to correct (after changes from git: a re-sent request waits at the poll priority).
 */
function createReadRounds(deps: DaemonDeps, parts: () => Parts): ReadRounds {
  // No schedule (rounds only on demand): a minute's caps, all at once.
  const period = periodOf(deps.settings.pollSchedule);
  return new ReadRounds({
    platform: deps.platform,
    metrics: deps.metrics,
    logger: deps.logger,
    records: deps.records ?? (async () => ({})),
    // A round's reads are spread over most of the poll period (see ReadRoundsDeps.spreadMs), ending
    // before the next round is due, and are as many as the budget grants reads over that time.
    caps: deps.settings.readCaps ?? (period ? readCapsOf(period) : DEFAULT_READ_CAPS),
    ...(deps.keyOf ? { keyOf: deps.keyOf } : {}),
    spreadMs: READ_SPREAD * (period ?? 0),
    onDrift: (drift) => {
      const id = resourceId(drift);
      const { board } = parts();
      const status = board.statuses().find((s) => resourceId(s) === id);
      if (status) deps.notifier?.drift?.(status, drift.fields, drift.action);
    },
  });
}

type Polls = {
  /** Runs one poll round now, or joins the one already running. */
  poll(): Promise<void>;
  /** poll() whose failure is logged, for the schedule and the round after a pass. */
  pollSafely(): Promise<void>;
  /** After a pass: the first pass of a term polls at once, not a whole poll period later. */
  afterPass(): void;
  /** A new leadership term starts with no alert or backup figures: poll again after its first pass. */
  newTerm(): void;
  /** Removes this replica's poll figures. */
  clear(): void;
  abort(): void;
};

function createPolls(deps: DaemonDeps, parts: Parts, loop: () => PassLoop | undefined): Polls {
  const { leadership, logger } = deps;
  const { board, passMetrics, reader } = parts;
  const { alertFiringStates } = deps.settings;
  const poller = new Poller({ ...deps, ...(alertFiringStates ? { firingStates: alertFiringStates } : {}) });
  const aborted = new AbortController();
  let firstOfTerm = true;
  // The alert and read rounds of one tick read the manifests once.
  const manifests = joined(deps.loadManifests);

  async function round(): Promise<void> {
    if (!leadership.isLeader() || aborted.signal.aborted) return;
    const current = await manifests();
    const [statuses, live] = await Promise.all([
      poller.poll(current, aborted.signal),
      poller.alertStates(current, aborted.signal),
    ]);
    // Leadership was lost while the round ran: its figures belong to the new leader now.
    if (!leadership.isLeader()) return poller.clear();
    board.recordWatches(statuses);
    board.recordLive(live);
    passMetrics.recordStatuses(board.statuses());
  }
  // A round already running answers a new request too: the first round after the first pass and
  // daemon.poll() are not croner's, whose `protect` only keeps the schedule from overlapping itself.
  const alerts = joined(round);
  // Read rounds run beside the alert and backup polls, never in their way: a read round that outlasts
  // a poll period (its reads wait last in the budget) is joined, not started again, and the schedule's
  // next alert round does not wait for it.
  const readRound = reader ? readRoundOf(deps, parts, reader, loop, manifests, aborted.signal) : undefined;
  const reads = joined(async () => {
    await readRound?.().catch((error) =>
      logger.warn({ err: error, reason: messageOf(error) }, "read round failed"),
    );
  });
  const poll = async () => {
    await Promise.all([alerts(), reads()]);
  };
  const pollSafely = () => {
    void reads();
    return alerts().catch((error) =>
      logger.warn({ err: error, reason: messageOf(error) }, "poll round failed"),
    );
  };
  return {
    poll,
    pollSafely,
    afterPass() {
      if (!firstOfTerm) return;
      firstOfTerm = false;
      void pollSafely();
    },
    newTerm() {
      firstOfTerm = true;
    },
    clear: () => {
      poller.clear();
      reader?.forget();
    },
    abort: () => aborted.abort(new Error("shutting down")),
  };
}

/** `run`, joined by the calls made while one is in flight instead of started again. */
function joined<T>(run: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | undefined;
  return () => {
    inFlight ??= run().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}

/**
 * One read round (reads on): the resources the last pass left Synced, this round's share of them; the
 * drifts to correct are then put back by one pass.
 */
function readRoundOf(
  { leadership }: DaemonDeps,
  { board, passMetrics }: Parts,
  reader: ReadRounds,
  loop: () => PassLoop | undefined,
  manifests: () => Promise<readonly Manifest[]>,
  signal: AbortSignal,
): () => Promise<void> {
  return async () => {
    if (!leadership.isLeader() || signal.aborted) return;
    const byId = new Map((await manifests()).map((m) => [resourceId(m), m]));
    const synced = board.passStatuses().flatMap((s) => {
      const manifest = s.status === "Synced" ? byId.get(resourceId(s)) : undefined;
      return manifest ? [{ manifest, lastAppliedAt: s.lastAppliedAt }] : [];
    });
    // An answer counts only while nothing was applied meanwhile: a pass that ran (or waits to run)
    // may have applied a change from git that the manifests read above do not show yet, or the read not.
    const stillApplied = (id: string, lastAppliedAt: string | undefined) => {
      const now = board.passStatusOf(id);
      return (
        leadership.isLeader() &&
        now?.status === "Synced" &&
        now.lastAppliedAt === lastAppliedAt &&
        loop()?.changePending === false
      );
    };
    const heal = await reader.round(synced, stillApplied, signal);
    if (!leadership.isLeader()) return;
    passMetrics.recordStatuses(board.statuses());
    // One pass puts back every drift of the round, after the round: the reads still in flight when
    // the first drift was found are not judged against a pass running meanwhile.
    if (heal.length > 0) loop()?.request({ trigger: "drift", immediate: true, heal });
  };
}

/** The pass loop, reporting each pass to the board and the metrics while this replica leads. */
function createPassLoop(
  deps: DaemonDeps,
  { board, passMetrics, reader, waiters }: Parts,
  polls: Polls,
  currentRevision: () => Promise<string | undefined>,
): PassLoop {
  const { leadership } = deps;
  const loop: PassLoop = new PassLoop({
    reconciler: deps.reconciler,
    leadership,
    logger: deps.logger,
    currentRevision,
    ...(deps.settings.quietMs !== undefined ? { quietMs: deps.settings.quietMs } : {}),
    ...(deps.allowCreate ? { allowCreate: deps.allowCreate } : {}),
    ...(deps.clock ? { clock: deps.clock } : {}),
    isSuperseded,
    onPass: (result, trigger, healed) => {
      // A pass that ran on when leadership was lost speaks for nothing: the new leader reports now.
      if (!leadership.isLeader()) return;
      board.recordPass(result, trigger);
      for (const id of healed) if (board.passStatusOf(id)?.status === "Synced") reader?.corrected(id);
      passMetrics.recordPass(result);
      passMetrics.recordStatuses(board.statuses());
      deps.notifier?.passFinished(result);
      polls.afterPass();
      waiters.ended(loop.passCount, { ok: result.ok });
    },
    onPassError: (error) => {
      if (!leadership.isLeader()) return;
      board.recordPassError(error);
      passMetrics.recordPassError();
      waiters.ended(loop.passCount, { ok: false, error: messageOf(error) });
    },
  });
  return loop;
}

/** Keeps the leader gauge current and drops this replica's figures when it stops leading. */
function followLeadership(
  deps: DaemonDeps,
  { board, passMetrics, suspension }: Parts,
  polls: Polls,
): () => void {
  const { leadership, metrics, logger } = deps;
  metrics.leader.set(leadership.isLeader() ? 1 : 0);
  return leadership.onChange((leader) => {
    metrics.leader.set(leader ? 1 : 0);
    // The new leader passes and polls now; this replica's last figures would soon be stale, and would
    // keep alerts such as "a resource is Failed" firing after the new leader fixed it.
    if (leader) {
      polls.newTerm();
    } else {
      polls.clear();
      board.forget();
      passMetrics.forget();
      suspension.forget();
    }
    logger.info({ leader }, leader ? "leadership acquired" : "leadership lost");
  });
}

async function startServer(
  deps: DaemonDeps,
  { board, suspension, waiters }: Parts,
  loop: PassLoop,
): Promise<HttpServer> {
  const { settings, leadership, logger } = deps;
  const status = () =>
    board.snapshot(leadership.isLeader(), {
      ...(settings.platform ? { platform: settings.platform } : {}),
      suspended: suspension.current,
      budget: deps.budget?.() ?? [],
    });
  const server = await startHttpServer(settings.listen, {
    registry: deps.registry,
    ready: () => board.ready || !leadership.isLeader(),
    status,
    webhookToken: () => readCredential(settings.webhookToken),
    statusToken: () => readCredential(settings.statusToken),
    onSwitch: (request) => operatorSwitch(deps, suspension, loop, request),
    onReconcile: (asked) => operatorPass(deps, loop, waiters, status, asked),
    onHook: (revision) =>
      loop.request({ trigger: "webhook", immediate: true, ...(revision ? { revision } : {}) }),
    logger,
    ...(settings.httpLimits ? { limits: settings.httpLimits } : {}),
  });
  deps.onListening?.(server.address);
  logger.info({ address: server.address }, "listening");
  return server;
}

/** The answer of a follower to an operator's request: only the leader writes the state and passes. */
const NOT_LEADER: SwitchAnswer = {
  code: 503,
  body: { error: "this replica is not the leader: send it to the leader's pod (its driftless_leader is 1)" },
};

/** How long `POST /suspend` and `/resume` wait for the state to record the change before answering. */
const SWITCH_SAVE_WAIT_MS = 5_000;

/**
 * Suspends or resumes every write: at once in memory (the running pass sends nothing more), then a pass
 * saves it in the state. Only the leader writes the state, so a follower refuses.
 */
async function operatorSwitch(
  { leadership, logger }: DaemonDeps,
  suspension: Suspension,
  loop: PassLoop,
  request: SwitchRequest,
): Promise<SwitchAnswer> {
  if (!leadership.isLeader()) return NOT_LEADER;
  if (request.action === "suspend") {
    suspension.suspend(request.reason, new Date());
    logger.warn({ reason: request.reason }, "suspended: no write is sent until resume");
  } else {
    suspension.resume();
    logger.info("resumed: writes are sent again");
  }
  loop.request({ trigger: "operator", immediate: true });
  const saved = await suspension.whenSaved(SWITCH_SAVE_WAIT_MS);
  // A suspend answers once no write of driftless's is under way: nothing more reaches the platform.
  const quiet = request.action === "resume" || (await suspension.whenWritesDone(SWITCH_SAVE_WAIT_MS));
  const warnings = [
    ...(saved
      ? []
      : ["in effect now, but not saved in the state yet: a restart before the next pass forgets it"]),
    ...(quiet
      ? []
      : [
          "a write sent before the suspend still waits for its answer (it cannot be called back); nothing more is sent",
        ]),
  ];
  return {
    code: saved && quiet ? 200 : 202,
    body: {
      suspended: suspension.current ?? null,
      saved,
      ...(warnings.length > 0 ? { warning: warnings.join("; ") } : {}),
    },
  };
}

/** How long `POST /reconcile` waits for its pass (a pass waiting on the platform's rate limits is slow). */
const RECONCILE_WAIT_MS = 10 * 60_000;

/**
 * `driftless reconcile`: a pass now (or, when one is running, right after it), answered with the
 * status once that pass has ended; with `--allow-deletes N`, that pass alone may send up to N deletes
 * the mass-deletion guard holds. Only the leader passes, so a follower refuses.
 */
async function operatorPass(
  { leadership, logger }: DaemonDeps,
  loop: PassLoop,
  waiters: PassWaiters,
  status: () => StatusDocument,
  { allowDeletes }: ReconcileRequest,
): Promise<SwitchAnswer> {
  if (!leadership.isLeader()) return NOT_LEADER;
  const after = loop.passCount;
  const ended = waiters.wait(after, RECONCILE_WAIT_MS);
  logger.info({ allowDeletes }, "reconcile asked for: a pass now");
  loop.request({
    trigger: "operator",
    immediate: true,
    ...(allowDeletes === undefined ? {} : { allowDeletes }),
  });
  const end = await ended;
  if (!end) {
    return {
      code: 504,
      body: {
        error: `the pass did not end within ${RECONCILE_WAIT_MS / 60_000} minutes (or the daemon is stopping); driftless status shows its result once it ends`,
      },
    };
  }
  return { code: 200, body: { ok: end.ok, ...(end.error ? { error: end.error } : {}), status: status() } };
}

function watchManifests(deps: DaemonDeps, loop: PassLoop): Promise<SourceWatcher> {
  const { logger } = deps;
  return watchSource(
    deps.settings.manifests,
    (change) => {
      logger.debug({ revision: change.revision, path: change.path }, "manifests changed");
      loop.request({ trigger: "watch", ...(change.revision ? { revision: change.revision } : {}) });
    },
    logger,
  );
}

function startTriggerSchedules(deps: DaemonDeps, loop: PassLoop, polls: Polls): Schedules {
  const { settings } = deps;
  return startSchedules(
    [
      {
        name: "reconcile",
        pattern: settings.reconcileSchedule,
        run: () => loop.request({ trigger: "schedule", immediate: true }),
      },
      { name: "poll", pattern: settings.pollSchedule, run: polls.pollSafely },
      {
        name: "reassert",
        pattern: settings.reassertSchedule,
        run: () => loop.request({ trigger: "reassert", immediate: true, reassert: true }),
      },
    ],
    deps.logger,
  );
}

/**
 * True when a pass failed because its files vanished under it: git-sync deleted the worktree it was
 * reading after swapping the link. The next pass reads the new revision.
 */
export function isSuperseded(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 10; e = causeOf(e), depth++) {
    const code = errnoOf(e);
    if (code === "ENOENT" || code === "ENOTDIR" || isSupersededError(e)) return true;
  }
  return false;
}
