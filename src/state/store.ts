import { z } from "zod";

/**
 * What driftless remembers between passes, and the small interface every store implements (a file in
 * DRIFTLESS_STATE_DIR, or a Kubernetes Secret). No secret is kept in clear: secrets only as HMACs keyed
 * by the state's `salt`. The salt sits in the same state, so whoever can read the state can test a
 * guess of a secret against its hash: protect the state as a secret (the file is 0600, the Kubernetes
 * store uses a Secret).
 */

/**
 * A JSON object whose values driftless does not check (a spec, a platform's answer): one test of its
 * type rather than z.record's walk over every key, which a load of 10,000 records notices.
 */
const AnyObject = z.custom<Record<string, unknown>>(
  (value) => typeof value === "object" && value !== null && !Array.isArray(value),
  { message: "expected an object" },
);

/**
 * What the next pass needs to know of one resource, keyed in State by `Kind/name`: the schema every
 * store reads it with, and its type. A renamed manifest takes over the record of its old name (see
 * reconcile/records.ts). Loose: a field added by a later driftless of this format version is kept.
 */
export const ResourceRecord = z.looseObject({
  kind: z.string(),
  name: z.string(),
  /** The desired state last sent successfully, secrets replaced by salted hashes. */
  applied: AnyObject.optional(),
  /** ISO-8601 time of the last successful apply. */
  appliedAt: z.string().optional(),
  /** The platform's request id of the last successful write, when it gave one (for its support). */
  requestId: z.string().optional(),
  /** The last result the platform returned (credentials are never in results). */
  observed: AnyObject.optional(),
  /** Server-assigned id (reverse private endpoints). */
  serverId: z.string().optional(),
  /** Dashboard tile key → server-assigned tile id. */
  tileIds: z.record(z.string(), z.string()).optional(),
  /** Written before a non-idempotent call, cleared once its outcome is recorded. */
  intent: z.looseObject({ action: z.literal("create"), startedAt: z.string() }).optional(),
  /**
   * When an operator's allowance to create again (DRIFTLESS_ALLOW_CREATE, --allow-create) was spent on
   * an attempt: the same allowance does not allow another until a pass ran without it.
   */
  allowanceUsedAt: z.string().optional(),
  /** Three-way lists: the entries driftless itself added, by list name, so only those are ever removed. */
  owned: z.record(z.string(), z.array(z.string())).optional(),
  /**
   * The API object the record is of (`Dashboard 65f1…`, an endpoint by its server id): a manifest
   * renamed to a new name finds its record by it. Written by every pass that sees the manifest.
   */
  object: z.string().optional(),
  /** ISO-8601 time a pass first found the record without a manifest (status Unmanaged). */
  unmanagedSince: z.string().optional(),
  /**
   * The path parameters of its object as its last manifest named them (a created object's id
   * included): what deletes it once the manifest is gone. Written by every pass that sees the manifest.
   */
  address: z.record(z.string(), z.string()).optional(),
  /**
   * What happens to the object when the manifest leaves git, as its last manifest said (its
   * `driftless/deletion-policy`, else `delete` for an object driftless created, `orphan` for one it
   * adopted). A record of an older driftless has none: its object is orphaned.
   */
  deletionPolicy: z.enum(["delete", "orphan"]).optional(),
});
export type ResourceRecord = z.infer<typeof ResourceRecord>;

/** `driftless suspend`: every write is stopped since `since` (ISO-8601), until `driftless resume`. */
export const Suspended = z.looseObject({ since: z.string(), reason: z.string().optional() });
export type Suspended = z.infer<typeof Suspended>;

export const STATE_VERSION = 1;

/** The whole state. Loose: a top-level field added by a later driftless of this format version is kept. */
export const State = z.looseObject({
  version: z.literal(STATE_VERSION),
  /** Key of the secret HMACs; made once per store, and kept in this same state (see above). */
  salt: z.string().min(1),
  resources: z.record(z.string(), ResourceRecord),
  /** Set while the daemon is suspended: kept in the state so that a restart stays suspended. */
  suspended: Suspended.optional(),
});
export type State = z.infer<typeof State>;

export interface StateStore {
  /**
   * The saved state, or a new empty one. Throws StateError when it is unreadable or corrupt. The state
   * object and its `resources` are new at each load; a record may be shared with earlier loads and saves
   * (frozen): replace a record to change it, never change one in place.
   */
  load(): Promise<State>;
  /** Replaces the saved state atomically. Throws StateError. */
  save(state: State): Promise<void>;
  /**
   * Resolves when this process may still write, judged at the moment of the call; throws StateError
   * saying why not (the file lock was taken over, this replica is no longer the leader, the store is
   * read-only). Asked immediately before every write request to the platform and every create intent,
   * so that a process that stalled (a GC pause, SIGSTOP, a frozen VM) and lost its right to write sends
   * nothing more.
   */
  ensureWritable(): Promise<void>;
  /** Releases the store's lock. */
  close(): Promise<void>;
}
