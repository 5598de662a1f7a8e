import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import { messageOf } from "../errors.js";
import { VERSION } from "../package.js";
import type { Logger } from "../telemetry/logger.js";

/**
 * Delivery in the background: a bounded queue per destination, one request at a time, retried with
 * exponential backoff. A pass only pushes and never waits; a full queue drops its oldest entry with a
 * log line, so a destination that is down for hours costs a bounded amount of memory.
 */

/** One HTTP request to deliver. Its headers may hold a credential: never logged. */
export type Outgoing = { url: string; headers: Record<string, string>; body: string; what: string };

export type DeliveryOptions = {
  /** Entries waiting at most; default 100. */
  capacity?: number;
  /** First retry delay, doubled per attempt up to maxDelayMs; default 1 s. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Attempts per entry, the first included; default 8. */
  attempts?: number;
  /** Deadline of each request; default 10 s. */
  timeoutMs?: number;
};

export type DeliveryQueue = {
  push(outgoing: Outgoing): void;
  /** Stops retrying; gives what is queued `graceMs` to go out, then drops it. */
  close(graceMs: number): Promise<void>;
};

/** An answer not worth retrying (a 4xx other than 408/429): the request itself is wrong. */
class Refused extends Error {}

/** What a log line may show of a destination: its origin (a webhook URL's path may be its secret). */
export const originOf = (url: string): string => new URL(url).origin;

export function createDeliveryQueue(
  destination: string,
  logger: Logger,
  options: DeliveryOptions = {},
): DeliveryQueue {
  const { capacity = 100 } = options;
  const log = logger.child({ destination });
  const waiting: Outgoing[] = [];
  const closing = new AbortController();
  let worker: Promise<void> | undefined;

  async function drain(): Promise<void> {
    for (let next = waiting.shift(); next; next = waiting.shift())
      await deliver(next, options, log, closing.signal);
    worker = undefined;
  }

  return {
    push(outgoing) {
      if (closing.signal.aborted) return;
      if (waiting.length >= capacity) {
        const dropped = waiting.shift();
        log.warn({ what: dropped?.what, capacity }, "notification dropped: the queue is full");
      }
      waiting.push(outgoing);
      worker ??= drain();
    },
    async close(graceMs) {
      const done = worker ?? Promise.resolve();
      const late = sleep(graceMs, "late" as const, { ref: false });
      if ((await Promise.race([done.then(() => "done" as const), late])) === "late") {
        log.warn({ left: waiting.length + 1 }, "notifications not delivered before shutdown");
      }
      waiting.length = 0;
      closing.abort();
    },
  };
}

/** Sends one entry until it is delivered, refused, out of attempts, or the queue closes. */
async function deliver(
  outgoing: Outgoing,
  options: DeliveryOptions,
  log: Logger,
  closing: AbortSignal,
): Promise<void> {
  const { baseDelayMs = 1_000, maxDelayMs = 60_000, attempts = 8, timeoutMs = 10_000 } = options;
  for (let attempt = 1; ; attempt++) {
    try {
      await send(outgoing, timeoutMs);
      log.info({ what: outgoing.what, attempt }, "notification delivered");
      return;
    } catch (error) {
      const last = error instanceof Refused || attempt >= attempts || closing.aborted;
      log.warn(
        { what: outgoing.what, attempt, reason: messageOf(error), final: last },
        "notification not delivered",
      );
      if (last) return;
      const delay = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
      await sleep(delay, undefined, { signal: closing }).catch(() => {});
    }
  }
}

async function send({ url, headers, body }: Outgoing, timeoutMs: number): Promise<void> {
  const answer = await request(url, {
    method: "POST",
    headers: { "content-type": "application/json", "user-agent": `driftless/${VERSION}`, ...headers },
    body,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  await answer.body.dump();
  const status = answer.statusCode;
  if (status >= 200 && status < 300) return;
  const retryable = status === 408 || status === 429 || status >= 500;
  throw retryable ? new Error(`answered ${status}`) : new Refused(`answered ${status}: not retried`);
}
