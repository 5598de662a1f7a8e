import { z } from "zod";
import { manifestDocument, Uuid } from "../fields.js";

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^([1-9][0-9]{0,8})(s|m|h|d)$/;

/** Milliseconds of a duration like `90m`, `26h`, `2d` (units s, m, h, d); undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (!match) return undefined;
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

export const Duration = z.string({ error: "must be a duration like 90m, 26h or 2d" }).regex(DURATION, {
  error: "must be a duration like 90m, 26h or 2d (a positive whole number and s, m, h or d)",
});

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
