import { type DriftField, walk } from "../drift/compare.js";
import { sameId } from "../manifests/identity.js";
import {
  CREATE_ONLY,
  CREATE_ONLY_BY_HOLDER,
  type TableMapping,
  tableMappingKey,
  valueAt,
} from "../manifests/specs/data-pipe.js";
import { diffPatch, patchPlan, resendName } from "../plan/patch.js";
import { appliedRecord } from "../plan/record.js";
import { liveAfter, ownedAfter, threeWay } from "../plan/three-way.js";
import type { Change, ResourcePlan, SpecOf, Write } from "../plan/types.js";
import { isPlainObject, member, omit, same } from "../plan/values.js";
import type { DataPipeAnswer, DataPipeCreate, DataPipeUpdate } from "../platform/management.js";
import type { ResourceRecord } from "../state/store.js";
import {
  type Complete,
  type LiveRead,
  none,
  type PlanContext,
  type PlanInput,
  type ReferenceState,
  type Subject,
} from "./kind.js";
import { baselineRecord, foldLive, specPathOf, withAt } from "./shared.js";

/**
 * A data pipe: adopted by its `dataPipeId`, or created with its POST when the manifest names none.
 * PATCHed with the changed fields; postgres `tableMappings` as add/remove sets computed three-way, and
 * kafka endpoint manifest names as the endpoints' server ids (the pipe waits for endpoints not created
 * yet); then its state command (start, stop) and its scaling through their own PATCHes, one request a
 * round. A field only a create sets cannot change afterwards (refused). Read with its GET, deleted with
 * its DELETE.
 */

type Spec = SpecOf<"DataPipe">;
type Pipe = Subject<"DataPipe">;

/** The pipe's id: the one the manifest names, or the one the platform answered its create with. */
const pipeIdOf = ({ spec, record }: Pipe): string | undefined => spec.dataPipeId ?? record?.serverId;

/** The path parameters of the pipe's own routes (its PATCH, state command and scaling). */
const pipeParams = (pipe: Pipe) => ({
  organizationId: pipe.spec.organizationId,
  serviceId: pipe.spec.serviceId,
  dataPipeId: pipeIdOf(pipe) ?? "",
});

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
type Desired = { fields: DataPipeUpdate; mappings?: TableMapping[]; unresolved?: ReferenceState };

/**
 * The pipe as the manifest wants it, in the platform's terms: ids out, endpoint names replaced by their
 * server ids (left out, with why, while an endpoint has none), the desired table mappings set apart
 * (the update sends them as sets, drift compares them as entries the live list contains).
 */
function desired(spec: Spec, context: Pick<PlanContext, "ref">): Desired {
  const fields: DataPipeUpdate = omit(spec, [
    "organizationId",
    "serviceId",
    "dataPipeId",
    "source",
    "state",
    "scaling",
  ]);
  if (!spec.source) return { fields };
  const { kafka, postgres, ...others } = spec.source;
  const source: NonNullable<DataPipeUpdate["source"]> = { ...others };
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

/** The pipe's update: its PATCH, else its state command, else its scaling; one request a round. */
function plan(input: PlanInput<"DataPipe">): ResourcePlan {
  const { kind, name, spec, context } = input;
  const want = desired(spec, context);
  if (want.unresolved && want.unresolved.state !== "ready") {
    const outcome = want.unresolved.state === "missing" ? "refuse" : "wait";
    return { kind, name, outcome, reason: want.unresolved.reason, changes: [] };
  }
  const fixed = createOnlyChanges(input, want);
  if (fixed.length > 0) {
    const reason =
      `${fixed.map((c) => c.path).join(", ")} changed, but only a create sets it: revert the change, or ` +
      `create a replacement under a new manifest name (and move what uses the pipe to it)`;
    return { kind, name, outcome: "refuse", reason, changes: fixed };
  }
  const patch = patchOf(input, want);
  if (patch.outcome !== "none") return patch;
  return stateCommand(input) ?? scalingPatch(input) ?? patch;
}

/** The changed fields that only a create sets, of a pipe driftless created. */
function createOnlyChanges({ spec, record }: PlanInput<"DataPipe">, want: Desired): Change[] {
  if (spec.dataPipeId !== undefined || !record?.applied) return [];
  const full = compared(want);
  return CREATE_ONLY.flatMap((path): Change[] => {
    const [to, from] = [valueAt(full, path), valueAt(record.applied, path)];
    return same(to, from)
      ? []
      : [{ path, ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }), op: "set" }];
  });
}

/** The pipe's PATCH of the changed fields (never those only a create sets), with its table mappings' sets. */
function patchOf(input: PlanInput<"DataPipe">, want: Desired): ResourcePlan {
  const { kind, name, spec, record, context } = input;
  const patch = diffPatch(withoutCreateOnly(want.fields), record?.applied, {
    atomic: ATOMIC,
    reassert: context.reassert,
  });
  const body: DataPipeUpdate = patch.body;
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
  const params = pipeParams(input);
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
  body: DataPipeUpdate,
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
  return appliedRecord({ kind, name, record }, withCommands(fields, record), at, observed, {
    ...(mappings ? { owned: { ...record?.owned, [LIST]: nextOwned } } : {}),
  });
}

/** `fields` with the state and scaling last sent, which their own requests keep in `applied`. */
function withCommands(fields: object, record: ResourceRecord | undefined): Record<string, unknown> {
  const applied = record?.applied;
  return {
    ...fields,
    ...(applied?.state === undefined ? {} : { state: applied.state }),
    ...(applied?.scaling === undefined ? {} : { scaling: applied.scaling }),
  };
}

/**
 * `fields` without those only a create sets: what a PATCH may carry. Only the objects on the way to a
 * removed field are copied (the rest, secrets included, is kept as it is). Runs for every pipe of every
 * pass: each holder is looked at once.
 */
function withoutCreateOnly(fields: DataPipeUpdate): DataPipeUpdate {
  let out: Record<string, unknown> = fields;
  for (const { holder, leaves } of CREATE_ONLY_BY_HOLDER) {
    const found = valueAt(out, holder);
    if (!isPlainObject(found) || !leaves.some((leaf) => leaf in found)) continue;
    out = withAt(out, holder, omit(found, leaves));
  }
  return out;
}

/** The live states from which a pipe is stopped, or stops; a start is refused unless it is stopped or failed. */
const STOPPED = new Set(["Stopped", "Stopping"]);
const STARTABLE = new Set(["Stopped", "Failed"]);

type Wanted = NonNullable<Spec["state"]>;

/**
 * What a pipe in the live `state` needs to be as `want` says: `stop` when it should be stopped and is
 * not (stop is taken from any state), `start` when it should run and is stopped or failed (the only
 * states a start is taken from), `wait` while it is stopping and should run; undefined when nothing.
 * An unknown state is stopped (idempotent), never started.
 */
function commandFor(want: Wanted, state: string | undefined): "start" | "stop" | "wait" | undefined {
  if (want === "stopped") return state === undefined || !STOPPED.has(state) ? "stop" : undefined;
  if (state === "Stopping") return "wait";
  return state !== undefined && STARTABLE.has(state) ? "start" : undefined;
}

/** The live state of an answer, when it has one. */
const stateOf = (answer: unknown): string | undefined => {
  const state = member(answer, "state");
  return typeof state === "string" ? state : undefined;
};

/**
 * The state command the pipe needs (commandFor), read from the last answer's state (or read, with reads
 * on); a wait while it is stopping.
 */
function stateCommand(input: PlanInput<"DataPipe">): ResourcePlan | undefined {
  const { kind, name, spec, record } = input;
  const want = spec.state;
  if (want === undefined) return undefined;
  const state = stateOf(record?.observed);
  const command = commandFor(want, state);
  // Already as wanted: remember what was asked, so that a change of spec.state is seen.
  if (command === undefined) return undefined;
  if (state === undefined && record?.applied?.state === want) return undefined;
  const changes: Change[] = [
    { path: "state", ...(state === undefined ? {} : { from: state }), to: want, op: "set" },
  ];
  if (command === "wait") {
    const reason =
      "the pipe is Stopping: it is started once it has stopped (the platform starts a pipe only from Stopped or Failed); driftless learns its state from a read (DRIFTLESS_READS=on) or from its next answer";
    return { kind, name, outcome: "wait", reason, changes };
  }
  const params = pipeParams(input);
  return {
    kind,
    name,
    outcome: "send",
    reason: `the pipe is ${state ?? "in an unknown state"}: ${command}`,
    write: {
      request: { route: "updateDataPipeState", params, body: { command } },
      record: (answer, at) => ({
        ...record,
        kind,
        name,
        applied: { ...record?.applied, state: want },
        appliedAt: at,
        observed: { ...record?.observed, ...answer },
      }),
    } satisfies Write<"updateDataPipeState">,
    changes,
  };
}

/**
 * What drift compares of the state: the live state differs when it needs a command or a wait
 * (commandFor), so a pipe starting or provisioning is not drift.
 */
function stateDrift(spec: Spec, live: unknown): DriftField[] {
  const have = stateOf(live);
  if (spec.state === undefined || have === undefined) return [];
  return commandFor(spec.state, have) === undefined ? [] : [{ path: "state", want: spec.state, have }];
}

/** The spec's scaling as a member of the pipe, when it states one. */
const scalingOf = (spec: Spec) => (spec.scaling ? { scaling: spec.scaling } : {});

/** The pipe's scaling PATCH: the scaling fields that changed since they were last sent. */
function scalingPatch(input: PlanInput<"DataPipe">): ResourcePlan | undefined {
  const { kind, name, spec, record, context } = input;
  if (!spec.scaling) return undefined;
  const { body, changes } = diffPatch(spec.scaling, member(record?.applied, "scaling"), {
    reassert: context.reassert,
  });
  if (Object.keys(body).length === 0) return undefined;
  const params = pipeParams(input);
  return {
    kind,
    name,
    outcome: "send",
    reason: `${changes.length} scaling change(s)`,
    write: {
      request: { route: "updateDataPipeScaling", params, body },
      record: (answer, at) => ({
        ...record,
        kind,
        name,
        applied: {
          ...record?.applied,
          scaling: { ...(member(record?.applied, "scaling") as object), ...body },
        },
        appliedAt: at,
        observed: { ...record?.observed, ...answer },
      }),
    } satisfies Write<"updateDataPipeScaling">,
    changes: changes.map((change) => ({ ...change, path: `scaling.${change.path}` })),
  };
}

/**
 * The pipe's POST: every field the manifest states (a postgres pipe's table mappings as a list, its
 * scaling), the endpoints it names as their ids. Its state follows in its own request.
 */
function createPlan(input: PlanInput<"DataPipe">): ResourcePlan {
  const { kind, name, spec, context } = input;
  const want = desired(spec, context);
  if (want.unresolved && want.unresolved.state !== "ready") {
    const outcome = want.unresolved.state === "missing" ? "refuse" : "wait";
    return { kind, name, outcome, reason: want.unresolved.reason, changes: [] };
  }
  const fields = compared(want);
  const body = { ...fields, name: spec.name ?? name, ...scalingOf(spec) };
  const changes = Object.entries(body).map(([path, to]): Change => ({ path, to, op: "set" }));
  const params = { organizationId: spec.organizationId, serviceId: spec.serviceId };
  return {
    kind,
    name,
    outcome: "send",
    reason: "not created yet",
    write: {
      // The manifest's own fields in the platform's terms: the create's schema (validate --contract
      // full, the platform) is what checks them against the POST's.
      request: { route: "createDataPipe", params, body: body as DataPipeCreate },
      record: (answer, at) => created(input, answer.id, answer, at, want.fields),
    } satisfies Write<"createDataPipe">,
    changes,
  };
}

/**
 * The record of a pipe known to be `id` (created, or found by a list): what the create sent as applied,
 * its table mappings owned (driftless added them), its scaling as sent.
 */
function created(
  pipe: Pipe,
  id: string,
  live: object | undefined,
  at: string,
  sent?: DataPipeUpdate,
): ResourceRecord {
  const { kind, name, spec, record } = pipe;
  const { intent: _done, ...rest } = record ?? { kind, name };
  // Found by a list, the endpoints' ids are not known here: the next round sends them if they differ.
  const fields = sent ?? desired(spec, { ref: () => ({ state: "waiting", reason: "" }) }).fields;
  const mappings = spec.source?.postgres?.[LIST];
  const observed = mappings && !mappingsOf(live) ? withMappings(live, mappings) : live;
  const applied = { ...fields, ...scalingOf(spec) };
  return appliedRecord({ kind, name, record: rest }, applied, at, observed, {
    serverId: id,
    ...(mappings ? { owned: { ...rest.owned, [LIST]: mappings.map(tableMappingKey).sort() } } : {}),
  });
}

/** Live values folded into `observed`: the three-way mappings, and the state, which the state command reads. */
const LIVE_IN_OBSERVED = [LIST_PATH, "state"];

/**
 * A pipe met for the first time (reads on): as if its fields had been sent, its live mappings observed
 * (none of them driftless's), its scaling as live (so that a scaling that differs is sent); its state
 * command follows from the live state as always. Undefined while an endpoint it names has no id.
 */
function baseline(input: PlanInput<"DataPipe">, live: object, fields: readonly DriftField[]) {
  const want = desired(input.spec, input.context);
  if (want.unresolved && want.unresolved.state !== "ready") return undefined;
  const scaling = member(live, "scaling");
  const stated = Object.keys(input.spec.scaling ?? {});
  const liveScaling = isPlainObject(scaling)
    ? Object.fromEntries(stated.flatMap((key) => (scaling[key] == null ? [] : [[key, scaling[key]]])))
    : undefined;
  const sent = { ...want.fields, ...(input.spec.scaling ? { scaling: liveScaling ?? {} } : {}) };
  const record = baselineRecord(input, sent, live, want.mappings ? { owned: { [LIST]: [] } } : {});
  return foldLive(record, fields, live, LIVE_IN_OBSERVED);
}

export const dataPipe: Complete<"DataPipe"> = {
  kind: "DataPipe",
  phase: "dependents",
  references: (spec) =>
    (spec.source?.kafka?.reversePrivateEndpoints ?? []).map((name) => ({
      kind: "ReversePrivateEndpoint" as const,
      name,
    })),
  referencedIds: (spec) =>
    (spec.source?.kafka?.reversePrivateEndpointIds ?? []).map((id) => ({
      kind: "ReversePrivateEndpoint" as const,
      id,
    })),
  address: (spec, record) => {
    const dataPipeId = spec.dataPipeId ?? record?.serverId;
    if (dataPipeId === undefined) return undefined;
    return { organizationId: spec.organizationId, serviceId: spec.serviceId, dataPipeId };
  },
  create: {
    noun: "pipe",
    within: "of the service",
    idField: "dataPipeId",
    idOf: (spec) => spec.dataPipeId,
    plan: createPlan,
    list: ({ organizationId, serviceId }) =>
      ({
        request: { route: "listDataPipes", params: { organizationId, serviceId }, body: undefined },
        live: (answer) => answer,
      }) satisfies LiveRead<"listDataPipes">,
    // A lost create's pipe: the name the create sent.
    matches: ({ spec, name }, listed) => listed.name === (spec.name ?? name),
    adopted: (pipe, id, live, at) => created(pipe, id, live, at),
    unusable: () => undefined,
  },
  delete: {
    request: ({ organizationId, serviceId, dataPipeId }) =>
      organizationId && serviceId && dataPipeId
        ? { route: "deleteDataPipe", params: { organizationId, serviceId, dataPipeId }, body: undefined }
        : undefined,
  },
  update: {
    plan,
    learn: {
      // At first contact, and whenever the manifest lists a mapping the last-seen list lacks (it may have
      // been added in the console since; a mapping found live is never claimed); and while a pipe that
      // should run was last seen stopping (it may have stopped since: then it is started).
      needs: ({ spec, record }) => {
        if (spec.state === "running" && stateOf(record?.observed) === "Stopping") return true;
        const wanted = spec.source?.postgres?.[LIST];
        if (!wanted) return false;
        const live = liveMappings(record);
        const liveKeys = new Set((live ?? []).map(tableMappingKey));
        return !live || !wanted.every((m) => liveKeys.has(tableMappingKey(m)));
      },
      // Only the mappings and the state are kept of the answer: it may hold credentials.
      keep: ({ kind, name, spec, record }, live) => {
        const base = record ?? { kind, name };
        const state = stateOf(live);
        const observed = state === undefined ? base.observed : { ...base.observed, state };
        if (!spec.source?.postgres?.[LIST]) return { record: { ...base, observed } };
        const mappings = mappingsOf(live);
        if (!mappings) return { why: `the pipe's answer has no ${LIST_PATH} list` };
        return { record: { ...base, observed: withMappings(observed, mappings) } };
      },
    },
  },
  observe: {
    read: (pipe) => {
      const dataPipeId = pipeIdOf(pipe);
      if (dataPipeId === undefined) return undefined;
      const { organizationId, serviceId } = pipe.spec;
      return {
        request: { route: "getDataPipe", params: { organizationId, serviceId, dataPipeId }, body: undefined },
        live: (answer) => answer,
      } satisfies LiveRead<"getDataPipe">;
    },
    // The scaling as the manifest states it, and the state as the command it needs.
    drift: ({ spec, context }, live) => [
      ...walk({ ...compared(desired(spec, context)), ...scalingOf(spec) }, live, {
        "source.kafka.reversePrivateEndpointIds": { kind: "set" },
        [LIST_PATH]: { kind: "contains", key: mappingKeyOf },
      }),
      ...stateDrift(spec, live),
    ],
    fold: (record, fields, live) => foldLive(record, fields, live, LIVE_IN_OBSERVED),
    baseline,
    listed: (pipe) => {
      const dataPipeId = pipeIdOf(pipe);
      if (dataPipeId === undefined) return undefined;
      const { organizationId, serviceId } = pipe.spec;
      return {
        request: { route: "listDataPipes", params: { organizationId, serviceId }, body: undefined },
        live: (answer) => answer.find((listed) => sameId(listed.id, dataPipeId)),
      } satisfies LiveRead<"listDataPipes">;
    },
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
