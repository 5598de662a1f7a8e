import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import { CoreV1Api, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import { StateError } from "../errors.js";
import { abortWith, reasonOf, statusOf } from "../kubernetes/client.js";
import type { Logger } from "../telemetry/logger.js";
import { newState, parseState } from "./state-format.js";
import type { State, StateStore } from "./store.js";

/**
 * The state in one Kubernetes Secret, so that any replica can pick it up after a handover. The Secret
 * (the state holds salted hashes of secrets, hence not a ConfigMap) carries gzip'd JSON under one key.
 * Writes are conditional on the resourceVersion the state was read at: a second writer gets a clear
 * StateError instead of silently overwriting the first.
 */

/** The Secret's name unless told otherwise; deploy/overlays/ha/role.yaml grants access to this name. */
export const DEFAULT_SECRET_NAME = "driftless-state";

/** The data key of the state in the Secret. */
export const STATE_KEY = "state.json.gz";

/**
 * The annotation naming each write (`<store id>-<n>`): a write whose answer was lost (a timeout, a
 * reset) may have landed, and the next write, conditional on the version before it, then conflicts with
 * this store's own write. The annotation tells that case from another writer.
 */
export const WRITE_ID_ANNOTATION = "driftless/write-id";

/**
 * The API server refuses a Secret whose data exceeds 1 MiB. The default refusal point leaves a quarter
 * of that as headroom so that one more pass's growth never meets the hard limit mid-save.
 */
export const DEFAULT_MAX_STATE_BYTES = 768 * 1024;

export type KubernetesStateStoreOptions = {
  kubeConfig: KubeConfig;
  namespace: string;
  /** Name of the Secret; default `driftless-state`. */
  name?: string;
  /** Largest compressed state saved; default DEFAULT_MAX_STATE_BYTES (768 KiB). */
  maxBytes?: number;
  /** Deadline of each API request; default 10 s. */
  timeoutMs?: number;
  /** Never write (for `driftless plan` beside a running daemon): save() throws StateError. Default false. */
  readOnly?: boolean;
  logger: Logger;
};

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * A StateStore backed by the Secret `name` in `namespace`. `load` throws StateError when the Secret
 * cannot be read or is corrupt; `save` throws StateError when another writer changed the Secret since
 * this store last read or wrote it (a write of its own that landed unanswered is not another writer),
 * when the state is larger than `maxBytes`, or when the API fails. `ensureWritable` resolves at once
 * unless read-only: the conditional writes are its guard.
 */
export function createKubernetesStateStore(options: KubernetesStateStoreOptions): StateStore {
  const { kubeConfig, namespace, logger, readOnly = false } = options;
  const name = options.name ?? DEFAULT_SECRET_NAME;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_STATE_BYTES;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const where = `Secret ${namespace}/${name}`;
  const log = logger.child({ stateStore: "kubernetes", secret: `${namespace}/${name}` });
  /**
   * The resourceVersion each loaded state was read at (then last saved at), "" when there was no
   * Secret. A save is conditional on its state's own version, so a load made in between for another
   * purpose (a poll reading tile ids) cannot make a stale pass overwrite another writer's state.
   */
  const versions = new WeakMap<State, string>();
  /** The version this store last read or wrote, for states it did not hand out itself. */
  let latest = "";
  let warnedSize = false;
  /** The state of a store that has none saved yet, made once so its salt does not change per load. */
  let fresh: State | undefined;
  let writes: Promise<void> = Promise.resolve();
  let closed = false;
  const storeId = randomUUID();
  let writeCount = 0;
  /** Writes whose answer never came (timeout, reset): each may or may not have landed. */
  const unanswered = new Set<string>();

  const open = () => {
    if (closed) throw new StateError(`the state store ${where} is closed`);
  };
  const empty = () => {
    fresh ??= newState();
    return structuredClone(fresh);
  };
  const loaded = (state: State, version: string) => {
    latest = version;
    versions.set(state, version);
    return state;
  };

  async function load(): Promise<State> {
    open();
    let secret: V1Secret;
    try {
      secret = await core.readNamespacedSecret(
        { name, namespace },
        abortWith(AbortSignal.timeout(timeoutMs)),
      );
    } catch (error) {
      if (statusOf(error) === 404) {
        log.info("no state Secret yet: starting from an empty state");
        return loaded(empty(), "");
      }
      throw new StateError(`cannot read the state ${where}: ${reasonOf(error)}`, { cause: error });
    }
    const version = secret.metadata?.resourceVersion ?? "";
    const encoded = secret.data?.[STATE_KEY];
    // A Secret created empty ahead of time (e.g. by a deployment tool) is a new state, not corruption.
    if (!encoded) return loaded(empty(), version);
    let json: string;
    try {
      json = (await gunzipAsync(Buffer.from(encoded, "base64"))).toString("utf8");
    } catch (error) {
      throw new StateError(
        `the state in ${where} (key ${STATE_KEY}) is corrupt (not gzip: ${reasonOf(error)}). It was left as it is: restore it from a backup, or delete the Secret to start from an empty state`,
        { cause: error },
      );
    }
    return loaded(parseState(json, `the state in ${where} (key ${STATE_KEY})`), version);
  }

  async function save(state: State): Promise<void> {
    open();
    if (readOnly) throw new StateError(`the state store ${where} was opened read-only: not saving`);
    // Saves of one process land in the order they were asked for, each on the previous one's version.
    const write = writes.then(() => replace(state));
    writes = write.catch(() => {});
    await write;
  }

  async function replace(state: State): Promise<void> {
    const compressed = await gzipAsync(JSON.stringify(state));
    const resources = Object.keys(state.resources).length;
    if (compressed.length > maxBytes) {
      throw new StateError(
        `the state of ${resources} resources is ${kib(compressed.length)} compressed, over the ${kib(maxBytes)} this store keeps in ${where} (Kubernetes caps a Secret at 1 MiB); use the file store on a volume (DRIFTLESS_STATE_STORE=file) or split the manifests between several driftless deployments`,
      );
    }
    if (compressed.length > maxBytes / 2 && !warnedSize) {
      warnedSize = true;
      log.warn(
        { bytes: compressed.length, maxBytes, resources },
        "state Secret is over half of its size limit",
      );
    }
    const resourceVersion = versions.get(state) ?? latest;
    try {
      await write(state, compressed, resourceVersion);
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
      // Our own earlier write may have landed although its answer was lost: then nobody else wrote.
      const ours = await ownUnansweredWrite();
      if (ours === undefined) throw conflict(resourceVersion, error);
      log.info({ resourceVersion: ours }, "an earlier save whose answer was lost had landed: saving over it");
      await write(state, compressed, ours).catch((again: unknown) => {
        throw statusOf(again) === 409 ? conflict(ours, again) : again;
      });
    }
  }

  /** Creates or replaces the Secret at `resourceVersion` ("" = create). Throws the client's error on 409. */
  async function write(state: State, compressed: Buffer, resourceVersion: string): Promise<void> {
    writeCount += 1;
    const writeId = `${storeId}-${writeCount}`;
    const body: V1Secret = {
      apiVersion: "v1",
      kind: "Secret",
      type: "Opaque",
      metadata: {
        name,
        namespace,
        resourceVersion: resourceVersion || undefined,
        labels: { "app.kubernetes.io/name": "driftless", "app.kubernetes.io/component": "state" },
        annotations: { [WRITE_ID_ANNOTATION]: writeId },
      },
      data: { [STATE_KEY]: compressed.toString("base64") },
    };
    const request = abortWith(AbortSignal.timeout(timeoutMs));
    let saved: V1Secret;
    try {
      saved = resourceVersion
        ? await core.replaceNamespacedSecret({ name, namespace, body }, request)
        : await core.createNamespacedSecret({ namespace, body }, request);
    } catch (error) {
      if (statusOf(error) === 409) throw error;
      // No answer at all: the write may have landed (see ownUnansweredWrite).
      if (statusOf(error) === undefined) unanswered.add(writeId);
      throw new StateError(`cannot save the state ${where}: ${reasonOf(error)}`, { cause: error });
    }
    unanswered.clear();
    latest = saved.metadata?.resourceVersion ?? "";
    versions.set(state, latest);
    log.debug(
      { bytes: compressed.length, resources: Object.keys(state.resources).length, resourceVersion: latest },
      "state saved",
    );
  }

  /** The Secret's resourceVersion when its last write is one of ours whose answer was lost, else undefined. */
  async function ownUnansweredWrite(): Promise<string | undefined> {
    if (unanswered.size === 0) return undefined;
    let secret: V1Secret;
    try {
      secret = await core.readNamespacedSecret(
        { name, namespace },
        abortWith(AbortSignal.timeout(timeoutMs)),
      );
    } catch (error) {
      throw new StateError(`cannot read the state ${where} after a conflict: ${reasonOf(error)}`, {
        cause: error,
      });
    }
    const writeId = secret.metadata?.annotations?.[WRITE_ID_ANNOTATION];
    if (!writeId || !unanswered.has(writeId)) return undefined;
    unanswered.clear();
    return secret.metadata?.resourceVersion;
  }

  function conflict(resourceVersion: string, cause: unknown): StateError {
    const what = resourceVersion
      ? `it changed since this replica read it (resourceVersion ${resourceVersion})`
      : "it was created by someone else after this replica found none";
    return new StateError(
      `another writer changed the state: ${where} was not saved because ${what}; is a second driftless running without leader election? The next pass reloads it`,
      { cause },
    );
  }

  async function ensureWritable(): Promise<void> {
    open();
    // Nothing to check ahead: every write is conditional on the resourceVersion (see above).
    if (readOnly) throw new StateError(`the state store ${where} was opened read-only: not writing`);
  }

  async function close(): Promise<void> {
    closed = true;
    await writes;
  }

  // Nothing to unlock on close: with several replicas, the leader Lease decides who writes.
  return { load, save, ensureWritable, close };
}

function kib(bytes: number): string {
  return `${Math.ceil(bytes / 1024)} KiB`;
}
