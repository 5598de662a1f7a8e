import { createHmac, randomUUID } from "node:crypto";
import { type Credential, readCredential } from "../credentials.js";
import { ConfigError } from "../errors.js";
import type { PassResult, ResourceStatus } from "../resources.js";
import type { Logger } from "../telemetry/logger.js";
import { createDeliveryQueue, type DeliveryOptions, originOf } from "./delivery.js";
import {
  commitStatusOf,
  type DriftEvent,
  digestOf,
  driftEvent,
  isNews,
  type NotifyEvent,
  type PassDigest,
  passEvent,
  unknownCreateEvent,
} from "./events.js";

/**
 * Outbound notifications of the daemon: a signed JSON webhook when a pass's result differs from the
 * previous one and at once on a create whose outcome is unknown, and a GitHub commit status on the
 * synced revision. Nothing here blocks a pass: requests go out from background queues (delivery.ts).
 */

export type NotifySettings = {
  notifyUrl?: string;
  /** Key of the body's HMAC-SHA256 (X-Driftless-Signature); required with notifyUrl. */
  notifySecret?: Credential;
  /** `owner/repo` of the commit statuses. */
  githubRepository?: string;
  /** Token of the commit statuses; required with githubRepository. */
  githubToken?: Credential;
  githubApiUrl: string;
  githubTargetUrl?: string;
};

export type Notifier = {
  /** A finished pass (leader only). */
  passFinished(result: PassResult): void;
  /** A create whose outcome is unknown, as soon as the resource finishes. */
  unknownCreate(status: ResourceStatus): void;
  /** A drift a read found, once when found (a webhook event; no commit status: git did not change). */
  drift(status: ResourceStatus, fields: DriftEvent["fields"], action: DriftEvent["action"]): void;
  /** Gives queued notifications `graceMs` to go out. */
  close(graceMs: number): Promise<void>;
};

/** The signature header of the webhook: `sha256=` and the hex HMAC-SHA256 of the body. */
export const SIGNATURE_HEADER = "x-driftless-signature";
/** The context of driftless's commit statuses. */
export const STATUS_CONTEXT = "driftless";

/** A full commit id (SHA-1 or SHA-256), what git-sync names its worktrees by. */
const COMMIT_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export function signatureOf(body: string, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/**
 * The notifier of `settings`, or undefined when neither a webhook nor GitHub is configured. Throws
 * ConfigError when a destination lacks its credential or the credential's file cannot be read.
 */
export function createNotifier(
  settings: NotifySettings,
  logger: Logger,
  options: DeliveryOptions = {},
): Notifier | undefined {
  const webhook = settings.notifyUrl
    ? webhookSender(settings, settings.notifyUrl, logger, options)
    : undefined;
  const github = settings.githubRepository
    ? githubSender(settings, settings.githubRepository, logger, options)
    : undefined;
  if (!webhook && !github) return undefined;
  let previous: PassDigest | undefined;
  // A notification that cannot even be queued (its credential file vanished) must not fail the pass.
  const safely = (what: string, step: () => void) => {
    try {
      step();
    } catch (error) {
      logger.error({ err: error, what }, "notification not sent");
    }
  };
  return {
    passFinished(result) {
      const digest = digestOf(result);
      if (isNews(previous, digest)) safely("pass", () => webhook?.send(passEvent(result)));
      previous = digest;
      safely("commit status", () => github?.send(result));
    },
    unknownCreate(status) {
      safely("unknown-create", () => webhook?.send(unknownCreateEvent(status, new Date())));
    },
    drift(status, fields, action) {
      safely("drift", () => webhook?.send(driftEvent(status, fields, action, new Date())));
    },
    async close(graceMs) {
      await Promise.all([webhook?.queue.close(graceMs), github?.queue.close(graceMs)]);
    },
  };
}

function required(credential: Credential | undefined, what: string, needs: string): Credential {
  if (!credential) throw new ConfigError(`${what} needs ${needs} (or ${needs}_FILE)`);
  // Read once now, so a missing file stops the start rather than every delivery.
  readCredential(credential);
  return credential;
}

function webhookSender(settings: NotifySettings, url: string, logger: Logger, options: DeliveryOptions) {
  const secret = required(settings.notifySecret, "DRIFTLESS_NOTIFY_URL", "DRIFTLESS_NOTIFY_SECRET");
  const queue = createDeliveryQueue(originOf(url), logger.child({ component: "notify" }), options);
  return {
    queue,
    send(event: NotifyEvent) {
      const body = JSON.stringify(event);
      queue.push({
        url,
        what: event.event,
        body,
        headers: {
          // Read at each event: a rotated secret is used from the next one.
          [SIGNATURE_HEADER]: signatureOf(body, readCredential(secret) ?? ""),
          "x-driftless-event": event.event,
          "x-driftless-delivery": randomUUID(),
        },
      });
    },
  };
}

function githubSender(
  settings: NotifySettings,
  repository: string,
  logger: Logger,
  options: DeliveryOptions,
) {
  const token = required(settings.githubToken, "DRIFTLESS_GITHUB_REPOSITORY", "DRIFTLESS_GITHUB_TOKEN");
  const api = settings.githubApiUrl.replace(/\/+$/, "");
  const log = logger.child({ component: "notify", repository });
  const queue = createDeliveryQueue(originOf(api), log, options);
  let last: string | undefined;
  let skipped: string | undefined;
  return {
    queue,
    send(result: PassResult) {
      const sha = result.revision;
      if (!sha || !COMMIT_SHA.test(sha)) {
        if (skipped !== (sha ?? ""))
          log.info({ revision: sha }, "commit status skipped: the revision is not a commit sha");
        skipped = sha ?? "";
        return;
      }
      const { state, description } = commitStatusOf(result);
      const body = JSON.stringify({
        state,
        context: STATUS_CONTEXT,
        description,
        ...(settings.githubTargetUrl ? { target_url: settings.githubTargetUrl } : {}),
      });
      // The same status on the same commit again says nothing new.
      if (last === `${sha} ${body}`) return;
      last = `${sha} ${body}`;
      queue.push({
        url: `${api}/repos/${repository}/statuses/${sha}`,
        what: `commit status ${state}`,
        body,
        headers: {
          authorization: `Bearer ${readCredential(token) ?? ""}`,
          accept: "application/vnd.github+json",
          "x-github-api-version": "2022-11-28",
        },
      });
    },
  };
}
