/**
 * What driftless remembers between passes, and the small interface every store implements (a file in
 * DRIFTLESS_STATE_DIR, or a Kubernetes Secret). No secret is kept in clear: secrets only as HMACs keyed
 * by the state's `salt`. The salt sits in the same state, so whoever can read the state can test a
 * guess of a secret against its hash: protect the state as a secret (the file is 0600, the Kubernetes
 * store uses a Secret).
 */

/**
 * What the next pass needs to know of one resource, keyed in State by `Kind/name`. A renamed manifest
 * takes over the record of its old name (see reconcile/records.ts).
 */
export type ResourceRecord = {
  kind: string;
  name: string;
  /** The desired state last sent successfully, secrets replaced by salted hashes. */
  applied?: Record<string, unknown>;
  /** ISO-8601 time of the last successful apply. */
  appliedAt?: string;
  /** The last result the platform returned (credentials are never in results). */
  observed?: Record<string, unknown>;
  /** Server-assigned id (reverse private endpoints). */
  serverId?: string;
  /** Dashboard tile key → server-assigned tile id. */
  tileIds?: Record<string, string>;
  /** Written before a non-idempotent call, cleared once its outcome is recorded. */
  intent?: { action: "create"; startedAt: string };
  /**
   * When an operator's allowance to create again (DRIFTLESS_ALLOW_CREATE, --allow-create) was spent on
   * an attempt: the same allowance does not allow another until a pass ran without it.
   */
  allowanceUsedAt?: string;
  /** Three-way lists: the entries driftless itself added, by list name, so only those are ever removed. */
  owned?: Record<string, string[]>;
  /**
   * The API object the record is of (`Dashboard 65f1…`, an endpoint by its server id): a manifest
   * renamed to a new name finds its record by it. Written by every pass that sees the manifest.
   */
  object?: string;
  /** ISO-8601 time a pass first found the record without a manifest (status Unmanaged). */
  unmanagedSince?: string;
};

/** `driftless suspend`: every write is stopped since `since` (ISO-8601), until `driftless resume`. */
export type Suspended = { since: string; reason?: string };

export type State = {
  version: 1;
  /** Key of the secret HMACs; made once per store, and kept in this same state (see above). */
  salt: string;
  resources: Record<string, ResourceRecord>;
  /** Set while the daemon is suspended: kept in the state so that a restart stays suspended. */
  suspended?: Suspended;
};

export interface StateStore {
  /** The saved state, or a new empty one. Throws StateError when it is unreadable or corrupt. */
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
