import { readFileSync } from "node:fs";
import { z } from "zod";
import { ConfigError } from "./errors.js";

/**
 * A credential given directly or as a file to read. Files are re-read on every use, so a rotated
 * credential is picked up without a restart.
 */
export type Credential = { value: string } | { file: string };

/** The current value of a credential; throws ConfigError when its file cannot be read. */
export function readCredential(credential: Credential | undefined): string | undefined {
  if (!credential) return undefined;
  if ("value" in credential) return credential.value;
  try {
    return readFileSync(credential.file, "utf8").trim();
  } catch (error) {
    throw new ConfigError(`cannot read credential file ${credential.file}`, { cause: error });
  }
}

const Url = z.url({ protocol: /^https?$/ });
const Schedule = z.string().min(1);

/** Everything the commands need, from flags and environment variables (flags win). */
export const Config = z.object({
  /** DRIFTLESS_MANIFESTS; default ./manifests. */
  manifests: z.string().default("./manifests"),
  /** DRIFTLESS_STATE_DIR; default ./.driftless. */
  stateDir: z.string().default("./.driftless"),
  /** DRIFTLESS_STATE_STORE; default file. */
  stateStore: z.enum(["file", "kubernetes"]).default("file"),
  /** DRIFTLESS_MANAGEMENT_URL; unset: the built-in simulator. */
  managementUrl: Url.optional(),
  managementKeyId: z.custom<Credential>().optional(),
  managementKeySecret: z.custom<Credential>().optional(),
  /** DRIFTLESS_OBSERVABILITY_URL; unset: the built-in simulator. */
  observabilityUrl: Url.optional(),
  observabilityToken: z.custom<Credential>().optional(),
  /** DRIFTLESS_SECRETS_DIR; default /var/run/secrets/driftless. */
  secretsDir: z.string().default("/var/run/secrets/driftless"),
  /** DRIFTLESS_LISTEN; default 0.0.0.0:9464. */
  listen: z.string().default("0.0.0.0:9464"),
  /** DRIFTLESS_RECONCILE_SCHEDULE; default every minute. */
  reconcileSchedule: Schedule.default("* * * * *"),
  /** DRIFTLESS_POLL_SCHEDULE; default every minute. */
  pollSchedule: Schedule.default("* * * * *"),
  /**
   * DRIFTLESS_REASSERT_SCHEDULE; cron of passes that re-send unchanged resources too, healing edits made
   * in the platform behind git's back, at the lowest priority of the rate budget; "off" disables them.
   * Default hourly.
   */
  reassertSchedule: Schedule.default("0 * * * *"),
  /** DRIFTLESS_WEBHOOK_TOKEN; unset: POST /hooks/sync is off. */
  webhookToken: z.custom<Credential>().optional(),
  /** DRIFTLESS_LOG_LEVEL; default info. */
  logLevel: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
  /** DRIFTLESS_LEADER_ELECT; default false. */
  leaderElect: z.boolean().default(false),
  /** DRIFTLESS_LEADER_LEASE_DURATION, seconds others wait after the last renewal; default 15. */
  leaseDurationSeconds: z.coerce.number().positive().default(15),
  /** DRIFTLESS_LEADER_RENEW_DEADLINE, seconds a leader may fail to renew before it stops; default 10. */
  renewDeadlineSeconds: z.coerce.number().positive().default(10),
  /** DRIFTLESS_LEADER_RETRY_PERIOD, seconds between attempts to acquire or renew; default 2. */
  retryPeriodSeconds: z.coerce.number().positive().default(2),
  /**
   * DRIFTLESS_ALLOW_CREATE: `Kind/name` of reverse endpoints whose earlier create has an Unknown outcome,
   * allowed one new create attempt (apply: this run; run: the first pass after start). Default none.
   */
  allowCreate: z.array(z.string()).default([]),
  /** DRIFTLESS_NAMESPACE; default the pod's own namespace. */
  namespace: z.string().optional(),
});
export type Config = z.infer<typeof Config>;
