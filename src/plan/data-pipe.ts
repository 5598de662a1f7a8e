import { MANAGEMENT_ROUTES } from "../platform/management.js";
import type { ResourceRecord } from "../state/store.js";
import { diffPatch, patchPlan } from "./patch.js";
import { liveAfter, ownedAfter, threeWay } from "./three-way.js";
import type { KindPlanner, PlanContext, PlanInput, ResourcePlan } from "./types.js";
import { isPlainObject, member, omit, stored } from "./values.js";

/** PATCH .../datapipes/{dataPipeId}: the changed fields; postgres tableMappings as add/remove sets. */
export const DATA_PIPE_ROUTE = MANAGEMENT_ROUTES.dataPipe;

/** Credentials travel whole: a username without its password (or one half of a key pair) may be refused. */
const ATOMIC = [
  "source.kafka.credentials",
  "source.postgres.credentials",
  "source.objectStorage.accessKey",
  "source.kinesis.accessKey",
];

const LIST = "tableMappings";
type Mapping = Record<string, unknown> & {
  sourceSchemaName: string;
  sourceTable: string;
  targetTable: string;
};
const keyOf = (m: Mapping) => `${m.sourceSchemaName}.${m.sourceTable} -> ${m.targetTable}`;
const ref = (m: Mapping) => ({
  sourceSchemaName: m.sourceSchemaName,
  sourceTable: m.sourceTable,
  targetTable: m.targetTable,
});

type Fields =
  | { fields: Record<string, unknown>; mappings?: Mapping[] }
  | { problem: ResourcePlan["outcome"]; reason: string };

/**
 * The request's fields from the spec: ids out, endpoint names replaced by their server ids, the desired
 * table mappings set apart (they are sent as sets, not as a field).
 */
function requestFields(spec: Record<string, unknown>, context: PlanContext): Fields {
  const fields = omit(spec, ["organizationId", "serviceId", "dataPipeId"]);
  const source = { ...(fields.source as Record<string, unknown>) };
  fields.source = source;
  const kafka = member(source, "kafka");
  const names = member(kafka, "reversePrivateEndpoints");
  if (isPlainObject(kafka) && Array.isArray(names)) {
    const ids = [...((kafka.reversePrivateEndpointIds as string[] | undefined) ?? [])];
    for (const endpoint of names as string[]) {
      const found = context.endpoint(endpoint);
      if (found.state === "missing") return { problem: "refuse", reason: found.reason };
      if (found.state === "waiting") return { problem: "wait", reason: found.reason };
      if (!ids.includes(found.id)) ids.push(found.id);
    }
    source.kafka = { ...omit(kafka, ["reversePrivateEndpoints"]), reversePrivateEndpointIds: ids };
  }
  const postgres = member(source, "postgres");
  if (!isPlainObject(postgres) || !Array.isArray(postgres[LIST])) return { fields };
  source.postgres = omit(postgres, [LIST]);
  return { fields, mappings: postgres[LIST] as Mapping[] };
}

function liveMappings(record: ResourceRecord | undefined): Mapping[] | undefined {
  const list = member(member(member(record?.observed, "source"), "postgres"), LIST);
  return Array.isArray(list) ? (list.filter(isPlainObject) as Mapping[]) : undefined;
}

/** `answer` with the live mappings driftless assumes, when the answer left them out. */
function withMappings(answer: Record<string, unknown>, tableMappings: Mapping[]): Record<string, unknown> {
  const source = isPlainObject(answer.source) ? answer.source : {};
  const postgres = isPlainObject(source.postgres) ? source.postgres : {};
  return { ...answer, source: { ...source, postgres: { ...postgres, [LIST]: tableMappings } } };
}

export const dataPipePlanner: KindPlanner = {
  plan({ kind, name, spec, record, context }: PlanInput): ResourcePlan {
    const request = requestFields(spec, context);
    if ("problem" in request)
      return { kind, name, outcome: request.problem, reason: request.reason, changes: [] };
    const { body, changes } = diffPatch(request.fields, record?.applied, {
      atomic: ATOMIC,
      reassert: context.reassert,
    });
    let followUp: string | undefined;
    const live = liveMappings(record);
    if (request.mappings && !live) {
      // First contact: learn the live mappings before computing sets, so nothing already there is claimed.
      followUp = `learns the live ${LIST}; tableMappingsToAdd/ToRemove follow in a second request`;
      if (Object.keys(body).length === 0) body.name = spec.name;
    } else if (request.mappings && live) {
      const owned = record?.owned?.[LIST] ?? [];
      const sets = threeWay(request.mappings, live, owned, keyOf, `source.postgres.${LIST}`);
      // A changed mapping (same identity, other columns) is removed and added again, when it is ours.
      const ownedKeys = new Set(owned);
      const liveKeys = new Set(live.map(keyOf));
      const replaced = sets.add.filter((m) => liveKeys.has(keyOf(m)) && ownedKeys.has(keyOf(m)));
      const remove = [...sets.remove, ...replaced].map(ref);
      if (sets.add.length > 0 || remove.length > 0) {
        const source = (body.source ?? {}) as Record<string, unknown>;
        source.postgres = {
          ...(source.postgres as Record<string, unknown> | undefined),
          ...(sets.add.length > 0 ? { tableMappingsToAdd: sets.add } : {}),
          ...(remove.length > 0 ? { tableMappingsToRemove: remove } : {}),
        };
        body.source = source;
      }
      changes.push(...sets.changes);
    }
    const params = {
      organizationId: String(spec.organizationId),
      serviceId: String(spec.serviceId),
      dataPipeId: String(spec.dataPipeId),
    };
    return patchPlan({ kind, name }, DATA_PIPE_ROUTE, params, { body, changes }, followUp);
  },

  record({ kind, name, spec, record, context }, plan, result, at): ResourceRecord {
    const request = requestFields(spec, context);
    const fields = "fields" in request ? request.fields : {};
    const mappings = "fields" in request ? request.mappings : undefined;
    const sent = member(member(plan.request?.body, "source"), "postgres");
    const added = (member(sent, "tableMappingsToAdd") as Mapping[] | undefined) ?? [];
    const owned = record?.owned?.[LIST] ?? [];
    const sentSets =
      member(sent, "tableMappingsToAdd") !== undefined || member(sent, "tableMappingsToRemove") !== undefined;
    const nextOwned =
      mappings && sentSets ? ownedAfter(mappings, liveMappings(record) ?? [], owned, added, keyOf) : owned;
    const removed = (member(sent, "tableMappingsToRemove") as Mapping[] | undefined) ?? [];
    const answered = isPlainObject(result) ? result : undefined;
    return {
      ...record,
      kind,
      name,
      applied: stored(fields) as Record<string, unknown>,
      appliedAt: at,
      observed:
        answered && mappings && !liveMappings({ kind, name, observed: answered })
          ? withMappings(answered, liveAfter(liveMappings(record) ?? [], added, removed, keyOf))
          : answered,
      ...(mappings ? { owned: { ...record?.owned, [LIST]: nextOwned } } : {}),
    };
  },
};
