import type { DriftField } from "../drift/compare.js";
import { messageOf } from "../errors.js";
import type { BudgetUsage } from "../platform/budget.js";
import {
  type Failure,
  type NextStep,
  type PassResult,
  type ResourceStatus,
  resourceId,
  resultOf,
  type Trigger,
} from "../resources.js";
import type { Suspended } from "../state/store.js";
import { describeDrift, type Verification } from "./drift-reads.js";

/** A watched, read-only resource (AlertWatch, BackupWatch) as the last poll saw it. */
export type WatchStatus = ResourceStatus & {
  /** What the platform answered, as it came (an alert state the API does not name is kept). */
  observed?: Record<string, string | number | boolean | null>;
  /** ISO-8601 time of the poll. */
  polledAt: string;
};

/** The live state of a managed resource the poll reads (an Alert's state), shown beside its status. */
export type LiveState = { observed: NonNullable<WatchStatus["observed"]>; polledAt: string };

/** One resource in `GET /status`. */
export type StatusEntry = {
  kind: string;
  name: string;
  status: string;
  /** What comes next: done, retry, change (a changed input) or operator (a person must act). */
  next: NextStep;
  /** The organization of the management kinds; absent for dashboards and alert watches. */
  organization?: string;
  /**
   * The platform's id of its object: the one its manifest names, or the one the platform assigned when
   * driftless created it; null while it has none (a create not made yet) and for watches.
   */
  id: string | null;
  /** Of a Failed resource: transient (the next pass tries again) or terminal (waits for a change). */
  failure?: Failure;
  lastError: string | null;
  requestId: string | null;
  lastAppliedAt: string | null;
  /**
   * When a read last found the live object equal to the manifest; null when reads are off
   * (DRIFTLESS_READS), for kinds that are not read, and before the first read.
   */
  verifiedAt?: string | null;
  /** What `Synced` means here: verified by a read, or applied and not verified (reads off or not yet). */
  note?: string;
  /** Of a Drifted resource: the fields that differ, with what git states and what is live. */
  drift?: DriftField[];
  /** A watch's or a managed Alert's live state as the last poll found it. */
  observed?: WatchStatus["observed"];
  polledAt?: string;
};

/** The body of `GET /status`. */
export type StatusDocument = {
  /**
   * What driftless reconciles: "simulator" (the built-in one stands in), or the management API's
   * origin; `driftless run` always says, a daemon not told (a test's) does not.
   */
  platform?: string;
  revision: string | null;
  /** Set while `driftless suspend` holds every write (until `driftless resume`). */
  suspended: Suspended | null;
  /** Each API's rate budget now: grants in the current window, of its limit, and requests waiting. */
  budget: Array<BudgetUsage & { api: string }>;
  /** Whether driftless reads live objects to verify them and find drift (DRIFTLESS_READS). */
  reads: "on" | "off";
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
  /**
   * The deletes the mass-deletion guard held in the last pass, for an operator to let go
   * (`driftless reconcile --allow-deletes N`); 0 when none (driftless_deletes_held).
   */
  deletesHeld: number;
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
  private live = new Map<string, LiveState>();

  /**
   * `reads`: what the read rounds know of each resource (DRIFTLESS_READS=on); without it, nothing is
   * read and every Synced resource says it was applied, not verified.
   */
  constructor(private readonly reads?: { verification(id: string): Verification | undefined }) {}

  /** The last pass's own statuses (no drift laid over), for the read rounds. */
  passStatuses(): readonly ResourceStatus[] {
    return this.lastPass?.statuses ?? [];
  }

  /** The last pass's own status of resource `id`. */
  passStatusOf(id: string): ResourceStatus | undefined {
    this.byId ??= new Map(this.passStatuses().map((s) => [resourceId(s), s]));
    return this.byId.get(id);
  }

  private byId: Map<string, ResourceStatus> | undefined;

  /** True once a reconcile pass has finished (successfully or not, but it ran). */
  get ready(): boolean {
    return this.lastPass !== undefined;
  }

  get revision(): string | undefined {
    return this.lastPass?.revision;
  }

  recordPass(result: PassResult, trigger: Trigger): void {
    this.lastPass = { ...result, trigger };
    this.byId = undefined;
    this.passError = undefined;
  }

  recordPassError(error: unknown): void {
    this.passError = messageOf(error);
  }

  /** Forgets everything: a replica that stops leading no longer speaks for the resources. */
  forget(): void {
    this.lastPass = undefined;
    this.byId = undefined;
    this.passError = undefined;
    this.watches = new Map();
    this.live = new Map();
  }

  /** Replaces the live states of the managed resources with the newest poll's (an Alert's state). */
  recordLive(states: ReadonlyMap<string, LiveState>): void {
    this.live = new Map(states);
  }

  /** Replaces every watch status with the ones of the newest poll (a deleted manifest disappears). */
  recordWatches(statuses: readonly WatchStatus[]): void {
    this.watches = new Map(statuses.map((s) => [resourceId(s), s]));
  }

  /**
   * Every resource's status: the last pass's, each watch replaced by its last poll, and a Synced
   * resource that a read found changed outside git Drifted.
   */
  statuses(): ResourceStatus[] {
    const byKey = new Map<string, ResourceStatus>();
    for (const s of this.lastPass?.statuses ?? []) byKey.set(resourceId(s), this.drifted(s));
    for (const [key, s] of this.watches) byKey.set(key, s);
    return [...byKey.values()];
  }

  /** The document of `GET /status`; `platform`, `suspended` and `budget` are the daemon's, not the passes'. */
  snapshot(
    leader: boolean,
    daemon: {
      platform?: string;
      suspended?: Suspended | undefined;
      budget?: StatusDocument["budget"];
    } = {},
  ): StatusDocument {
    const pass = this.lastPass;
    return {
      ...(daemon.platform ? { platform: daemon.platform } : {}),
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
      deletesHeld: pass?.deletesHeld ?? 0,
      reads: this.reads ? "on" : "off",
      resources: this.statuses().map((status) => this.entryOf(status)),
    };
  }

  /** `status` as Drifted when it is Synced and a read found drift. */
  private drifted(status: ResourceStatus): ResourceStatus {
    if (status.status !== "Synced") return status;
    const drift = this.reads?.verification(resourceId(status))?.drift;
    if (!drift) return status;
    const cause = drift.action === "correct" ? "drifted" : "drift-reported";
    const { organization, id, lastAppliedAt } = status;
    return resultOf(status, cause, {
      organization,
      id,
      lastAppliedAt,
      message: describeDrift(drift),
      requestId: drift.requestId,
    });
  }

  private entryOf(status: ResourceStatus | WatchStatus): StatusEntry {
    const entry = entryOf(status);
    if ("polledAt" in status) return entry;
    const live = this.live.get(resourceId(status));
    if (live) {
      entry.observed = live.observed;
      entry.polledAt = live.polledAt;
    }
    const known = this.reads?.verification(resourceId(status));
    entry.verifiedAt = known?.verifiedAt ?? null;
    if (status.status === "Drifted" && known?.drift) entry.drift = known.drift.fields;
    if (status.status === "Synced") entry.note = noteOf(this.reads !== undefined, known);
    return entry;
  }
}

/** What Synced means for one resource, in words: verified by a read, or applied and not verified. */
function noteOf(reads: boolean, known: Verification | undefined): string {
  if (!reads) return "applied; not verified: the live object is not read (DRIFTLESS_READS=off)";
  if (known?.readError) return `applied; not verified: its last read failed (${known.readError})`;
  if (known?.verifiedAt) return `applied; verified equal to git at ${known.verifiedAt}`;
  return "applied; not verified yet: the live object is read in a coming poll round";
}

function entryOf(status: ResourceStatus | WatchStatus): StatusEntry {
  const entry: StatusEntry = {
    kind: status.kind,
    name: status.name,
    status: status.status,
    next: status.next,
    ...(status.organization ? { organization: status.organization } : {}),
    id: status.id ?? null,
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
