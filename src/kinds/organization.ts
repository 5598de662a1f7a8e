import { walk } from "../drift/compare.js";
import { oncePer } from "../once-per.js";
import { diffPatch, patchPlan, resendName } from "../plan/patch.js";
import { appliedRecord } from "../plan/record.js";
import { liveAfter, ownedAfter, threeWay } from "../plan/three-way.js";
import type { SpecOf } from "../plan/types.js";
import { member, omit } from "../plan/values.js";
import {
  OrganizationAnswer,
  type OrganizationUpdate,
  type PrivateEndpointEntry,
} from "../platform/management.js";
import type { ResourceRecord } from "../state/store.js";
import { type Complete, none, type PlanInput } from "./kind.js";
import { baselineRecord, foldLive, specPathOf } from "./shared.js";

/**
 * An organization, adopted by its id and never created nor deleted: its `name`, and `privateEndpoints`
 * as add/remove sets computed three-way (only entries driftless itself added are ever removed). An
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

/** The live list of an answer, as the organization's schema reads it; undefined when it has none. */
const Listed = OrganizationAnswer.pick({ [LIST]: true });
function entriesOf(answer: unknown): Entry[] | undefined {
  const list = Listed.safeParse(answer).data?.[LIST];
  return list?.map((e) => ({ id: e.id, description: e.description ?? "" }));
}

/** The live list as the platform last answered it (read once per record); undefined before driftless saw it. */
const listOfRecord = oncePer((record: ResourceRecord) => entriesOf(record.observed));
const liveList = (record: ResourceRecord | undefined) => record && listOfRecord(record);

function plan(input: PlanInput<"Organization">) {
  const { kind, name, spec, record, context } = input;
  const patch = diffPatch(omit(spec, ["organizationId", LIST]), record?.applied, {
    reassert: context.reassert,
  });
  const body: OrganizationUpdate = patch.body;
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
  const params = { organizationId: spec.organizationId };
  return patchPlan(
    { kind, name },
    changes,
    {
      request: { route: "updateOrganization", params, body },
      record: (answer, at) => recordOf(input, body, answer, at),
    },
    followUp,
  );
}

/** The record once `sent` was answered: the entries driftless now owns, the live list as answered or assumed. */
function recordOf(
  { kind, name, spec, record }: PlanInput<"Organization">,
  sent: OrganizationUpdate,
  answer: OrganizationAnswer,
  at: string,
): ResourceRecord {
  const sets = sent[LIST];
  const owned = record?.owned?.[LIST] ?? [];
  const desired = spec[LIST] ?? [];
  const added = sets?.add ?? [];
  const removed = sets?.remove ?? [];
  const nextOwned = sets ? ownedAfter(desired, liveList(record) ?? [], owned, added, keyOf) : owned;
  // An answer without the list: the live list is what the request made of the one last seen.
  const observed =
    spec[LIST] && !Array.isArray(answer[LIST])
      ? { ...answer, [LIST]: liveAfter(liveList(record) ?? [], added, removed, keyOf) }
      : answer;
  return appliedRecord({ kind, name, record }, spec, at, observed, {
    owned: { ...record?.owned, [LIST]: nextOwned },
  });
}

export const organization: Complete<"Organization"> = {
  kind: "Organization",
  phase: "dependents",
  references: () => [],
  address: (spec) => ({ organizationId: spec.organizationId }),
  create: none("an organization is never created nor deleted: its manifest names its organizationId"),
  delete: none("an organization is never created nor deleted"),
  update: {
    plan,
    learn: {
      // At first contact, and whenever the manifest lists an entry the last-seen list lacks (it may have
      // been added in the console since; an entry found live is never claimed).
      needs: ({ spec, record }) => {
        const desired = spec[LIST];
        if (!desired) return false;
        const live = liveList(record);
        const seen = new Set((live ?? []).map(keyOf));
        return !live || !desired.every((entry) => seen.has(keyOf(entry)));
      },
      keep: ({ kind, name, record }, live) => {
        const list = entriesOf(live);
        if (!list) return { why: `the organization's answer has no ${LIST} list` };
        const base = record ?? { kind, name };
        return { record: { ...base, observed: { ...base.observed, [LIST]: list } } };
      },
    },
  },
  observe: {
    read: ({ spec: { organizationId } }) => ({
      request: { route: "getOrganization", params: { organizationId }, body: undefined },
      live: (answer) => answer,
    }),
    drift: ({ spec }, live) =>
      walk(omit(spec, ["organizationId"]), live, {
        [LIST]: { kind: "contains", key: (entry) => String(member(entry, "id")) },
      }),
    fold: (record, fields, live) => foldLive(record, fields, live, [LIST]),
    // The live list is observed; none of its entries is driftless's (owned) until it adds one.
    baseline: (input, live, fields) =>
      foldLive(baselineRecord(input, input.spec, live, { owned: { [LIST]: [] } }), fields, live, [LIST]),
    listed: () => undefined,
  },
  poll: none("an organization is written, not watched"),
  // privateEndpoints.add[i] of a first request against an empty live list is the manifest's privateEndpoints[i].
  specPath: (path) => (path[0] === LIST ? [LIST, ...path.slice(2)] : specPathOf()(path)),
};
