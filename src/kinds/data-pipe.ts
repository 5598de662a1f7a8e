import { walk } from "../drift/compare.js";
import { sameId } from "../manifests/identity.js";
import { type TableMapping, tableMappingKey } from "../manifests/specs/data-pipe.js";
import { diffPatch, patchPlan, resendName } from "../plan/patch.js";
import { appliedRecord } from "../plan/record.js";
import { liveAfter, ownedAfter, threeWay } from "../plan/three-way.js";
import type { ResourcePlan, SpecOf, Write } from "../plan/types.js";
import { isPlainObject, member, omit } from "../plan/values.js";
import type { DataPipe as DataPipeAnswer, UpdateDataPipeBody } from "../platform/management.js";
import type { ResourceRecord } from "../state/store.js";
import {
  type Complete,
  none,
  type PlanContext,
  type PlanInput,
  type ReferenceState,
  type Subject,
} from "./kind.js";
import { foldLive, specPathOf } from "./shared.js";

/**
 * A data pipe, adopted by its `dataPipeId`: PATCHed with the changed fields; postgres `tableMappings`
 * as add/remove sets computed three-way, and kafka endpoint manifest names as the endpoints' server ids
 * (the pipe waits for endpoints not created yet). Read with its GET.
 */

type Spec = SpecOf<"DataPipe">;

/** Credentials travel whole: a username without its password (or one half of a key pair) may be refused. */
const ATOMIC = [
  "source.kafka.credentials",
  "source.postgres.credentials",
  "source.objectStorage.accessKey",
  "source.kinesis.accessKey",
];

const LIST = "tableMappings";
const LIST_PATH = `source.postgres.${LIST}`;
type MappingRef = Pick<TableMapping, "sourceSchemaName" | "sourceTable" | "targetTable">;
const ref = (m: MappingRef): MappingRef => ({
  sourceSchemaName: m.sourceSchemaName,
  sourceTable: m.sourceTable,
  targetTable: m.targetTable,
});

/** The desired pipe with its endpoint names as ids, and the endpoint it cannot name yet, if any. */
type Desired = { fields: UpdateDataPipeBody; mappings?: TableMapping[]; unresolved?: ReferenceState };

/**
 * The pipe as the manifest wants it, in the platform's terms: ids out, endpoint names replaced by their
 * server ids (left out, with why, while an endpoint has none), the desired table mappings set apart
 * (the update sends them as sets, drift compares them as entries the live list contains).
 */
function desired(spec: Spec, context: Pick<PlanContext, "ref">): Desired {
  const fields: UpdateDataPipeBody = omit(spec, ["organizationId", "serviceId", "dataPipeId", "source"]);
  if (!spec.source) return { fields };
  const { kafka, postgres, ...others } = spec.source;
  const source: NonNullable<UpdateDataPipeBody["source"]> = { ...others };
  fields.source = source;
  let unresolved: ReferenceState | undefined;
  if (kafka) {
    const { reversePrivateEndpoints: names, ...kafkaFields } = kafka;
    source.kafka = kafkaFields;
    if (names) {
      const ids = [...(kafka.reversePrivateEndpointIds ?? [])];
      for (const endpoint of names) {
        const found = context.ref("ReversePrivateEndpoint", endpoint);
        if (found.state !== "ready") unresolved ??= found;
        else if (!ids.some((id) => sameId(id, found.id))) ids.push(found.id);
      }
      source.kafka = unresolved
        ? omit(kafkaFields, ["reversePrivateEndpointIds"])
        : { ...kafkaFields, reversePrivateEndpointIds: ids };
    }
  }
  const done = (mappings?: TableMapping[]): Desired => ({
    fields,
    ...(mappings ? { mappings } : {}),
    ...(unresolved ? { unresolved } : {}),
  });
  if (!postgres) return done();
  const { [LIST]: mappings, ...postgresFields } = postgres;
  source.postgres = postgresFields;
  return done(mappings);
}

/** What drift compares: the desired pipe with its table mappings back in their place. */
function compared({ fields, mappings }: Desired): Record<string, unknown> {
  const postgres = fields.source?.postgres;
  if (!mappings || !postgres) return fields;
  return { ...fields, source: { ...fields.source, postgres: { ...postgres, [LIST]: mappings } } };
}

const isMapping = (value: unknown): value is TableMapping =>
  isPlainObject(value) &&
  typeof value.sourceSchemaName === "string" &&
  typeof value.sourceTable === "string" &&
  typeof value.targetTable === "string";

/** The live mappings of an answer (malformed entries left out); undefined when it has no list. */
function mappingsOf(answer: unknown): TableMapping[] | undefined {
  const list = member(member(member(answer, "source"), "postgres"), LIST);
  return Array.isArray(list) ? list.filter(isMapping) : undefined;
}

const liveMappings = (record: ResourceRecord | undefined) => mappingsOf(record?.observed);

/** `answer` with the live mappings driftless assumes, when the answer left them out. */
function withMappings(answer: object | undefined, tableMappings: TableMapping[]): Record<string, unknown> {
  const source = member(answer, "source");
  const postgres = member(source, "postgres");
  return {
    ...answer,
    source: {
      ...(isPlainObject(source) ? source : {}),
      postgres: { ...(isPlainObject(postgres) ? postgres : {}), [LIST]: tableMappings },
    },
  };
}

function plan(input: PlanInput<"DataPipe">): ResourcePlan {
  const { kind, name, spec, record, context } = input;
  const want = desired(spec, context);
  if (want.unresolved && want.unresolved.state !== "ready") {
    const outcome = want.unresolved.state === "missing" ? "refuse" : "wait";
    return { kind, name, outcome, reason: want.unresolved.reason, changes: [] };
  }
  const patch = diffPatch(want.fields, record?.applied, { atomic: ATOMIC, reassert: context.reassert });
  const body: UpdateDataPipeBody = patch.body;
  const { changes } = patch;
  let followUp: string | undefined;
  let reason: string | undefined;
  const live = liveMappings(record);
  if (want.mappings && !live) {
    // First contact: learn the live mappings before computing sets, so nothing already there is claimed.
    followUp = `learns the live ${LIST}; tableMappingsToAdd/ToRemove follow in a second request`;
    resendName(body, spec.name);
  } else if (want.mappings && live) {
    const owned = record?.owned?.[LIST] ?? [];
    const sets = threeWay(want.mappings, live, owned, tableMappingKey, LIST_PATH);
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
  const write = {
    request: { route: "updateDataPipe", params, body },
    record: (answer, at) => recordOf(input, want, body, answer, at),
  } satisfies Write<"updateDataPipe">;
  return patchPlan({ kind, name }, changes, write, followUp, reason);
}

/** The record once `body` was answered: the mappings driftless now owns, the live list as answered or assumed. */
function recordOf(
  { kind, name, record }: Subject<"DataPipe">,
  { fields, mappings }: Desired,
  body: UpdateDataPipeBody,
  answer: DataPipeAnswer,
  at: string,
): ResourceRecord {
  const sent = body.source?.postgres;
  const added = sent?.tableMappingsToAdd ?? [];
  const removed = sent?.tableMappingsToRemove ?? [];
  const owned = record?.owned?.[LIST] ?? [];
  const sentSets = sent?.tableMappingsToAdd !== undefined || sent?.tableMappingsToRemove !== undefined;
  const nextOwned =
    mappings && sentSets
      ? ownedAfter(mappings, liveMappings(record) ?? [], owned, added, tableMappingKey)
      : owned;
  const observed =
    mappings && !mappingsOf(answer)
      ? withMappings(answer, liveAfter(liveMappings(record) ?? [], added, removed, tableMappingKey))
      : answer;
  return appliedRecord({ kind, name, record }, fields, at, observed, {
    ...(mappings ? { owned: { ...record?.owned, [LIST]: nextOwned } } : {}),
  });
}

export const dataPipe: Complete<"DataPipe"> = {
  kind: "DataPipe",
  phase: "dependents",
  create: none("a data pipe is adopted by the dataPipeId its manifest names"),
  update: {
    plan,
    learn: {
      // At first contact, and whenever the manifest lists a mapping the last-seen list lacks (it may have
      // been added in the console since; a mapping found live is never claimed).
      needs: ({ spec, record }) => {
        const wanted = spec.source?.postgres?.[LIST];
        if (!wanted) return false;
        const live = liveMappings(record);
        const liveKeys = new Set((live ?? []).map(tableMappingKey));
        return !live || !wanted.every((m) => liveKeys.has(tableMappingKey(m)));
      },
      // Only the mappings are kept of the answer: it may hold credentials.
      keep: ({ kind, name, record }, live) => {
        const mappings = mappingsOf(live);
        if (!mappings) return { why: `the pipe's answer has no ${LIST_PATH} list` };
        const base = record ?? { kind, name };
        return { record: { ...base, observed: withMappings(base.observed, mappings) } };
      },
    },
  },
  observe: {
    read: ({ spec: { organizationId, serviceId, dataPipeId } }) => ({
      request: { route: "getDataPipe", params: { organizationId, serviceId, dataPipeId }, body: undefined },
      live: (answer) => answer,
    }),
    drift: ({ spec, context }, live) =>
      walk(compared(desired(spec, context)), live, {
        "source.kafka.reversePrivateEndpointIds": { kind: "set" },
        [LIST_PATH]: { kind: "contains", key: mappingKeyOf },
      }),
    fold: (record, fields, live) => foldLive(record, fields, live, [LIST_PATH]),
  },
  poll: none("a data pipe is written, not watched"),
  specPath: (path, spec) => {
    // tableMappingsToAdd[i] is the manifest's tableMappings[i] (a first apply adds them all); endpoint
    // names became ids.
    if (path[2] === "tableMappingsToAdd") return ["source", "postgres", LIST, ...path.slice(3)];
    if (path[2] === "reversePrivateEndpointIds" && spec.source?.kafka?.reversePrivateEndpoints)
      return ["source", "kafka"];
    return specPathOf()(path);
  },
};

/** A live entry's identity as the manifest's mappings are keyed. */
const mappingKeyOf = (entry: unknown) => (isMapping(entry) ? tableMappingKey(entry) : String(entry));
