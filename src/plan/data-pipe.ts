import { sameId } from "../manifests/identity.js";
import { type TableMapping, tableMappingKey } from "../manifests/kinds/data-pipe.js";
import type { UpdateDataPipeBody } from "../platform/management.js";
import type { ResourceRecord } from "../state/store.js";
import { diffPatch, patchPlan, resendName } from "./patch.js";
import { appliedRecord } from "./record.js";
import { liveAfter, ownedAfter, threeWay } from "./three-way.js";
import type {
  KindPlanner,
  LiveFinding,
  LiveInput,
  LiveRead,
  PlanContext,
  ReadOutcome,
  ResourcePlan,
  SpecOf,
} from "./types.js";
import { isPlainObject, member, omit } from "./values.js";

/**
 * The `updateDataPipe` route: the changed fields; postgres `tableMappings` as add/remove sets, and
 * kafka endpoint manifest names as the endpoints' server ids.
 */

/** Credentials travel whole: a username without its password (or one half of a key pair) may be refused. */
const ATOMIC = [
  "source.kafka.credentials",
  "source.postgres.credentials",
  "source.objectStorage.accessKey",
  "source.kinesis.accessKey",
];

const LIST = "tableMappings";
type MappingRef = Pick<TableMapping, "sourceSchemaName" | "sourceTable" | "targetTable">;
const ref = (m: MappingRef): MappingRef => ({
  sourceSchemaName: m.sourceSchemaName,
  sourceTable: m.sourceTable,
  targetTable: m.targetTable,
});

type Fields =
  | { fields: UpdateDataPipeBody; mappings?: TableMapping[] }
  | { problem: ResourcePlan["outcome"]; reason: string };

/**
 * The request's fields from the spec: ids out, endpoint names replaced by their server ids, the desired
 * table mappings set apart (they are sent as sets, not as a field).
 */
export function requestFields(spec: SpecOf<"DataPipe">, context: PlanContext): Fields {
  const fields: UpdateDataPipeBody = omit(spec, ["organizationId", "serviceId", "dataPipeId", "source"]);
  if (!spec.source) return { fields };
  const { kafka, postgres, ...others } = spec.source;
  const source: NonNullable<UpdateDataPipeBody["source"]> = { ...others };
  fields.source = source;
  if (kafka) {
    const { reversePrivateEndpoints: names, ...kafkaFields } = kafka;
    source.kafka = kafkaFields;
    if (names) {
      const ids = [...(kafka.reversePrivateEndpointIds ?? [])];
      for (const endpoint of names) {
        const found = context.endpoint(endpoint);
        if (found.state === "missing") return { problem: "refuse", reason: found.reason };
        if (found.state === "waiting") return { problem: "wait", reason: found.reason };
        if (!ids.some((id) => sameId(id, found.id))) ids.push(found.id);
      }
      source.kafka = { ...kafkaFields, reversePrivateEndpointIds: ids };
    }
  }
  if (!postgres) return { fields };
  const { [LIST]: mappings, ...postgresFields } = postgres;
  source.postgres = postgresFields;
  return mappings ? { fields, mappings } : { fields };
}

const isMapping = (value: unknown): value is TableMapping =>
  isPlainObject(value) &&
  typeof value.sourceSchemaName === "string" &&
  typeof value.sourceTable === "string" &&
  typeof value.targetTable === "string";

function liveMappings(record: ResourceRecord | undefined): TableMapping[] | undefined {
  const list = member(member(member(record?.observed, "source"), "postgres"), LIST);
  return Array.isArray(list) ? list.filter(isMapping) : undefined;
}

/** `answer` with the live mappings driftless assumes, when the answer left them out. */
function withMappings(
  answer: Record<string, unknown>,
  tableMappings: TableMapping[],
): Record<string, unknown> {
  const source = isPlainObject(answer.source) ? answer.source : {};
  const postgres = isPlainObject(source.postgres) ? source.postgres : {};
  return { ...answer, source: { ...source, postgres: { ...postgres, [LIST]: tableMappings } } };
}

/**
 * With reads on, the read that tells a postgres pipe's live table mappings before any set is computed:
 * at first contact, and whenever the manifest lists a mapping the last-seen list lacks (it may have been
 * added in the console since; a mapping found live is never claimed).
 */
function listRead({ spec, record }: LiveInput<"DataPipe">): LiveRead | undefined {
  const desired = spec.source?.postgres?.[LIST];
  if (!desired) return undefined;
  const live = liveMappings(record);
  const liveKeys = new Set((live ?? []).map(tableMappingKey));
  if (live && desired.every((m) => liveKeys.has(tableMappingKey(m)))) return undefined;
  const { organizationId, serviceId, dataPipeId } = spec;
  return { route: "getDataPipe", params: { organizationId, serviceId, dataPipeId }, body: undefined };
}

/** The record with the live mappings the pipe's read answered (nothing else of it: it may hold credentials). */
function fromRead({ kind, name, record }: LiveInput<"DataPipe">, read: ReadOutcome): LiveFinding {
  if ("error" in read) return { why: read.error };
  const live = liveMappings({ kind, name, observed: isPlainObject(read.answer) ? read.answer : {} });
  if (!live) return { why: `the pipe's answer has no source.postgres.${LIST} list` };
  const base = record ?? { kind, name };
  return { record: { ...base, observed: withMappings(base.observed ?? {}, live) } };
}

export const dataPipePlanner: KindPlanner<"DataPipe"> = {
  phase: "dependents",

  plan({ kind, name, spec, record, context }) {
    const request = requestFields(spec, context);
    if ("problem" in request)
      return { kind, name, outcome: request.problem, reason: request.reason, changes: [] };
    const patch = diffPatch(request.fields, record?.applied, { atomic: ATOMIC, reassert: context.reassert });
    const body: UpdateDataPipeBody = patch.body;
    const { changes } = patch;
    let followUp: string | undefined;
    let reason: string | undefined;
    const live = liveMappings(record);
    if (request.mappings && !live) {
      // First contact: learn the live mappings before computing sets, so nothing already there is claimed.
      followUp = `learns the live ${LIST}; tableMappingsToAdd/ToRemove follow in a second request`;
      resendName(body, spec.name);
    } else if (request.mappings && live) {
      const owned = record?.owned?.[LIST] ?? [];
      const sets = threeWay(request.mappings, live, owned, tableMappingKey, `source.postgres.${LIST}`);
      // A changed mapping (same identity, other columns) is removed and added again, when it is ours:
      // the removal alone first, the add in the next request, since the platform may apply a body's
      // adds before its removals (docs/platform-apis.md#changed-table-mappings).
      const ownedKeys = new Set(owned);
      const liveKeys = new Set(live.map(tableMappingKey));
      const replaced = sets.add.filter(
        (m) => liveKeys.has(tableMappingKey(m)) && ownedKeys.has(tableMappingKey(m)),
      );
      const replacedKeys = new Set(replaced.map(tableMappingKey));
      const add = sets.add.filter((m) => !replacedKeys.has(tableMappingKey(m)));
      const remove = [...sets.remove, ...replaced].map(ref);
      if (add.length > 0 || remove.length > 0) {
        const source = body.source ?? {};
        source.postgres = {
          ...source.postgres,
          ...(add.length > 0 ? { tableMappingsToAdd: add } : {}),
          ...(remove.length > 0 ? { tableMappingsToRemove: remove } : {}),
        };
        body.source = source;
      }
      if (replaced.length > 0) {
        followUp = `removes the changed ${LIST} first; they are added again in a second request`;
        reason = `${patch.changes.length + sets.changes.length} change(s)`;
      }
      changes.push(...sets.changes);
    }
    const params = {
      organizationId: spec.organizationId,
      serviceId: spec.serviceId,
      dataPipeId: spec.dataPipeId,
    };
    return patchPlan({ kind, name }, { route: "updateDataPipe", params, body }, changes, followUp, reason);
  },

  record({ kind, name, spec, record, context }, plan, result, at) {
    const request = requestFields(spec, context);
    const fields = "fields" in request ? request.fields : {};
    const mappings = "fields" in request ? request.mappings : undefined;
    const sent = plan.request?.route === "updateDataPipe" ? plan.request.body.source?.postgres : undefined;
    const added = sent?.tableMappingsToAdd ?? [];
    const removed = sent?.tableMappingsToRemove ?? [];
    const owned = record?.owned?.[LIST] ?? [];
    const sentSets = sent?.tableMappingsToAdd !== undefined || sent?.tableMappingsToRemove !== undefined;
    const nextOwned =
      mappings && sentSets
        ? ownedAfter(mappings, liveMappings(record) ?? [], owned, added, tableMappingKey)
        : owned;
    const answered = isPlainObject(result) ? result : undefined;
    const observed =
      answered && mappings && !liveMappings({ kind, name, observed: answered })
        ? withMappings(answered, liveAfter(liveMappings(record) ?? [], added, removed, tableMappingKey))
        : answered;
    return appliedRecord({ kind, name, record }, fields, at, observed, {
      ...(mappings ? { owned: { ...record?.owned, [LIST]: nextOwned } } : {}),
    });
  },

  liveRead: listRead,
  fromRead,
};
