import { isApiError, messageOf } from "../errors.js";
import type { ManifestOf } from "../manifests/manifest.js";
import { notFoundHint } from "../manifests/not-found.js";
import { maxAgeMs } from "../manifests/specs/backup-watch.js";
import type { PlatformClient } from "../platform/client.js";
import type { BackupAnswer } from "../platform/management.js";
import { resultOf } from "../resources.js";
import type { WatchStatus } from "./status-board.js";

export type BackupPollDeps = {
  platform: PlatformClient;
  /** Milliseconds since the epoch; default Date.now. */
  now?: () => number;
  signal?: AbortSignal;
};

/** The newest finished backup of a service, as the metrics show it. */
export type NewestBackup = { finishedAt: number; sizeInBytes?: number; durationInSeconds?: number };

/**
 * What one backup poll found: the status to show, and the figures for the metrics. `failed`: the
 * newest backup that ended, ended in an error (no backup finished well since).
 */
export type BackupPoll = { status: WatchStatus; newest?: NewestBackup; stale?: boolean; failed?: boolean };

/**
 * Lists the backups of one BackupWatch's service and finds the newest finished one
 * (docs/platform-apis.md#backups). The platform says "most recent first", but the newest is found by
 * `finishedAt` so that an unfinished or out-of-order entry cannot hide it; with the published
 * contract's `status`, only a `done` backup counts (an `error` or `in_progress` one never does), and the
 * newest `error` is shown. Stale (a Warning) when the newest done one is older than `maxAge`, or when
 * there is none; a Warning too when a backup failed after it.
 */
export async function pollBackups(
  watch: ManifestOf<"BackupWatch">,
  deps: BackupPollDeps,
): Promise<BackupPoll> {
  const now = deps.now?.() ?? Date.now();
  const base = {
    kind: watch.kind,
    name: watch.name,
    organization: watch.spec.organizationId,
    polledAt: new Date(now).toISOString(),
  };
  const { organizationId, serviceId, maxAge } = watch.spec;
  let backups: BackupAnswer[];
  let requestId: string | undefined;
  try {
    ({ result: backups, requestId } = await deps.platform.call(
      "listBackups",
      { organizationId, serviceId },
      undefined,
      { priority: "poll", ...(deps.signal ? { signal: deps.signal } : {}) },
    ));
  } catch (error) {
    return {
      status: {
        ...base,
        ...resultOf(watch, "poll-failed", {
          message: `cannot list the backups of service ${serviceId}: ${messageOf(error)}${notFoundHint(watch.kind, error)}`,
          requestId: isApiError(error) ? error.context.requestId : undefined,
        }),
      },
    };
  }
  const newest = newestFinished(backups.filter((b) => b.status == null || b.status === "done"));
  const failure = newestFinished(backups.filter((b) => b.status === "error"));
  const failed = failure !== undefined && (!newest || failure.finishedAt > newest.finishedAt);
  const ageMs = newest ? now - newest.finishedAt : undefined;
  const stale = ageMs === undefined || ageMs > maxAgeMs(watch.spec);
  const message = [
    !newest
      ? `no finished backup of service ${serviceId}`
      : stale
        ? `newest backup finished ${iso(newest.finishedAt)} (${hours(ageMs ?? 0)} ago), older than maxAge ${maxAge}`
        : undefined,
    failed ? `the newest backup, finished ${iso(failure.finishedAt)}, failed` : undefined,
  ]
    .filter(Boolean)
    .join("; ");
  return {
    ...(newest ? { newest } : {}),
    stale,
    failed,
    status: {
      ...base,
      ...resultOf(watch, stale || failed ? "watch-finding" : "in-sync", { message, requestId }),
      observed: {
        finishedAt: newest ? iso(newest.finishedAt) : null,
        sizeInBytes: newest?.sizeInBytes ?? null,
        durationInSeconds: newest?.durationInSeconds ?? null,
        ageSeconds: ageMs === undefined ? null : Math.round(ageMs / 1000),
        stale,
        lastError: failure ? iso(failure.finishedAt) : null,
      },
    },
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The newest of `backups` by finish time (a failed one that names none, by its start). */
function newestFinished(backups: readonly BackupAnswer[]): NewestBackup | undefined {
  let newest: NewestBackup | undefined;
  for (const backup of backups) {
    const time = backup.finishedAt ?? (backup.status === "error" ? backup.startedAt : undefined);
    const finishedAt = time ? Date.parse(time) : Number.NaN;
    if (Number.isNaN(finishedAt) || (newest && newest.finishedAt >= finishedAt)) continue;
    newest = {
      finishedAt,
      ...(typeof backup.sizeInBytes === "number" ? { sizeInBytes: backup.sizeInBytes } : {}),
      ...(typeof backup.durationInSeconds === "number"
        ? { durationInSeconds: backup.durationInSeconds }
        : {}),
    };
  }
  return newest;
}

const hours = (ms: number) => `${(ms / 3_600_000).toFixed(1)}h`;
