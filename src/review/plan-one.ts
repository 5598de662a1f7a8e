import { PLANNERS, planResource } from "../plan/planners.js";
import type { PlanContext, PlanInput, ResourcePlan } from "../plan/types.js";
import { isPlainObject } from "../plan/values.js";
import type { ResourceRecord } from "../state/store.js";

/**
 * The one place plan --base reaches the planners: the plan of a resource, and the record a converged
 * apply of a base manifest would have left. Everything else of src/review/ goes through these two.
 */

export type OneInput = {
  kind: string;
  name: string;
  spec: Record<string, unknown>;
  record: ResourceRecord | undefined;
  context: PlanContext;
};

/** What the planner of `input.kind` would send: the same function `plan` and `apply` call. */
export function planOne(input: OneInput): ResourcePlan {
  return planResource(input as PlanInput);
}

// A first contact learns a live list, then sends its add set, then is in sync: three plans at most.
const MAX_ROUNDS = 4;

/**
 * The record driftless would hold after applying `base` until it converged on a platform that had
 * nothing but it: what `applied`, `owned`, tile ids and an endpoint's id would be. The platform's
 * answers are made up from the requests (an answer echoes nothing secret: secrets here are references).
 * `serverId(input)` names the id a created endpoint would get, `tileId(key)` the id of a new tile.
 */
export function recordOfBase(
  base: Omit<OneInput, "record">,
  made: { serverId: string; tileId: (key: string) => string },
  at: string,
): ResourceRecord | undefined {
  const planner = PLANNERS[base.kind];
  if (!planner) return undefined;
  let record: ResourceRecord | undefined;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const input = { ...base, record } as PlanInput;
    const plan = planner.plan(input);
    if (plan.outcome === "adopt") record = planner.record(input, plan, undefined, at);
    else if (plan.outcome === "send") record = planner.record(input, plan, answerTo(plan, base, made), at);
    else return record;
  }
  return record;
}

/** The answer a platform would give to `plan`'s request: an endpoint's id, a dashboard's tile ids. */
function answerTo(
  plan: ResourcePlan,
  base: Omit<OneInput, "record">,
  made: { serverId: string; tileId: (key: string) => string },
): Record<string, unknown> {
  const request = plan.request;
  if (request?.method === "POST") return { id: made.serverId, status: "Ready" };
  const tiles = request?.body.tiles;
  if (request?.method === "PUT" && Array.isArray(tiles)) {
    const keys = Array.isArray(base.spec.tiles) ? base.spec.tiles : [];
    return {
      tiles: tiles.map((tile, index) => {
        const key = isPlainObject(keys[index]) ? String(keys[index].key) : String(index);
        return {
          ...(isPlainObject(tile) ? tile : {}),
          id: (isPlainObject(tile) && tile.id) || made.tileId(key),
        };
      }),
    };
  }
  // PATCH answers: nothing the record needs; lists are taken from what was sent.
  return {};
}
