import { randomUUID } from "node:crypto";
import type { Backup, BackupStatus } from "./model.js";

/**
 * A backup of a service, as the platform lists it; the bucket is the default fixture's. `status`
 * (default done) is answered by the published contract only; its start is `durationInSeconds` before
 * `finishedAt`, which is not answered while the backup is in_progress.
 */
export function newBackup(
  serviceId: string,
  finishedAt: Date,
  {
    id = randomUUID(),
    durationInSeconds = 420,
    sizeInBytes = 52_428_800,
    status,
  }: { id?: string; durationInSeconds?: number; sizeInBytes?: number; status?: BackupStatus } = {},
): Backup {
  const finished = finishedAt.toISOString();
  return {
    id,
    serviceId,
    ...(status ? { status } : {}),
    startedAt: new Date(finishedAt.getTime() - durationInSeconds * 1000).toISOString(),
    finishedAt: finished,
    sizeInBytes,
    durationInSeconds,
    backupName: `backup-${finished.slice(0, 19).replace(/[-:T]/g, "")}`,
    bucket: {
      bucketPath: "s3://acme-backups/analytics",
      iamRoleArn: "arn:aws:iam::123456789012:role/platform-backups",
      iamRoleSessionName: "platform-backup",
    },
  };
}

/**
 * The backups a saved platform missed while no simulator ran it: for each service whose newest
 * backup is more than `everyMs` before `now`, one finished at the schedule's last slot before `now`.
 * A service without backups gets none (a fixture may mean that).
 */
export function missedBackups(backups: Backup[], everyMs: number, now: number): Backup[] {
  const newest = new Map<string, number>();
  for (const backup of backups) {
    const finished = Date.parse(backup.finishedAt);
    if (finished > (newest.get(backup.serviceId) ?? Number.NEGATIVE_INFINITY)) {
      newest.set(backup.serviceId, finished);
    }
  }
  return [...newest]
    .filter(([, finished]) => now - finished > everyMs)
    .map(([serviceId, finished]) => {
      const lastSlot = finished + Math.floor((now - finished) / everyMs) * everyMs;
      return newBackup(serviceId, new Date(lastSlot));
    });
}
