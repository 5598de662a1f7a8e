import { messageOf } from "../errors.js";
import type { BudgetUsage } from "../platform/budget.js";
import {
  type Failure,
  type NextStep,
  type PassResult,
  type ResourceStatus,
  resourceId,
  type Trigger,
} from "../resources.js";
import type { Suspended } from "../state/store.js";

/** A watched, read-only resource (AlertWatch, BackupWatch) as the last poll saw it. */
export type WatchStatus = ResourceStatus & {
  /** What the platform answered, as it came (an alert state the API does not name is kept). */
  observed?: Record<string, string | number | boolean | null>;
  /** ISO-8601 time of the poll. */
  polledAt: string;
};

/** One resource in `GET /status`. */
export type StatusEntry = {
  kind: string;
  name: string;
  status: string;
  /** What comes next: done, retry, change (a changed input) or operator (a person must act). */
  next: NextStep;
  /** The organization of the management kinds; absent for dashboards and alert watches. */
  organization?: string;
  /** Of a Failed resource: transient (the next pass tries again) or terminal (waits for a change). */
  failure?: Failure;
  lastError: string | null;
  requestId: string | null;
  lastAppliedAt: string | null;
  observed?: WatchStatus["observed"];
  polledAt?: string;
};

/** The body of `GET /status`. */
export type StatusDocument = {
  revision: string | null;
  /** Set while `driftless suspend` holds every write (until `driftless resume`). */
  suspended: Suspended | null;
  /** Each API's rate budget now: grants in the current window, of its limit, and requests waiting. */
  budget: Array<BudgetUsage & { api: string }>;
  ready: boolean;
  leader: boolean;
  lastPass: {
    trigger: Trigger;
    startedAt: string;
    finishedAt: string;
    ok: boolean;
    manifestErrors: number;
  } | null;
  /** Why the last pass could not run at all (state store, folder), when it could not. */
  passError: string | null;
  resources: StatusEntry[];
};

/**
 * What the daemon knows of the world, for `/status` and `/readyz`: the last pass's statuses, with the
 * watches' statuses from the last poll laid over them (a pass cannot know an alert's tile vanished).
 * Holds only the last of each, so memory does not grow with the number of passes.
 */
export class StatusBoard {
  private lastPass: (PassResult & { trigger: Trigger }) | undefined;
  private passError: string | undefined;
  private watches = new Map<string, WatchStatus>();

  /** True once a reconcile pass has finished (successfully or not, but it ran). */
  get ready(): boolean {
    return this.lastPass !== undefined;
  }

  get revision(): string | undefined {
    return this.lastPass?.revision;
  }

  recordPass(result: PassResult, trigger: Trigger): void {
    this.lastPass = { ...result, trigger };
    this.passError = undefined;
  }

  recordPassError(error: unknown): void {
    this.passError = messageOf(error);
  }

  /** Forgets everything: a replica that stops leading no longer speaks for the resources. */
  forget(): void {
    this.lastPass = undefined;
    this.passError = undefined;
    this.watches = new Map();
  }

  /** Replaces every watch status with the ones of the newest poll (a deleted manifest disappears). */
  recordWatches(statuses: readonly WatchStatus[]): void {
    this.watches = new Map(statuses.map((s) => [resourceId(s), s]));
  }

  /** Every resource's status: the last pass's, each watch replaced by its last poll. */
  statuses(): ResourceStatus[] {
    const byKey = new Map<string, ResourceStatus>();
    for (const s of this.lastPass?.statuses ?? []) byKey.set(resourceId(s), s);
    for (const [key, s] of this.watches) byKey.set(key, s);
    return [...byKey.values()];
  }

  /** The document of `GET /status`; `suspended` and `budget` are the daemon's, not the passes'. */
  snapshot(
    leader: boolean,
    daemon: { suspended?: Suspended | undefined; budget?: StatusDocument["budget"] } = {},
  ): StatusDocument {
    const pass = this.lastPass;
    return {
      revision: pass?.revision ?? null,
      suspended: daemon.suspended ?? null,
      budget: daemon.budget ?? [],
      ready: this.ready,
      leader,
      lastPass: pass
        ? {
            trigger: pass.trigger,
            startedAt: pass.startedAt,
            finishedAt: pass.finishedAt,
            ok: pass.ok,
            manifestErrors: pass.manifestErrors,
          }
        : null,
      passError: this.passError ?? null,
      resources: this.statuses().map(entryOf),
    };
  }
}

function entryOf(status: ResourceStatus | WatchStatus): StatusEntry {
  const entry: StatusEntry = {
    kind: status.kind,
    name: status.name,
    status: status.status,
    next: status.next,
    ...(status.organization ? { organization: status.organization } : {}),
    ...("failure" in status && status.failure ? { failure: status.failure } : {}),
    lastError: status.status === "Synced" ? null : (status.message ?? null),
    requestId: status.requestId ?? null,
    lastAppliedAt: status.lastAppliedAt ?? null,
  };
  if ("polledAt" in status) {
    entry.observed = status.observed;
    entry.polledAt = status.polledAt;
  }
  return entry;
}
