import { randomUUID } from "node:crypto";
import type { Backup } from "./model.js";

/** A finished backup of a service, as the platform lists it; the bucket is the default fixture's. */
export function newBackup(
  serviceId: string,
  finishedAt: Date,
  { id = randomUUID(), durationInSeconds = 420, sizeInBytes = 52_428_800 } = {},
): Backup {
  const finished = finishedAt.toISOString();
  return {
    id,
    serviceId,
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
