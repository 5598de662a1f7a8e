import { Registry } from "prom-client";
import type { Config } from "../config.js";
import { type DaemonDeps, startDaemon } from "../daemon/daemon.js";
import { Suspension } from "../daemon/suspension.js";
import { parseDuration } from "../duration.js";
import { leaderOnlyStore } from "../leader/leader-only-store.js";
import { type Leadership, soleLeader } from "../leader/leadership.js";
import { loadRevision } from "../manifests/load.js";
import { createParseCache } from "../manifests/read-file.js";
import { createNotifier, type Notifier } from "../notify/notifier.js";
import { VERSION } from "../package.js";
import { DAEMON_READ_HEADROOM } from "../platform/budget.js";
import { createRead } from "../platform/client.js";
import { createReconciler } from "../reconcile/engine.js";
import { SavedRecords } from "../state/saved-records.js";
import type { StateStore } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import { createMetrics, type Metrics } from "../telemetry/metrics.js";
import { commandLogger, type Io } from "./io.js";
import {
  createPlatform,
  createStateStore,
  keySecretsOf,
  type Platform,
  secretKeyOf,
  warnOfSimulator,
} from "./platform.js";
import { checkRunSettings } from "./run-settings.js";
import { daemonUrl } from "./status.js";

/**
 * How long a running pass gets after SIGTERM/SIGINT to finish its in-flight requests and record them;
 * below Kubernetes' default 30 s grace period, so the state is saved before a SIGKILL.
 */
const SHUTDOWN_GRACE_MS = 20_000;

/**
 * `driftless run`: builds the daemon's parts from the Config, runs until SIGTERM or SIGINT, then stops
 * taking work, lets the running pass end, releases the lease, closes the state store and returns 0.
 * Throws (exit 1) when it cannot start: a bad setting (checked before anything starts), a busy address,
 * a locked or corrupt state.
 */
export async function runCommand(config: Config, io: Io): Promise<number> {
  await checkRunSettings(config, io.env);
  const logger = commandLogger(config, io, "info");
  const registry = new Registry();
  const metrics = createMetrics(registry, { build: { version: VERSION, revision: config.buildRevision } });
  const cleanups = cleanupStack(logger);

  // Listened for from the start: a signal while starting (a rollout replacing a new pod) is answered by
  // a clean stop once started, not by Node's default of dying on the spot.
  const signals = listenForSignal();
  try {
    const parts = await openParts(config, { logger, metrics }, cleanups);
    const { simulator } = parts.platform;
    metrics.simulator.set(simulator ? 1 : 0);
    const suspension = new Suspension((value) => metrics.suspended.set(value ? 1 : 0));
    const daemon = await startDaemon({
      ...daemonDeps(config, io, { ...parts, suspension }, { registry, metrics, logger }),
      // The address first, on stdout: the line a person starting driftless looks for (npm start).
      onListening: (address) => {
        io.out(listeningLine(address, simulator !== undefined));
        if (simulator) warnOfSimulator(config, simulator, logger);
      },
    });
    logStarted(config, parts.platform, logger);

    const signal = await signals.received;
    logger.info(
      { signal, graceMs: SHUTDOWN_GRACE_MS },
      "shutting down: no new work, finishing the running pass",
    );
    const ended = await daemon.stop(SHUTDOWN_GRACE_MS);
    if (!ended) logger.warn({ graceMs: SHUTDOWN_GRACE_MS }, "the running pass did not end in time");
    await cleanups.run();
    logger.info("stopped");
    return 0;
  } finally {
    signals.dispose();
    await cleanups.run();
  }
}

/** Closers run last-opened first; a failing one is logged and the others still run. */
function cleanupStack(logger: Logger): { push(cleanup: () => Promise<void>): void; run(): Promise<void> } {
  const cleanups: Array<() => Promise<void>> = [];
  return {
    push: (cleanup) => cleanups.push(cleanup),
    async run() {
      for (const cleanup of cleanups.splice(0).reverse()) {
        await cleanup().catch((error) => logger.warn({ err: error }, "shutdown step failed"));
      }
    },
  };
}

type Parts = { platform: Platform; store: StateStore; leadership: Leadership; notifier?: Notifier };

/** How long queued notifications get to go out at shutdown. */
const NOTIFY_GRACE_MS = 5_000;

/** The platform clients, the state store and the leadership, each closed by `cleanups`. */
async function openParts(
  config: Config,
  { logger, metrics }: { logger: Logger; metrics: Metrics },
  cleanups: ReturnType<typeof cleanupStack>,
): Promise<Parts> {
  // First: a webhook or GitHub setting without its credential stops the start before anything opens.
  const notifier = createNotifier(config, logger);
  if (notifier) cleanups.push(() => notifier.close(NOTIFY_GRACE_MS));
  // The read rounds leave the budgets' read headroom to changes from git.
  const platform = await createPlatform(config, {
    logger,
    metrics,
    simulatorWarning: "later",
    readHeadroom: DAEMON_READ_HEADROOM,
  });
  cleanups.push(() => platform.close());
  const store = createStateStore(config, { logger });
  cleanups.push(() => store.close());
  const leadership = await createLeadership(config, logger, metrics);
  cleanups.push(() => leadership.stop());
  // Without election this process is the only writer: a locked or corrupt state stops it now.
  if (!config.leaderElect) await store.load();
  return { platform, store, leadership, ...(notifier ? { notifier } : {}) };
}

function daemonDeps(
  config: Config,
  io: Io,
  { platform, store, leadership, notifier, suspension }: Parts & { suspension: Suspension },
  telemetry: Pick<DaemonDeps, "registry" | "metrics" | "logger">,
): DaemonDeps {
  // Passes and poll rounds read the same folder: an unchanged file is parsed once for both.
  const parseCache = createParseCache();
  // Poll rounds read the tile ids the reconciler last loaded or saved, never the state itself.
  const saved = new SavedRecords();
  leadership.onChange((leader) => {
    if (!leader) saved.forget();
  });
  return {
    settings: {
      manifests: config.manifests,
      listen: config.listen,
      reconcileSchedule: config.reconcileSchedule,
      pollSchedule: config.pollSchedule,
      reassertSchedule: config.reassertSchedule,
      alertFiringStates: config.alertFiringStates,
      reads: config.reads,
      platform: platform.name,
      ...(config.webhookToken ? { webhookToken: config.webhookToken } : {}),
      ...(config.statusToken ? { statusToken: config.statusToken } : {}),
    },
    reconciler: createReconciler({
      manifests: config.manifests,
      parseCache,
      // A pass still running when this replica loses the Lease must not write the new leader's state.
      store: saved.recording(leaderOnlyStore(store, leadership)),
      send: platform.send,
      // Reads that replace a learning request or settle a lost create; drift is the read rounds' job.
      ...(config.reads === "on" ? { read: createRead(platform.client) } : {}),
      secrets: { env: io.env, secretsDir: config.secretsDir },
      logger: telemetry.logger,
      managementKeyId: platform.managementKeyId,
      credentialVersion: platform.credentialVersion,
      ...secretKeyOf(config),
      unmanagedRetentionMs: parseDuration(config.unmanagedRetention),
      prune: config.prune === "on",
      maxDeletes: config.maxDeletes,
      keySecrets: keySecretsOf(config),
      // A create whose outcome is unknown needs a person now, not at the end of the pass.
      onResource: ({ status, cause }) => {
        if (cause === "create-unanswered") notifier?.unknownCreate(status);
      },
      suspension,
    }),
    suspension,
    budget: platform.budgets,
    leadership,
    allowCreate: config.allowCreate,
    loadManifests: async () => (await loadRevision(config.manifests, { cache: parseCache })).manifests,
    tileIdsOf: (dashboard) => saved.tileIdsOf(dashboard),
    records: () => saved.records(),
    keyOf: platform.keyOf,
    platform: platform.client,
    ...(notifier ? { notifier } : {}),
    ...telemetry,
  };
}

/** `driftless run: status page http://127.0.0.1:9464/`, and whether it reconciles the built-in simulator. */
function listeningLine(address: string, simulator: boolean): string {
  const page = `driftless run: status page ${daemonUrl({ listen: address })}/`;
  return simulator ? `${page} (against the BUILT-IN SIMULATOR, not a real platform)` : page;
}

function logStarted(config: Config, platform: Platform, logger: Logger): void {
  logger.info(
    {
      version: VERSION,
      manifests: config.manifests,
      reconcileSchedule: config.reconcileSchedule,
      pollSchedule: config.pollSchedule,
      reassertSchedule: config.reassertSchedule,
      webhook: config.webhookToken !== undefined,
      statusToken: config.statusToken !== undefined,
      leaderElect: config.leaderElect,
      simulator: platform.simulator !== undefined,
    },
    "driftless run started",
  );
}

async function createLeadership(config: Config, logger: Logger, metrics: Metrics): Promise<Leadership> {
  if (!config.leaderElect) return soleLeader();
  // Imported only here: the Kubernetes client takes seconds to load, which a single replica need not pay.
  const { kubernetesTarget } = await import("../kubernetes/client.js");
  const { createLeaseLeadership } = await import("../leader/lease.js");
  return createLeaseLeadership({
    ...kubernetesTarget(config.namespace),
    logger: logger.child({ component: "leader" }),
    metrics,
    leaseDurationSeconds: config.leaseDurationSeconds,
    renewDeadlineSeconds: config.renewDeadlineSeconds,
    retryPeriodSeconds: config.retryPeriodSeconds,
  });
}

/** The first SIGTERM or SIGINT from now on; after it (or dispose), Node's default handling is back. */
function listenForSignal(): { received: Promise<NodeJS.Signals>; dispose(): void } {
  let on: (signal: NodeJS.Signals) => void = () => {};
  const dispose = () => {
    process.off("SIGTERM", on);
    process.off("SIGINT", on);
  };
  const received = new Promise<NodeJS.Signals>((resolve) => {
    on = (signal) => {
      dispose();
      resolve(signal);
    };
    process.on("SIGTERM", on);
    process.on("SIGINT", on);
  });
  return { received, dispose };
}
