import { MANAGEMENT_ROUTES } from "../platform/management.js";
import type { ResourceRecord } from "../state/store.js";
import { diffPatch, patchPlan } from "./patch.js";
import { liveAfter, ownedAfter, threeWay } from "./three-way.js";
import type { KindPlanner, PlanInput, ResourcePlan } from "./types.js";
import { isPlainObject, member, omit, stored } from "./values.js";

/** PATCH /v1/organizations/{organizationId}: changed `name`, and `privateEndpoints` as add/remove sets. */
export const ORGANIZATION_ROUTE = MANAGEMENT_ROUTES.organization;

type Entry = { id: string; description?: string };
const LIST = "privateEndpoints";
const keyOf = (entry: Entry) => entry.id;

/** The manifest's list; an entry without a description matches a live entry with any description. */
function desiredList(spec: Record<string, unknown>): Entry[] | undefined {
  const list = spec[LIST];
  return Array.isArray(list) ? (list.filter(isPlainObject) as Entry[]) : undefined;
}

/** An entry as the request takes it: the description is required there, "" when the manifest has none. */
const sendable = (entry: Entry) => ({ id: entry.id, description: entry.description ?? "" });

/** The live list as the platform last answered it; undefined before driftless has seen it. */
function liveList(record: ResourceRecord | undefined): Entry[] | undefined {
  const list = member(record?.observed, LIST);
  if (!Array.isArray(list)) return undefined;
  return list
    .filter(isPlainObject)
    .map((e) => ({ id: String(e.id), description: String(e.description ?? "") }));
}

export const organizationPlanner: KindPlanner = {
  plan({ kind, name, spec, record, context }: PlanInput): ResourcePlan {
    const { body, changes } = diffPatch(omit(spec, ["organizationId", LIST]), record?.applied, {
      reassert: context.reassert,
    });
    const desired = desiredList(spec);
    const live = liveList(record);
    let followUp: string | undefined;
    if (desired && !live) {
      // First contact: learn the live list before computing sets, so nothing already there is claimed.
      followUp = `learns the live ${LIST} list; the add/remove sets follow in a second request`;
      if (Object.keys(body).length === 0) body.name = spec.name;
    } else if (desired && live) {
      const owned = record?.owned?.[LIST] ?? [];
      const sets = threeWay(desired, live, owned, keyOf, LIST);
      if (sets.add.length > 0 || sets.remove.length > 0) {
        body[LIST] = {
          ...(sets.add.length > 0 ? { add: sets.add.map(sendable) } : {}),
          ...(sets.remove.length > 0 ? { remove: sets.remove.map(sendable) } : {}),
        };
      }
      changes.push(...sets.changes);
    }
    const params = { organizationId: String(spec.organizationId) };
    return patchPlan({ kind, name }, ORGANIZATION_ROUTE, params, { body, changes }, followUp);
  },

  record({ kind, name, spec, record }, plan, result, at): ResourceRecord {
    const sent = member(plan.request?.body, LIST);
    const owned = record?.owned?.[LIST] ?? [];
    const desired = desiredList(spec) ?? [];
    const added = (member(sent, "add") as Entry[] | undefined) ?? [];
    const removed = (member(sent, "remove") as Entry[] | undefined) ?? [];
    const nextOwned = sent ? ownedAfter(desired, liveList(record) ?? [], owned, added, keyOf) : owned;
    const answered = isPlainObject(result) ? result : undefined;
    const observed =
      answered && desiredList(spec) && !Array.isArray(answered[LIST])
        ? { ...answered, [LIST]: liveAfter(liveList(record) ?? [], added, removed, keyOf) }
        : answered;
    return {
      ...record,
      kind,
      name,
      applied: stored(spec) as Record<string, unknown>,
      appliedAt: at,
      observed,
      owned: { ...record?.owned, [LIST]: nextOwned },
    };
  },
};
