import { randomBytes } from "node:crypto";
import { z } from "zod";
import { StateError } from "../errors.js";
import { type ResourceRecord, STATE_VERSION, State } from "./store.js";

/**
 * The saved form of State, shared by every store: versioned JSON. Records are checked for the fields
 * driftless reads and keep any others, so a field added by a newer driftless of the same format version
 * survives a round trip through an older one.
 */

/** The top-level fields of a state, every one but `resources` (which the stores keep per record). */
export const TopLevelSchema = z.looseObject({
  version: z.literal(STATE_VERSION),
  salt: z.string().min(1),
});

export type TopLevel = Omit<State, "resources">;

/** An empty state with a new random salt for the secret hashes. */
export function newState(): State {
  return { version: STATE_VERSION, salt: randomBytes(32).toString("base64url"), resources: {} };
}

/**
 * The text of a whole state (the file store's snapshot): compact JSON, since at 10,000 resources
 * indentation alone would add megabytes to every compaction; `jq .` shows it indented.
 */
export function serializeState(state: State): string {
  return `${JSON.stringify(state)}\n`;
}

/** A record as a store last read or wrote it, with its text. */
export type KnownRecord = { readonly record: ResourceRecord; readonly text: string };

/**
 * Each record of `state` with its text, by resource id. A record that is the very object `before` holds
 * keeps its text unserialized (at 10,000 records, serializing them all is most of an unchanged save);
 * every other one is serialized, then frozen, so that a change in place throws rather than slipping past
 * this comparison. Records are replaced, never changed in place (see StateStore).
 */
export function knownRecords(
  state: State,
  before?: ReadonlyMap<string, KnownRecord>,
): Map<string, KnownRecord> {
  const known = new Map<string, KnownRecord>();
  for (const [id, record] of Object.entries(state.resources)) {
    const was = before?.get(id);
    known.set(
      id,
      was?.record === record ? was : { record: deepFreeze(record), text: JSON.stringify(record) },
    );
  }
  return known;
}

/** `value` with it and every object and array in it frozen. */
function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  for (const inner of Object.values(value)) deepFreeze(inner);
  return Object.freeze(value);
}

/** The text of the top-level fields (all but `resources`), compared as the records' texts are. */
export function topLevelText(state: State): string {
  const { resources: _, ...top } = state;
  return JSON.stringify(top);
}

/**
 * The shape of `json` checked against `schema`; throws StateError naming `where` and the field, and
 * saying what to do, when it does not fit.
 */
export function checked<T>(schema: z.ZodType<T>, json: unknown, where: string): T {
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new StateError(
      `${where} is not a driftless state: ${z.prettifyError(parsed.error)}. ${KEEP}: restore it from a backup, or move it aside to start from an empty state`,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

/**
 * The State saved in `text`, read from `where` (named in errors). Throws StateError when it is not
 * JSON, has another format version, or does not have the shape of a state.
 */
export function parseState(text: string, where: string): State {
  return checked(State, versioned(parseJson(text, where), where), where) as State;
}

/** The top-level fields saved in `text` (the Kubernetes store's meta Secret); throws as parseState. */
export function parseTopLevel(text: string, where: string): TopLevel {
  return checked(TopLevelSchema, versioned(parseJson(text, where), where), where) as TopLevel;
}

const KEEP = "It was left as it is";

/** `text` as JSON; throws StateError saying the state at `where` is corrupt. */
export function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new StateError(
      `${where} is corrupt (not valid JSON: ${(error as Error).message}). ${KEEP}: restore it from a backup, or move it aside to start from an empty state (driftless then forgets what it created)`,
      { cause: error },
    );
  }
}

/** `json`, unless it names a format version other than this driftless's (then StateError). */
function versioned(json: unknown, where: string): unknown {
  const version = (json as { version?: unknown } | null)?.version;
  if (typeof version === "number" && version !== STATE_VERSION) {
    throw new StateError(
      `${where} has state format version ${version}, and this driftless reads version ${STATE_VERSION} only: ${
        version > STATE_VERSION ? "run a newer driftless" : "migrate it with the driftless that wrote it"
      }. ${KEEP}`,
    );
  }
  return json;
}
