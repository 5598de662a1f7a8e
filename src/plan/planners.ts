import { apiKeyPlanner } from "./api-key.js";
import { dashboardPlanner } from "./dashboard.js";
import { dataPipePlanner } from "./data-pipe.js";
import { organizationPlanner } from "./organization.js";
import { reversePrivateEndpointPlanner } from "./reverse-private-endpoint.js";
import type { KindPlanner, PlanInput, ResourcePlan } from "./types.js";

/** Watches send nothing: the daemon polls them. Their plan is always "nothing to apply". */
const watchPlanner: KindPlanner = {
  plan: ({ kind, name }: PlanInput): ResourcePlan => ({
    kind,
    name,
    outcome: "none",
    reason: "in sync: read-only, polled by the daemon",
    changes: [],
  }),
  record: ({ kind, name, record }) => ({ ...record, kind, name }),
};

/** The planner of each kind. */
export const PLANNERS: Record<string, KindPlanner> = {
  Organization: organizationPlanner,
  ApiKey: apiKeyPlanner,
  DataPipe: dataPipePlanner,
  ReversePrivateEndpoint: reversePrivateEndpointPlanner,
  Dashboard: dashboardPlanner,
  AlertWatch: watchPlanner,
  BackupWatch: watchPlanner,
};

/** The plan of one resource: a pure function of its desired spec, its record and the context. */
export function planResource(input: PlanInput): ResourcePlan {
  const planner = PLANNERS[input.kind];
  if (!planner) {
    return {
      kind: input.kind,
      name: input.name,
      outcome: "refuse",
      reason: `unknown kind ${input.kind}`,
      changes: [],
    };
  }
  return planner.plan(input);
}
