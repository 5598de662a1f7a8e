import type { Kind } from "../manifests/manifest.js";
import { planResource, recordResult } from "../plan/planners.js";
import type { PlanInput, ResourcePlan } from "../plan/types.js";
import { ROUTES } from "../platform/routes.js";
import type { ResourceRecord } from "../state/store.js";

/**
 * The one place plan --base reaches the planners: the plan of a resource, and the record a converged
 * apply of a base manifest would have left. Everything else of src/review/ goes through these two.
 */

/** What the planner of `input.kind` would send: the same function `plan` and `apply` call. */
export function planOne<K extends Kind>(input: PlanInput<K>): ResourcePlan {
  return planResource(input);
}

/** The made-up ids of a base manifest's server objects; `tileKeys` are a dashboard's, in order. */
export type Made = { serverId: string; tileId: (key: string) => string; tileKeys: readonly string[] };

// A first contact learns a live list, then sends its add set, then is in sync: three plans at most.
const MAX_ROUNDS = 4;

/**
 * The record driftless would hold after applying `base` until it converged on a platform that had
 * nothing but it: what `applied`, `owned`, tile ids and an endpoint's id would be. The platform's
 * answers are made up from the requests (an answer echoes nothing secret: secrets here are references).
 */
export function recordOfBase<K extends Kind>(
  base: Omit<PlanInput<K>, "record">,
  made: Made,
  at: string,
): ResourceRecord | undefined {
  let record: ResourceRecord | undefined;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const input: PlanInput<K> = { ...base, record };
    const plan = planResource(input);
    if (plan.outcome === "adopt") record = recordResult(input, plan, undefined, at);
    else if (plan.outcome === "send") record = recordResult(input, plan, answerTo(plan, made), at);
    else return record;
  }
  return record;
}

/** The answer a platform would give to `plan`'s request: an endpoint's id, a dashboard's tile ids. */
function answerTo(plan: ResourcePlan, made: Made): Record<string, unknown> {
  const request = plan.request;
  if (request && ROUTES[request.route].method === "POST") return { id: made.serverId, status: "Ready" };
  if (request?.route === "putDashboard") {
    // The dashboard planner sends the tiles in the manifest's order; a tile's key names its made-up id.
    return {
      tiles: request.body.tiles.map((tile, index) => ({
        ...tile,
        id: tile.id || made.tileId(made.tileKeys[index] ?? String(index)),
      })),
    };
  }
  // PATCH answers: nothing the record needs; lists are taken from what was sent.
  return {};
}
