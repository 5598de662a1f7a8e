import { randomUUID } from "node:crypto";
import { z } from "zod";
import { badRequest } from "./http.js";
import { DataPipe, type PipeScaling, PipeSource, type PlatformState, type Service } from "./model.js";
import type { PipePatch } from "./requests.js";

/**
 * Data pipes as the platform changes them: the update (both contracts), and the published contract's
 * create, state commands and scaling (docs/platform-apis.md#data-pipe-state-and-scaling). What a pipe
 * keeps is what its model (model.ts) names: a field the platform does not define is dropped, as the
 * platform drops it, and so is every credential, which results never carry.
 */

/** In which order a PATCH's postgres table mappings take effect: the published contract does not say. */
export type TableMappingOrder = "remove-first" | "add-first";

type SourceKind = keyof DataPipe["source"];
const SOURCE_KINDS: readonly SourceKind[] = ["kafka", "objectStorage", "kinesis", "postgres"];
/** The kinds that scale on their own; the database pipes of a service share one scaling, set elsewhere. */
const SCALABLE: ReadonlySet<SourceKind> = new Set(["kafka", "objectStorage", "kinesis"]);

const isSourceKind = (name: string | undefined): name is SourceKind =>
  SOURCE_KINDS.some((kind) => kind === name);

/** The source kind of a pipe. */
export const kindOf = (pipe: DataPipe): SourceKind | undefined =>
  SOURCE_KINDS.find((kind) => pipe.source[kind] !== undefined);

/** `value` with only what `schema` names, at every depth: what the platform keeps of what it was sent. */
function known(schema: z.ZodType, value: unknown): unknown {
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable || schema instanceof z.ZodDefault)
    return known(schema.unwrap() as z.ZodType, value);
  if (schema instanceof z.ZodArray && Array.isArray(value))
    return value.map((item) => known(schema.element as z.ZodType, item));
  if (!(schema instanceof z.ZodObject) || typeof value !== "object" || value === null) return value;
  const shape = schema.shape as Record<string, z.ZodType>;
  return Object.fromEntries(
    Object.entries(value).flatMap(([name, child]) => {
      const field = shape[name];
      return field ? [[name, known(field, child)]] : [];
    }),
  );
}

/** A pipe create's body, as the contract check accepted it (nulls dropped). */
export type PipeCreate = {
  name?: string;
  source?: Record<string, unknown>;
  destination?: { columns?: { name: string }[] } & Record<string, unknown>;
  fieldMappings?: { sourceField: string; destinationField: string }[];
  scaling?: PipeScaling;
  settings?: Record<string, number | boolean>;
};

/**
 * Makes a pipe of `service`, Running at once. Throws a 400 Rejection for what the platform refuses
 * beyond the document: no name, not exactly one source kind (or one the simulator does not make), an
 * endpoint the service lacks, a destination column no field mapping names (or a mapping to no column),
 * scaling on a database pipe.
 */
export function createPipe(state: PlatformState, service: Service, body: PipeCreate): DataPipe {
  if (!body.name) throw badRequest("name: a pipe needs a name");
  const source = body.source ?? {};
  const kinds = Object.keys(source).filter((name) => name !== "validateSamples");
  const [kind, ...others] = kinds;
  if (kind === undefined || others.length > 0) {
    const named = kinds.length === 0 ? "none" : kinds.join(" and ");
    throw badRequest(`source: a pipe reads one source kind, this one names ${named}`);
  }
  if (!isSourceKind(kind)) {
    throw badRequest(
      `source.${kind}: the simulator makes kafka, objectStorage, kinesis and postgres pipes only`,
    );
  }
  checkEndpoints(state, service.id, source.kafka as { reversePrivateEndpointIds?: string[] } | undefined);
  checkMappings(body);
  if (body.scaling && !SCALABLE.has(kind)) throw notScalable("scaling", kind);
  const now = new Date().toISOString();
  const pipe = DataPipe.parse(
    known(DataPipe, {
      id: randomUUID(),
      serviceId: service.id,
      name: body.name,
      state: "Running",
      ...(body.scaling ? { scaling: body.scaling } : {}),
      source,
      destination: body.destination ?? {},
      fieldMappings: body.fieldMappings ?? [],
      settings: body.settings ?? {},
      createdAt: now,
      updatedAt: now,
    }),
  );
  state.pipes.push(pipe);
  return pipe;
}

/** Every destination column is named by a field mapping, and every mapping names a column. */
function checkMappings({ destination, fieldMappings = [] }: PipeCreate): void {
  const columns = (destination?.columns ?? []).map((c) => c.name);
  const mapped = new Set(fieldMappings.map((m) => m.destinationField));
  const unmapped = columns.filter((column) => !mapped.has(column));
  if (unmapped.length > 0) {
    throw badRequest(
      `fieldMappings: every destination column needs a mapping; none names ${unmapped.join(", ")}`,
    );
  }
  const index = fieldMappings.findIndex((m) => !columns.includes(m.destinationField));
  const stray = fieldMappings[index];
  if (stray) {
    throw badRequest(
      `fieldMappings.${index}.destinationField: ${stray.destinationField} is not a destination column`,
    );
  }
}

function checkEndpoints(
  state: PlatformState,
  serviceId: string,
  kafka: { reversePrivateEndpointIds?: string[] } | undefined,
): void {
  for (const id of kafka?.reversePrivateEndpointIds ?? []) {
    if (!state.endpoints.some((e) => e.id === id && e.serviceId === serviceId)) {
      throw badRequest(
        `source.kafka.reversePrivateEndpointIds: endpoint ${id} does not exist in service ${serviceId}`,
      );
    }
  }
}

const notScalable = (field: string, kind: string | undefined) =>
  badRequest(
    `${field}: only Kafka, Kinesis and object-storage pipes scale on their own; this pipe reads ${kind ?? "nothing"}`,
  );

/**
 * A state command: `stop` from any state, `start` only from Stopped or Failed, `resync` only by a
 * database pipe, from any state. Each takes effect at once (the platform goes through Stopping,
 * Provisioning or Resync first). Throws a 400 Rejection for a command the pipe's state or kind refuses.
 */
export function commandPipe(pipe: DataPipe, command: string | undefined): void {
  switch (command) {
    case "stop":
      pipe.state = "Stopped";
      break;
    case "start":
      if (pipe.state !== "Stopped" && pipe.state !== "Failed") {
        throw badRequest(`command: a pipe starts only from Stopped or Failed; this one is ${pipe.state}`);
      }
      pipe.state = "Running";
      break;
    case "resync":
      if (kindOf(pipe) !== "postgres") {
        throw badRequest(
          `command: only a database pipe resyncs; this pipe reads ${kindOf(pipe) ?? "nothing"}`,
        );
      }
      pipe.state = "Running";
      break;
    default:
      throw badRequest("command: is required");
  }
  pipe.updatedAt = new Date().toISOString();
}

/** Changes the fields of a pipe's scaling that `scaling` gives. Throws a 400 Rejection for a database pipe. */
export function scalePipe(pipe: DataPipe, scaling: PipeScaling): void {
  const kind = kindOf(pipe);
  if (!kind || !SCALABLE.has(kind)) throw notScalable("body", kind);
  pipe.scaling = { ...pipe.scaling, ...scaling };
  pipe.updatedAt = new Date().toISOString();
}

/**
 * Applies a validated pipe PATCH: only sent fields change; lists replace, except postgres table
 * mappings, a set keyed by (sourceSchemaName, sourceTable, targetTable). Credentials are accepted and
 * dropped, as results never carry them. Throws a 400 Rejection when the body names a source kind the
 * pipe does not have or an endpoint its service does not have.
 */
export function applyPipePatch(
  state: PlatformState,
  pipe: DataPipe,
  patch: PipePatch,
  order: TableMappingOrder,
): void {
  const { validateSamples: _validateSamples, ...kinds } = patch.source ?? {};
  const current = kindOf(pipe);
  for (const kind of Object.keys(kinds) as SourceKind[]) {
    if (kinds[kind] !== undefined && kind !== current) {
      throw badRequest(`source.${kind}: the pipe's source is ${current ?? "unset"}, not ${kind}`);
    }
  }

  if (kinds.kafka && pipe.source.kafka) {
    checkEndpoints(state, pipe.serviceId, kinds.kafka);
    Object.assign(pipe.source.kafka, kinds.kafka);
  }
  if (kinds.objectStorage && pipe.source.objectStorage)
    Object.assign(pipe.source.objectStorage, kinds.objectStorage);
  if (kinds.kinesis && pipe.source.kinesis) Object.assign(pipe.source.kinesis, kinds.kinesis);
  if (kinds.postgres && pipe.source.postgres) {
    const postgres = pipe.source.postgres;
    const { settings, tableMappingsToAdd, tableMappingsToRemove, ...fields } = kinds.postgres;
    Object.assign(postgres, fields);
    if (settings) postgres.settings = { ...postgres.settings, ...settings };
    const key = (m: { sourceSchemaName: string; sourceTable: string; targetTable: string }) =>
      JSON.stringify([m.sourceSchemaName, m.sourceTable, m.targetTable]);
    const removed = new Set((tableMappingsToRemove ?? []).map(key));
    const remove = () => {
      postgres.tableMappings = postgres.tableMappings.filter((m) => !removed.has(key(m)));
    };
    // Either order is the platform's right: with add first, a mapping both added and removed is gone.
    if (order === "remove-first") remove();
    for (const mapping of tableMappingsToAdd ?? []) {
      postgres.tableMappings = [...postgres.tableMappings.filter((m) => key(m) !== key(mapping)), mapping];
    }
    if (order === "add-first") remove();
  }
  // What the model does not name goes: credentials (connectionString may embed an account key) and
  // fields the platform does not define.
  pipe.source = PipeSource.parse(known(PipeSource, pipe.source));

  if (patch.name !== undefined) pipe.name = patch.name;
  if (patch.destination) pipe.destination.columns = patch.destination.columns;
  if (patch.fieldMappings) pipe.fieldMappings = patch.fieldMappings;
  if (patch.settings) pipe.settings = { ...pipe.settings, ...definedOnly(patch.settings) };
}

function definedOnly<T extends object>(value: T): Record<string, number | boolean> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}
