import type { PrivateEndpointEntry, UpdateOrganizationBody } from "../platform/management.js";
import type { ResourceRecord } from "../state/store.js";
import { diffPatch, patchPlan, resendName } from "./patch.js";
import { appliedRecord } from "./record.js";
import { liveAfter, ownedAfter, threeWay } from "./three-way.js";
import type { KindPlanner, LiveFinding, LiveInput, LiveRead, ReadOutcome, SpecOf } from "./types.js";
import { isPlainObject, member, omit } from "./values.js";

/**
 * The `updateOrganization` route: the changed `name`, and `privateEndpoints` as add/remove sets. An
 * entry without a description in the manifest matches a live entry with any description.
 */

type Entry = NonNullable<SpecOf<"Organization">["privateEndpoints"]>[number];
const LIST = "privateEndpoints";
const keyOf = (entry: Entry) => entry.id;

/** An entry as the request takes it: the description is required there, "" when the manifest has none. */
const sendable = (entry: Entry): PrivateEndpointEntry => ({
  id: entry.id,
  description: entry.description ?? "",
});

/** The live list as the platform last answered it; undefined before driftless has seen it. */
function liveList(record: ResourceRecord | undefined): Entry[] | undefined {
  const list = member(record?.observed, LIST);
  if (!Array.isArray(list)) return undefined;
  return list
    .filter(isPlainObject)
    .map((e) => ({ id: String(e.id), description: String(e.description ?? "") }));
}

/**
 * With reads on, the read that tells the live list before any set is computed: at first contact, and
 * whenever the manifest lists an entry the last-seen list lacks (it may have been added in the console
 * since; an entry found live is never claimed). None while every desired entry was seen live.
 */
function listRead({ spec, record }: LiveInput<"Organization">): LiveRead | undefined {
  const desired = spec[LIST];
  if (!desired) return undefined;
  const live = new Set((liveList(record) ?? []).map(keyOf));
  if (liveList(record) && desired.every((entry) => live.has(keyOf(entry)))) return undefined;
  return { route: "getOrganization", params: { organizationId: spec.organizationId }, body: undefined };
}

/** The record with the live list the organization's read answered. */
function fromRead({ kind, name, record }: LiveInput<"Organization">, read: ReadOutcome): LiveFinding {
  if ("error" in read) return { why: read.error };
  const list = liveList({ kind, name, observed: isPlainObject(read.answer) ? read.answer : {} });
  if (!list) return { why: `the organization's answer has no ${LIST} list` };
  const base = record ?? { kind, name };
  return { record: { ...base, observed: { ...base.observed, [LIST]: list } } };
}

export const organizationPlanner: KindPlanner<"Organization"> = {
  phase: "dependents",

  plan({ kind, name, spec, record, context }) {
    const patch = diffPatch(omit(spec, ["organizationId", LIST]), record?.applied, {
      reassert: context.reassert,
    });
    const body: UpdateOrganizationBody = patch.body;
    const { changes } = patch;
    const desired = spec[LIST];
    const live = liveList(record);
    let followUp: string | undefined;
    if (desired && !live) {
      // First contact: learn the live list before computing sets, so nothing already there is claimed.
      followUp = `learns the live ${LIST} list; the add/remove sets follow in a second request`;
      resendName(body, spec.name);
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
    const request = {
      route: "updateOrganization",
      params: { organizationId: spec.organizationId },
      body,
    } as const;
    return patchPlan({ kind, name }, request, changes, followUp);
  },

  record({ kind, name, spec, record }, plan, result, at) {
    const sent = plan.request?.route === "updateOrganization" ? plan.request.body[LIST] : undefined;
    const owned = record?.owned?.[LIST] ?? [];
    const desired = spec[LIST] ?? [];
    const added = sent?.add ?? [];
    const removed = sent?.remove ?? [];
    const nextOwned = sent ? ownedAfter(desired, liveList(record) ?? [], owned, added, keyOf) : owned;
    const answered = isPlainObject(result) ? result : undefined;
    const observed =
      answered && spec[LIST] && !Array.isArray(answered[LIST])
        ? { ...answered, [LIST]: liveAfter(liveList(record) ?? [], added, removed, keyOf) }
        : answered;
    return appliedRecord({ kind, name, record }, spec, at, observed, {
      owned: { ...record?.owned, [LIST]: nextOwned },
    });
  },

  liveRead: listRead,
  fromRead,
};
