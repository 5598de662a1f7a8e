import { ROUTES } from "../platform/routes.js";
import type { Change, Outcome, ResourcePlan } from "./types.js";
import { masked } from "./values.js";

/** A plan as output shows it (text or JSON): secrets masked, the route's path filled in. */
export type PlanView = {
  kind: string;
  name: string;
  outcome: Outcome;
  reason: string;
  request?: { api: string; method: string; route: string; path: string; body: unknown };
  changes: Change[];
  followUp?: string;
};

/** `applied` is the record's last applied state, against which each secret shows `(changed)` or `(unchanged)`. */
export function viewOf(plan: ResourcePlan, applied: unknown): PlanView {
  const { request } = plan;
  const route = request && ROUTES[request.route];
  const params: Readonly<Record<string, string>> = request?.params ?? {};
  return {
    kind: plan.kind,
    name: plan.name,
    outcome: plan.outcome,
    reason: plan.reason,
    ...(request && route
      ? {
          request: {
            api: route.api,
            method: route.method,
            route: route.template,
            path: route.template.replace(/\{(\w+)\}/g, (whole, key: string) => params[key] ?? whole),
            body: masked(request.body, applied),
          },
        }
      : {}),
    changes: plan.changes,
    ...(plan.followUp ? { followUp: plan.followUp } : {}),
  };
}
