import { messageOf } from "../errors.js";
import { loadSettled, type ManifestSet } from "../manifests/load.js";
import { resourceId } from "../manifests/manifest.js";
import { formatProblem, type Problem } from "../manifests/problem.js";
import type { SecretSources } from "../manifests/secrets.js";
import { mapLimited } from "../map-limited.js";
import { planResource } from "../plan/planners.js";
import { READY } from "../plan/reverse-private-endpoint.js";
import type { EndpointRef, PlanContext } from "../plan/types.js";
import { member } from "../plan/values.js";
import { type PlanView, viewOf } from "../plan/view.js";
import type { ResourceRecord, State, StateStore } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import { PassMetrics } from "../telemetry/pass-metrics.js";
import { applyResource } from "./apply-resource.js";
import { resolveDesired } from "./desired.js";
import type { Sender } from "./send.js";
import type { PassOptions, PassResult, Reconciler, ResourceStatus } from "./types.js";

/**
 * The reconcile pass, outer part: loading, ordering, the context planners see, status and metrics.
 * The inner part, per resource, is apply-resource.ts.
 */

export type EngineDeps = {
  /** The manifests folder (a plain folder or a git-sync link). */
  manifests: string;
  store: StateStore;
  /** Needed by apply; plan never sends. */
  send?: Sender;
  secrets: SecretSources;
  logger: Logger;
  /** When given, the pass records its metrics (leave it out when the caller records PassResult itself). */
  metrics?: Metrics;
  /** The key id driftless authenticates with, for the lock-out guard; read at each pass. */
  managementKeyId?: () => string | undefined;
  /** Resources handled at once within a phase; default 4. */
  concurrency?: number;
  /** Called as each resource finishes (progress output). */
  onResource?: (result: ResourceOutcome) => void;
  now?: () => Date;
};

/** The options of an apply pass (kept as a name of its own for the commands). */
export type ApplyOptions = PassOptions;

/** One resource after a pass: its status and the requests that were sent for it. */
export type ResourceOutcome = { status: ResourceStatus; sent: PlanView[] };

/** What `plan` shows: per resource, the first request an apply would send (or why none). */
export type PlanReport = {
  revision?: string;
  /** The state holds no record at all: every resource is planned as a first contact. */
  stateEmpty: boolean;
  problems: Problem[];
  resources: PlanView[];
};

/** Endpoints first: pipes name them and need their ids. */
const PHASES: readonly (readonly string[])[] = [
  ["ReversePrivateEndpoint"],
  ["Organization", "ApiKey", "DataPipe", "Dashboard", "AlertWatch", "BackupWatch"],
];

/** Reads the manifests once more when the folder changed while it was read (a git-sync swap). */
export type Pass = {
  set: ManifestSet;
  state: State;
  invalid: Map<string, Problem[]>;
  valid: Set<string>;
  startedAt: Date;
};

async function startPass(deps: EngineDeps): Promise<Pass> {
  const set = await loadSettled(deps.manifests);
  const state = await deps.store.load();
  const invalid = new Map<string, Problem[]>();
  for (const problem of set.problems) {
    if (!problem.resource) continue;
    invalid.set(problem.resource, [...(invalid.get(problem.resource) ?? []), problem]);
  }
  const valid = new Set(set.manifests.map(resourceId));
  return { set, state, invalid, valid, startedAt: deps.now?.() ?? new Date() };
}

/** How a pipe sees a ReversePrivateEndpoint it names, from the state as it is now. */
function endpointLookup(pass: Pass): (name: string) => EndpointRef {
  return (name) => {
    const id = `ReversePrivateEndpoint/${name}`;
    if (pass.invalid.has(id))
      return { state: "waiting", reason: `waits for ${id}, whose manifest is invalid` };
    if (!pass.valid.has(id)) return { state: "missing", reason: `names ${id}, which has no manifest` };
    const record = pass.state.resources[id];
    if (!record?.serverId) {
      const why = record?.intent ? "its create has an unknown outcome" : "it is not created yet";
      return { state: "waiting", reason: `waits for ${id}: ${why}` };
    }
    // There is no GET for endpoints, so a status other than Ready is known only from the create
    // answer: the pipe waits out the pass that created it and uses the endpoint from the next one.
    const status = member(record.observed, "status");
    const createdNow =
      record.appliedAt !== undefined && Date.parse(record.appliedAt) >= pass.startedAt.getTime();
    if (record.observed && status !== READY && createdNow) {
      return {
        state: "waiting",
        reason: `waits for ${id}: created in this pass with status ${String(status)}, not ${READY}; used from the next pass`,
      };
    }
    return { state: "ready", id: record.serverId };
  };
}

function contextOf(pass: Pass, deps: EngineDeps): Omit<PlanContext, "reassert" | "allowCreate"> {
  const managementKeyId = deps.managementKeyId?.();
  return {
    now: deps.now?.() ?? new Date(),
    endpoint: endpointLookup(pass),
    ...(managementKeyId ? { managementKeyId } : {}),
  };
}

function invalidStatus(id: string, problems: Problem[], record: ResourceRecord | undefined): ResourceStatus {
  const [kind = "", name = ""] = id.split(/\/(.*)/s);
  return {
    kind,
    name,
    status: "Invalid",
    message: problems.map(formatProblem).join("; "),
    ...(record?.appliedAt ? { lastAppliedAt: record.appliedAt } : {}),
  };
}

/**
 * What an apply would send, per resource, without sending anything or saving the state. Throws
 * ConfigError when the manifests folder cannot be read, StateError when the state cannot.
 */
export async function planPass(
  deps: EngineDeps,
  options: {
    reassert?: boolean;
    allowCreate?: readonly string[];
    /** Replaces secret resolution (`plan --secrets skip`): the desired spec without reading any secret. */
    desired?: (spec: Record<string, unknown>, record: ResourceRecord | undefined) => Record<string, unknown>;
  } = {},
): Promise<PlanReport> {
  const pass = await startPass(deps);
  const base = contextOf(pass, deps);
  const allow = new Set(options.allowCreate ?? []);
  const resources: PlanView[] = [];
  for (const phase of PHASES) {
    for (const m of pass.set.manifests) {
      if (!phase.includes(m.kind)) continue;
      const id = resourceId(m);
      const record = pass.state.resources[id];
      try {
        const resolved = options.desired
          ? options.desired(m.spec as Record<string, unknown>, record)
          : resolveDesired(m.spec as Record<string, unknown>, deps.secrets, pass.state.salt);
        const spec = resolved instanceof Promise ? await resolved : resolved;
        const context = { ...base, reassert: options.reassert ?? false, allowCreate: allow.has(id) };
        resources.push(
          viewOf(planResource({ kind: m.kind, name: m.name, spec, record, context }), record?.applied),
        );
      } catch (error) {
        resources.push({
          kind: m.kind,
          name: m.name,
          outcome: "refuse",
          reason: messageOf(error),
          changes: [],
        });
      }
    }
  }
  return {
    ...(pass.set.revision ? { revision: pass.set.revision } : {}),
    stateEmpty: Object.keys(pass.state.resources).length === 0,
    problems: pass.set.problems,
    resources,
  };
}

/** The Reconciler of the apply command and the daemon. */
export function createReconciler(
  deps: EngineDeps,
): Reconciler & { pass(options: ApplyOptions): Promise<PassResult> } {
  const passMetrics = deps.metrics ? new PassMetrics(deps.metrics) : undefined;
  return { pass: (options) => applyPass(deps, options, passMetrics) };
}

async function applyPass(
  deps: EngineDeps,
  options: ApplyOptions,
  passMetrics: PassMetrics | undefined,
): Promise<PassResult> {
  const pass = await startPass(deps);
  const log = options.logger
    ? options.logger.child({ revision: pass.set.revision })
    : deps.logger.child({ pass: options.trigger, revision: pass.set.revision });
  log.info(
    { manifests: pass.set.manifests.length, problems: pass.set.problems.length },
    "reconcile pass started",
  );
  const base = contextOf(pass, deps);
  const allow = new Set(options.allowCreate ?? []);

  // Saves are chained, so two resources finishing together never write the state at once.
  let saving: Promise<void> = Promise.resolve();
  const save = (): Promise<void> => {
    const next = saving.then(() => deps.store.save(pass.state));
    saving = next.catch(() => {});
    return next;
  };

  const statuses: ResourceStatus[] = [];
  for (const [id, problems] of pass.invalid) {
    if (pass.valid.has(id)) continue;
    const status = invalidStatus(id, problems, pass.state.resources[id]);
    statuses.push(status);
    deps.onResource?.({ status, sent: [] });
  }
  for (const phase of PHASES) {
    const manifests = pass.set.manifests.filter((m) => phase.includes(m.kind));
    const outcomes = await mapLimited(manifests, deps.concurrency ?? 4, async (m) => {
      const held = options.hold?.(resourceId(m));
      if (held) return { status: held, sent: [] };
      const outcome = await applyResource(m, { deps, pass, base, allow, options, save, log });
      deps.onResource?.(outcome);
      return outcome;
    });
    statuses.push(...outcomes.map((o) => o.status));
  }
  await saving;

  const finishedAt = deps.now?.() ?? new Date();
  const result: PassResult = {
    ...(pass.set.revision ? { revision: pass.set.revision } : {}),
    startedAt: pass.startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    statuses,
    manifestErrors: pass.set.problems.length,
    ok: pass.set.problems.length === 0 && statuses.every((s) => s.status === "Synced"),
  };
  passMetrics?.recordPass(result);
  passMetrics?.recordStatuses(result.statuses);
  const counts: Record<string, number> = {};
  for (const s of statuses) counts[s.status] = (counts[s.status] ?? 0) + 1;
  log.info({ ok: result.ok, ...counts, manifestErrors: result.manifestErrors }, "reconcile pass finished");
  return result;
}
