import type { Registry } from "prom-client";
import { type Credential, readCredential } from "../config.js";
import { messageOf } from "../errors.js";
import type { Leadership } from "../leader/leadership.js";
import type { Manifest } from "../manifests/manifest.js";
import type { PlatformClient } from "../platform/client.js";
import type { Reconciler } from "../reconcile/types.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import { PassMetrics } from "../telemetry/pass-metrics.js";
import { startHttpServer } from "./http-server.js";
import { PassLoop } from "./pass-loop.js";
import { Poller } from "./polls.js";
import { startSchedules } from "./schedules.js";
import { watchSource } from "./source-watcher.js";
import { StatusBoard } from "./status-board.js";

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
  /** Quiet time a burst of file events waits before its pass; default 150 ms. */
  settleMs?: number;
};

export type DaemonDeps = {
  settings: DaemonSettings;
  reconciler: Reconciler;
  leadership: Leadership;
  /** The valid manifests of the current revision, for the polls. */
  loadManifests: () => Promise<readonly Manifest[]>;
  /** Tile key → server tile id of a Dashboard (by manifest name), from the state store. */
  tileIdsOf: (dashboardName: string) => Promise<Record<string, string> | undefined>;
  /** Polls alerts and backups through it. */
  platform: PlatformClient;
  registry: Registry;
  metrics: Metrics;
  logger: Logger;
  /** Resources allowed one new create attempt, in the first pass that finishes (DRIFTLESS_ALLOW_CREATE). */
  allowCreate?: readonly string[];
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
  const { settings, leadership, logger, metrics } = deps;
  const board = new StatusBoard();
  const passMetrics = new PassMetrics(metrics);
  const poller = new Poller({ ...deps });
  const polls = new AbortController();
  let firstPoll = true;

  let polling: Promise<void> | undefined;
  // A round already running answers a new request too: the first round after the first pass and
  // daemon.poll() are not croner's, whose `protect` only keeps the schedule from overlapping itself.
  function poll(): Promise<void> {
    polling ??= pollRound().finally(() => {
      polling = undefined;
    });
    return polling;
  }

  async function pollRound(): Promise<void> {
    if (!leadership.isLeader() || polls.signal.aborted) return;
    const manifests = await deps.loadManifests();
    const statuses = await poller.poll(manifests, polls.signal);
    // Leadership was lost while the round ran: its figures belong to the new leader now (see onChange).
    if (!leadership.isLeader()) return poller.clear();
    board.recordWatches(statuses);
    passMetrics.recordStatuses(board.statuses());
  }
  const pollSafely = () =>
    poll().catch((error) => logger.warn({ err: error, reason: messageOf(error) }, "poll round failed"));

  let watcher: Awaited<ReturnType<typeof watchSource>> | undefined;
  const loop = new PassLoop({
    reconciler: deps.reconciler,
    leadership,
    logger,
    currentRevision: async () => watcher?.currentRevision(),
    settleMs: settings.settleMs ?? 150,
    ...(deps.allowCreate ? { allowCreate: deps.allowCreate } : {}),
    isSuperseded,
    onPass: (result, trigger) => {
      // A pass that ran on when leadership was lost speaks for nothing: the new leader reports now.
      if (!leadership.isLeader()) return;
      board.recordPass(result, trigger);
      passMetrics.recordPass(result);
      passMetrics.recordStatuses(board.statuses());
      // Alert and backup metrics right after the first pass, not a whole poll period later.
      if (firstPoll) {
        firstPoll = false;
        void pollSafely();
      }
    },
    onPassError: (error) => {
      if (!leadership.isLeader()) return;
      board.recordPassError(error);
      passMetrics.recordPassError();
    },
  });

  metrics.leader.set(leadership.isLeader() ? 1 : 0);
  const removeLeaderListener = leadership.onChange((leader) => {
    metrics.leader.set(leader ? 1 : 0);
    // The new leader passes and polls now; this replica's last figures would soon be stale, and would
    // keep alerts such as "a resource is Failed" firing after the new leader fixed it.
    if (!leader) {
      poller.clear();
      board.forget();
      passMetrics.forget();
    } else {
      // A new term starts with no alert or backup figures: poll after its first pass, as at start.
      firstPoll = true;
    }
    logger.info({ leader }, leader ? "leadership acquired" : "leadership lost");
  });

  const server = await startHttpServer(settings.listen, {
    registry: deps.registry,
    ready: () => board.ready || !leadership.isLeader(),
    status: () => board.snapshot(leadership.isLeader()),
    webhookToken: () => readCredential(settings.webhookToken),
    onHook: (revision) =>
      loop.request({ trigger: "webhook", immediate: true, ...(revision ? { revision } : {}) }),
    logger,
  });
  logger.info({ address: server.address }, "listening");

  let schedules: ReturnType<typeof startSchedules> | undefined;
  try {
    watcher = await watchSource(
      settings.manifests,
      (change) => {
        logger.debug({ revision: change.revision, path: change.path }, "manifests changed");
        loop.request({ trigger: "watch", ...(change.revision ? { revision: change.revision } : {}) });
      },
      logger,
    );
    schedules = startSchedules(
      [
        {
          name: "reconcile",
          pattern: settings.reconcileSchedule,
          run: () => loop.request({ trigger: "schedule", immediate: true }),
        },
        { name: "poll", pattern: settings.pollSchedule, run: pollSafely },
        {
          name: "reassert",
          pattern: settings.reassertSchedule,
          run: () => loop.request({ trigger: "reassert", immediate: true, reassert: true }),
        },
      ],
      logger,
    );
  } catch (error) {
    await watcher?.close();
    await server.close(0);
    throw error;
  }

  loop.request({ trigger: "start", immediate: true });

  return {
    address: server.address,
    loop,
    board,
    poll,
    async stop(graceMs) {
      schedules?.stop();
      removeLeaderListener();
      polls.abort(new Error("shutting down"));
      await watcher?.close();
      const ended = await loop.stop(graceMs);
      await server.close(1_000);
      return ended;
    },
  };
}

/**
 * True when a pass failed because its files vanished under it: git-sync deleted the worktree it was
 * reading after swapping the link. The next pass reads the new revision.
 */
export function isSuperseded(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 10; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, name } = e as { code?: unknown; name?: unknown };
    if (code === "ENOENT" || code === "ENOTDIR" || name === "SupersededError") return true;
  }
  return false;
}
