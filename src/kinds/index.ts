import type { DriftField } from "../drift/compare.js";
import type { Kind, Manifest } from "../manifests/manifest.js";
import type { ResourcePlan } from "../plan/types.js";
import type { ResourceRecord } from "../state/store.js";
import { alert } from "./alert.js";
import { apiKey } from "./api-key.js";
import { dashboard } from "./dashboard.js";
import { dataPipe } from "./data-pipe.js";
import {
  type Complete,
  type Create,
  isNone,
  type KindModule,
  type LiveRead,
  type None,
  type Observe,
  type Phase,
  type PlanInput,
  type ReferenceState,
} from "./kind.js";
import { organization } from "./organization.js";
import { reversePrivateEndpoint } from "./reverse-private-endpoint.js";
import { alertWatch, backupWatch } from "./watches.js";

/**
 * Every kind's module, by kind: the table is total, so a kind without a module does not compile, and
 * a module without one of the operations of KindModule (kind.ts) does not either. The engine and the
 * daemon reach a kind only through here.
 */
export const KIND_MODULES: { [K in Kind]: Complete<K> } = {
  Organization: organization,
  ApiKey: apiKey,
  DataPipe: dataPipe,
  ReversePrivateEndpoint: reversePrivateEndpoint,
  Dashboard: dashboard,
  Alert: alert,
  AlertWatch: alertWatch,
  BackupWatch: backupWatch,
};

export function kindOf<K extends Kind>(kind: K): KindModule<K> {
  return KIND_MODULES[kind];
}

/** The phase a kind is applied in. */
export const phaseOf = (kind: Kind): Phase => KIND_MODULES[kind].phase;

/** How a kind creates, or None when it never does. */
export function createOf<K extends Kind>(kind: K): Create<K> | None {
  return kindOf(kind).create;
}

/** How a kind is read and compared, or None when it is not (the watches). */
export function observeOf<K extends Kind>(kind: K): Observe<K> | None {
  return kindOf(kind).observe;
}

/** The update plan of one resource: a pure function of its desired spec, its record and the context. */
export function updatePlan<K extends Kind>(input: PlanInput<K>): ResourcePlan {
  return kindOf(input.kind).update.plan(input);
}

/** With reads on: the read of a resource's live object; undefined when there is none to read. */
export function liveReadOf<K extends Kind>(input: PlanInput<K>): LiveRead | undefined {
  const observe = observeOf(input.kind);
  return isNone(observe) ? undefined : observe.read(input);
}

/** The fields of `live` that differ from what the resource's manifest states. */
export function driftOf<K extends Kind>(input: PlanInput<K>, live: unknown): DriftField[] {
  const observe = observeOf(input.kind);
  return isNone(observe) ? [] : observe.drift(input, live);
}

/**
 * The object of a resource that others name, as they see it: ready once it has an id (the one its
 * manifest adopts, else the one its create was answered with), with the ids of its parts by key (a
 * dashboard's tiles); undefined while it has none.
 */
export function readyObject(
  manifest: Manifest,
  record: ResourceRecord | undefined,
): Extract<ReferenceState, { state: "ready" }> | undefined {
  const module: KindModule<Kind> = kindOf(manifest.kind);
  const create = module.create;
  const id = record?.serverId ?? (isNone(create) ? undefined : create.idOf(manifest.spec));
  if (id === undefined) return undefined;
  const parts = module.parts?.(manifest.spec, record);
  return { state: "ready", id, ...(parts ? { parts } : {}) };
}
