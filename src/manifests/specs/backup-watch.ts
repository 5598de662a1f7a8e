import { z } from "zod";
import { Duration, parseDuration } from "../../duration.js";
import { manifestDocument, Uuid } from "../fields.js";

/**
 * GET /v1/organizations/{organizationId}/services/{serviceId}/backups, polled; the service's backup
 * is stale when the newest finished one is older than `maxAge`.
 */
export const BackupWatchSpec = z.strictObject({
  organizationId: Uuid,
  serviceId: Uuid,
  maxAge: Duration,
});
export type BackupWatchSpec = z.infer<typeof BackupWatchSpec>;

export const BackupWatch = manifestDocument("BackupWatch", BackupWatchSpec);
export type BackupWatch = z.infer<typeof BackupWatch>;

/** `maxAge` of a validated spec in milliseconds. */
export const maxAgeMs = (spec: BackupWatchSpec): number => parseDuration(spec.maxAge) ?? 0;
