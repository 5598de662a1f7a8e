import type { DriftField } from "../drift/compare.js";
import type { FieldPath, Kind, ManagedKind, ManifestOf, WatchKind } from "../manifests/manifest.js";
import type { PlannedRequest, ResourcePlan, Specs } from "../plan/types.js";
import type { Answers, RouteName } from "../platform/routes.js";
import type { ResourceRecord } from "../state/store.js";

/**
 * The contract between the engine, which knows no kind, and each kind's module, which knows its
 * manifest, the requests it sends, the answers it gets and how its live object is read. The engine
 * decides which operation to call from the record and what was read (reconcile/decide.ts); a kind only
 * says what each operation sends. The table of every kind (kinds/index.ts) is total, and each operation
 * a kind does not have is written out as `none(why)`: a kind missing one does not compile.
 */

/** An operation a kind does not have, and why (shown where someone asks for it). */
export type None = { readonly none: string };
export const none = (why: string): None => ({ none: why });
export const isNone = (operation: object): operation is None => "none" in operation;

/**
 * When a kind is applied within a pass: `prerequisites` first (reverse private endpoints and
 * dashboards: pipes and alerts name them and need their ids), then `dependents`. Deletes go the other
 * way: dependents first.
 */
export const PHASES = ["prerequisites", "dependents"] as const;
export type Phase = (typeof PHASES)[number];

/**
 * A resource this one names by manifest name, as the pass sees it now: ready with its object's id (and
 * the ids of its parts by key, a dashboard's tiles), or why not.
 */
export type ReferenceState =
  | { state: "ready"; id: string; parts?: Readonly<Record<string, string>> }
  | { state: "waiting"; reason: string }
  | { state: "missing"; reason: string };

/** What an operation may know beyond its own resource; pure data, so planning stays a pure function. */
export type PlanContext = {
  /** Re-send unchanged fields too (healing changes made behind git's back). */
  reassert: boolean;
  /** For the lock-out guard: when "now" is. */
  now: Date;
  /** The key id driftless authenticates with on the resource's organization, when known. */
  managementKeyId?: string;
  /** A resource of `kind` named `name` in the manifests, as this pass sees it now. */
  ref(kind: ManagedKind, name: string): ReferenceState;
};

/** The input of every operation of a kind: the desired spec (secrets resolved), the record, the pass. */
export type PlanInput<K extends Kind = Kind> = {
  kind: K;
  name: string;
  spec: Specs[K];
  record: ResourceRecord | undefined;
  context: PlanContext;
};

/**
 * A read of a live object (or a list), and the object it answers (undefined: the platform has none).
 * Kinds write one as `{...} satisfies LiveRead<"route">`, which types the answer.
 */
export type LiveRead<R extends RouteName = RouteName> = {
  request: PlannedRequest<R>;
  live(answer: Answers[R]): object | undefined;
};

/** A resource as the operations that need no pass see it: its kind, name, desired spec and record. */
export type Subject<K extends Kind = Kind> = Omit<PlanInput<K>, "context">;

/**
 * How a kind changes its object: the plan of one request (or none) from the spec and the record. With
 * reads on, `learn` reads the live object first where the plan cannot be made without it (a three-way
 * list driftless never saw live), and keeps what the plan needs of it in the record.
 */
export type Update<K extends Kind> = {
  plan(input: PlanInput<K>): ResourcePlan;
  learn:
    | {
        /** Whether the plan needs the live object now. */
        needs(subject: Subject<K>): boolean;
        /** The record with what the plan needs of `live`, or why `live` does not tell it. */
        keep(subject: Subject<K>, live: object): { record: ResourceRecord } | { why: string };
      }
    | None;
};

/**
 * How a kind creates its object when the manifest names none (POST, once: a create is never blindly
 * repeated, see decide.ts), and how a create whose answer was lost is settled with reads on: found in
 * the list the create would add to.
 */
export type Create<K extends Kind> = {
  /**
   * What the kind is called in messages (`endpoint`), where its list is (`of the service`), and the spec
   * field that names an existing object.
   */
  noun: string;
  within: string;
  idField: string;
  /** The id of an existing object the spec names (it is then adopted, never created). */
  idOf(spec: Specs[K] | ManifestOf<K>["spec"]): string | undefined;
  plan(input: PlanInput<K>): ResourcePlan;
  /** The list of the objects a create of this spec adds to, and what of each answer to match. */
  list(spec: Specs[K]): LiveRead;
  /** Whether `listed` is what the create of `spec` would make. */
  matches(subject: Subject<K>, listed: Record<string, unknown>): boolean;
  /** The record once an object (`id`, answered as `live` when it was listed) is known to be this one's. */
  adopted(subject: Subject<K>, id: string, live: object | undefined, at: string): ResourceRecord;
  /** Why a resource created in this pass cannot be used yet by the resources that name it, if so. */
  unusable(record: ResourceRecord): string | undefined;
};

/**
 * How a kind's live object is read (reads on) and compared with its manifest: the fields compared are
 * those of the same desired state the kind's update sends, so drift and apply cannot disagree.
 */
export type Observe<K extends Kind> = {
  /** The read of the live object; undefined when there is nothing to read yet (not created). */
  read(subject: Subject<K>): LiveRead | undefined;
  /** The fields of `live` that differ from what the manifest states; [] when equal. */
  drift(input: PlanInput<K>, live: unknown): DriftField[];
  /**
   * The record as if driftless had last sent the live values of the drifted fields, so that the next
   * plan sends git's back (plan with reads on, apply with reads on); the record itself when it cannot.
   */
  fold(record: ResourceRecord, fields: readonly DriftField[], live: unknown): ResourceRecord;
  /** What the status says when the object was changed outside git but cannot be put back, if so. */
  fixed?: string;
  /**
   * First contact (reads on, an object its manifest names that driftless never applied): the record as
   * if the manifest had just been applied and answered `live`, with the `fields` that differ folded in,
   * so that the plan sends only what differs from git (nothing when the object equals its manifest).
   * Undefined when it cannot be made yet (a reference not ready).
   */
  baseline(input: PlanInput<K>, live: object, fields: readonly DriftField[]): ResourceRecord | undefined;
  /**
   * The list that holds the live object beside others of its kind (the keys of an organization, the
   * alerts of the team), with this object picked from its answer: first contacts read each list once
   * per pass instead of one GET per object. Undefined when there is none (then `read`).
   */
  listed(subject: Subject<K>): LiveRead | undefined;
};

/**
 * How a kind deletes its object once its manifest left git and its deletion policy says so. The
 * request is made from the record alone (`address`: the path parameters its last manifest named).
 */
export type Delete = {
  /** The DELETE of the object at `address`; undefined when the address lacks a field (an old record). */
  request(address: Readonly<Record<string, string>>): PlannedRequest | undefined;
  /** What the platform deletes along with it, for plans (a dashboard's alerts); absent: nothing. */
  cascade?: string;
  /**
   * Why the object must never be deleted, whatever its policy (the key driftless authenticates with, by
   * `managementKeyId`); undefined when it may be.
   */
  kept?(record: ResourceRecord, managementKeyId: string | undefined): string | undefined;
};

/** A watch's poll: the read it sends on the poll schedule. */
export type Poll<K extends Kind> = { request(spec: ManifestOf<K>["spec"]): PlannedRequest };

/**
 * What the table asks of each kind beyond KindModule: a kind driftless writes is read for drift, a watch
 * is polled.
 */
export type Complete<K extends Kind> = KindModule<K> &
  (K extends ManagedKind ? { observe: Observe<K> } : K extends WatchKind ? { poll: Poll<K> } : never);

/** Everything about one kind. */
export type KindModule<K extends Kind> = {
  kind: K;
  phase: Phase;
  /**
   * The resources its spec names by manifest name (a pipe's endpoints): they are created before it, and
   * their objects are not deleted while it names them.
   */
  references(spec: ManifestOf<K>["spec"]): readonly { kind: ManagedKind; name: string }[];
  /**
   * The objects its spec names by their server id (a pipe's reversePrivateEndpointIds): they are not
   * deleted while it names them. Absent: it names none by id.
   */
  referencedIds?(spec: ManifestOf<K>["spec"]): readonly { kind: ManagedKind; id: string }[];
  /**
   * The path parameters of its object, as the spec and the record name them (a created object's id
   * comes from the record); kept in the record, so that the object can be deleted once its manifest is
   * gone. Undefined while the object has no id (not created yet).
   */
  address(
    spec: ManifestOf<K>["spec"],
    record: ResourceRecord | undefined,
  ): Record<string, string> | undefined;
  /**
   * The ids of its object's parts by key (a dashboard's tiles), as the spec and the record know them:
   * what a resource naming one of them (an alert, by tile key) sends. Absent: a kind without parts.
   */
  parts?(spec: ManifestOf<K>["spec"], record: ResourceRecord | undefined): Record<string, string>;
  create: Create<K> | None;
  update: Update<K>;
  delete: Delete | None;
  observe: Observe<K> | None;
  poll: Poll<K> | None;
  /**
   * `validate --contract`: the manifest field (from `spec`) a path of one of its requests comes from;
   * `params` paths are path parameters.
   */
  specPath(path: FieldPath, spec: ManifestOf<K>["spec"]): FieldPath;
};
