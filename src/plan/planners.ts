import type { Kind } from "../manifests/manifest.js";
import { apiKeyPlanner } from "./api-key.js";
import { dashboardPlanner } from "./dashboard.js";
import { dataPipePlanner } from "./data-pipe.js";
import { organizationPlanner } from "./organization.js";
import { reversePrivateEndpointPlanner } from "./reverse-private-endpoint.js";
import type {
  KindPlanner,
  LiveFinding,
  LiveInput,
  LiveRead,
  Phase,
  PlanInput,
  ReadOutcome,
  ResourcePlan,
} from "./types.js";

/** Watches send nothing: the daemon polls them. Their plan is always "nothing to apply". */
function watchPlanner<K extends "AlertWatch" | "BackupWatch">(): KindPlanner<K> {
  return {
    phase: "dependents",
    plan: ({ kind, name }) => ({
      kind,
      name,
      outcome: "none",
      reason: "in sync: read-only, polled by the daemon",
      changes: [],
    }),
    record: ({ kind, name, record }) => ({ ...record, kind, name }),
  };
}

/** The planner of each kind: the table is total, so a kind without a planner does not compile. */
export const PLANNERS: { [K in Kind]: KindPlanner<K> } = {
  Organization: organizationPlanner,
  ApiKey: apiKeyPlanner,
  DataPipe: dataPipePlanner,
  ReversePrivateEndpoint: reversePrivateEndpointPlanner,
  Dashboard: dashboardPlanner,
  AlertWatch: watchPlanner(),
  BackupWatch: watchPlanner(),
};

export function plannerOf<K extends Kind>(kind: K): KindPlanner<K> {
  return PLANNERS[kind];
}

/** The phase a kind is applied in. */
export const phaseOf = (kind: Kind): Phase => PLANNERS[kind].phase;

/** The plan of one resource: a pure function of its desired spec, its record and the context. */
export function planResource<K extends Kind>(input: PlanInput<K>): ResourcePlan {
  return plannerOf<K>(input.kind).plan(input);
}

/** What the record of a resource becomes once `plan`'s request was answered with `result`. */
export function recordResult<K extends Kind>(
  input: PlanInput<K>,
  plan: ResourcePlan,
  result: unknown,
  at: string,
) {
  return plannerOf<K>(input.kind).record(input, plan, result, at);
}

/** With reads on: what to read of a resource before planning it, if anything. */
export function liveReadOf<K extends Kind>(input: LiveInput<K>): LiveRead | undefined {
  return plannerOf<K>(input.kind).liveRead?.(input);
}

/** What a read made before planning tells the plan of a resource. */
export function findingOf<K extends Kind>(input: LiveInput<K>, read: ReadOutcome): LiveFinding {
  return plannerOf<K>(input.kind).fromRead?.(input, read) ?? { why: "nothing to learn from a read" };
}
