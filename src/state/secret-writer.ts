import { randomUUID } from "node:crypto";
import type { CoreV1Api, V1Secret } from "@kubernetes/client-node";
import { StateError } from "../errors.js";
import { abortWith, reasonOf, statusOf } from "../kubernetes/client.js";
import type { Logger } from "../telemetry/logger.js";

/**
 * The Kubernetes store's reads and writes of Secrets: each write conditional on the resourceVersion it
 * builds on, and named by an annotation so that a write whose answer was lost can be told from
 * another writer's when the next write conflicts with it.
 */

/**
 * The annotation naming each write (`<store id>-<n>`): a write whose answer was lost (a timeout, a
 * reset) may have landed, and the next write, conditional on the version before it, then conflicts with
 * this store's own write. The annotation tells that case from another writer.
 */
export const WRITE_ID_ANNOTATION = "driftless/write-id";

const LABELS = { "app.kubernetes.io/name": "driftless", "app.kubernetes.io/component": "state" };

/** The labels and annotations a Secret had when last read or written: a replace keeps them. */
export type SecretMarks = { labels?: Record<string, string>; annotations?: Record<string, string> };

/**
 * The body that creates (`resourceVersion` "") or replaces Secret `name` with `data`, named `writeId`.
 * A replace keeps the labels and annotations the Secret has (`kept`): a deployment that created the
 * state Secrets ahead (kubectl's last applied form, its labels) must find nothing to change in them,
 * or applying it again would change every Secret under a running leader.
 */
export function secretBody(
  where: { namespace: string; name: string },
  data: Record<string, string>,
  resourceVersion: string,
  writeId: string,
  kept: SecretMarks = {},
): V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: "Opaque",
    metadata: {
      ...where,
      resourceVersion: resourceVersion || undefined,
      labels: { ...kept.labels, ...LABELS },
      annotations: { ...kept.annotations, [WRITE_ID_ANNOTATION]: writeId },
    },
    data,
  };
}

/**
 * Whether `current` (the Secret as read after a conflict) was last written by one of `lost`, this
 * store's writes to it whose answer never came: then that write landed, and the conflict was with
 * ourselves. False for another writer's write, and for no Secret at all.
 */
export function isOwnLostWrite(
  lost: ReadonlySet<string> | undefined,
  current: V1Secret | undefined,
): boolean {
  const writeId = current?.metadata?.annotations?.[WRITE_ID_ANNOTATION];
  return lost !== undefined && writeId !== undefined && lost.has(writeId);
}

/**
 * The StateError of a write refused because Secret `secret` (`namespace/name`) changed since
 * `resourceVersion` ("" = this store found none): another writer's.
 */
export function conflictError(secret: string, resourceVersion: string, cause?: unknown): StateError {
  const what = resourceVersion
    ? `it changed since this replica read it (resourceVersion ${resourceVersion})`
    : "it was created by someone else after this replica found none";
  return new StateError(
    `another writer changed the state: Secret ${secret} was not saved because ${what}; is a second driftless running without leader election? The next pass reloads it`,
    { cause },
  );
}

export type SecretWriterOptions = {
  core: CoreV1Api;
  namespace: string;
  /** Deadline of each request. */
  timeoutMs: number;
  log: Logger;
};

/** Reads and conditional writes of the Secrets of one namespace, for one store. */
export class SecretWriter {
  private readonly storeId = randomUUID();
  private writeCount = 0;
  /** Per Secret, writes whose answer never came (timeout, reset): each may or may not have landed. */
  private readonly unanswered = new Map<string, Set<string>>();
  /** Per Secret, its labels and annotations as last read or written (see secretBody). */
  private readonly marks = new Map<string, SecretMarks>();

  constructor(private readonly options: SecretWriterOptions) {}

  /** The Secret `name`, or undefined when there is none. Throws StateError. */
  async read(name: string): Promise<V1Secret | undefined> {
    const { core, namespace, timeoutMs } = this.options;
    try {
      const secret = await core.readNamespacedSecret(
        { name, namespace },
        abortWith(AbortSignal.timeout(timeoutMs)),
      );
      this.remember(name, secret);
      return secret;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw new StateError(`cannot read the state Secret ${namespace}/${name}: ${reasonOf(error)}`, {
        cause: error,
      });
    }
  }

  /**
   * Creates or replaces Secret `name` with `data` at `resourceVersion` ("" = create); returns its new
   * version. A conflict is another writer's (StateError, see conflictError), unless the Secret's last
   * write is one of ours whose answer was lost: then it is written again over that one. Throws
   * StateError when the API fails.
   */
  async write(name: string, data: Record<string, string>, resourceVersion: string): Promise<string> {
    try {
      return await this.send(name, data, resourceVersion);
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
      const ours = await this.ownUnansweredWrite(name);
      if (ours === undefined) throw this.conflict(name, resourceVersion, error);
      this.options.log.info(
        { secret: name, resourceVersion: ours },
        "an earlier save whose answer was lost had landed: saving over it",
      );
      return await this.send(name, data, ours).catch((again: unknown) => {
        throw statusOf(again) === 409 ? this.conflict(name, ours, again) : again;
      });
    }
  }

  /** The conflict StateError of Secret `name` of this namespace (see conflictError). */
  conflict(name: string, resourceVersion: string, cause?: unknown): StateError {
    return conflictError(`${this.options.namespace}/${name}`, resourceVersion, cause);
  }

  /** One create or replace. Throws the client's error on 409, StateError otherwise. */
  private async send(name: string, data: Record<string, string>, resourceVersion: string): Promise<string> {
    const { core, namespace, timeoutMs } = this.options;
    this.writeCount += 1;
    const writeId = `${this.storeId}-${this.writeCount}`;
    const kept = resourceVersion ? this.marks.get(name) : undefined;
    const body = secretBody({ name, namespace }, data, resourceVersion, writeId, kept);
    const request = abortWith(AbortSignal.timeout(timeoutMs));
    try {
      const saved = resourceVersion
        ? await core.replaceNamespacedSecret({ name, namespace, body }, request)
        : await core.createNamespacedSecret({ namespace, body }, request);
      this.unanswered.delete(name);
      this.remember(name, saved);
      return saved.metadata?.resourceVersion ?? "";
    } catch (error) {
      if (statusOf(error) === 409) throw error;
      // No answer at all: the write may have landed (see ownUnansweredWrite).
      if (statusOf(error) === undefined) {
        this.unanswered.set(name, (this.unanswered.get(name) ?? new Set()).add(writeId));
      }
      throw new StateError(`cannot save the state Secret ${namespace}/${name}: ${reasonOf(error)}`, {
        cause: error,
      });
    }
  }

  private remember(name: string, secret: V1Secret): void {
    const { labels, annotations } = secret.metadata ?? {};
    this.marks.set(name, { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) });
  }

  /** The Secret's resourceVersion when its last write is one of ours whose answer was lost, else undefined. */
  private async ownUnansweredWrite(name: string): Promise<string | undefined> {
    const lost = this.unanswered.get(name);
    if (!lost) return undefined;
    let current: V1Secret | undefined;
    try {
      current = await this.read(name);
    } catch (error) {
      throw new StateError(
        `cannot read the state Secret ${this.options.namespace}/${name} after a conflict: ${reasonOf(error)}`,
        { cause: error },
      );
    }
    if (!isOwnLostWrite(lost, current)) return undefined;
    this.unanswered.delete(name);
    return current?.metadata?.resourceVersion;
  }
}
