import { ROUTES } from "../platform/routes.js";
import type { Change, Outcome, ResourcePlan } from "./types.js";
import { masked } from "./values.js";

/**
 * What a plan shows of a resource: an outcome of the planner, or `unmanaged` (only `plan --base`: the
 * manifest is gone, driftless stops managing the object and sends nothing).
 */
export type ViewOutcome = Outcome | "unmanaged";

/** A plan as output shows it (text, JSON or Markdown): secrets masked, the route's path filled in. */
export type PlanView = {
  kind: string;
  name: string;
  /**
   * The platform's id of the object the plan is about, when it has one before the pass (named by the
   * manifest, or assigned when driftless created it); absent for a create, whose id the platform assigns.
   */
  id?: string;
  outcome: ViewOutcome;
  reason: string;
  request?: { api: string; method: string; route: string; path: string; body: unknown };
  changes: Change[];
  followUp?: string;
  /** `plan --base`: the manifest name the same API object had at the base. */
  renamedFrom?: string;
  /** What else a reviewer should know of this resource (what a rename costs, secrets not compared). */
  notes?: string[];
  /**
   * What the request does to the object: `create` (a POST), `update`, `delete` (its manifest left git),
   * `orphan` (its manifest left git, its object is left as it is); absent when nothing is sent.
   */
  action?: "create" | "update" | "delete" | "orphan";
};

/** How a masked secret is labelled: against its last applied hash, by reference, or not compared. */
export type SecretLabels = { changed: string; unchanged: string };

/** The labels masked() gives; plan --base and --secrets skip relabel them. */
export const MASKED: SecretLabels = { changed: "(changed)", unchanged: "(unchanged)" };

/** `applied` is the record's last applied state, against which each secret shows `(changed)` or `(unchanged)`. */
export function viewOf(plan: ResourcePlan, applied: unknown): PlanView {
  const request = plan.write?.request;
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

/**
 * The view with its secret masks renamed: `(reference changed)` when secrets are compared by reference
 * (plan --base), `(not compared)` when they were not read (plan --secrets skip).
 */
export function relabelView(view: PlanView, labels: SecretLabels): PlanView {
  const walk = (value: unknown): unknown => {
    if (value === MASKED.changed) return labels.changed;
    if (value === MASKED.unchanged) return labels.unchanged;
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, walk(child)]));
    }
    return value;
  };
  return {
    ...view,
    ...(view.request ? { request: { ...view.request, body: walk(view.request.body) } } : {}),
    changes: view.changes.map((change) => ({
      ...change,
      ...("from" in change ? { from: walk(change.from) } : {}),
      ...("to" in change ? { to: walk(change.to) } : {}),
    })),
  };
}
