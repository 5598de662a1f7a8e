import { randomBytes } from "node:crypto";
import { z } from "zod";
import { StateError } from "../errors.js";
import type { State } from "./store.js";

/**
 * The saved form of State, shared by every store: versioned JSON. Records are checked for the fields
 * driftless reads and keep any others, so a field added by a newer driftless of the same format version
 * survives a round trip through an older one.
 */

export const STATE_VERSION = 1;

const Strings = z.record(z.string(), z.string());

const ResourceRecord = z.looseObject({
  kind: z.string(),
  name: z.string(),
  applied: z.record(z.string(), z.unknown()).optional(),
  appliedAt: z.string().optional(),
  observed: z.record(z.string(), z.unknown()).optional(),
  serverId: z.string().optional(),
  tileIds: Strings.optional(),
  intent: z.looseObject({ action: z.literal("create"), startedAt: z.string() }).optional(),
  owned: z.record(z.string(), z.array(z.string())).optional(),
  allowanceUsedAt: z.string().optional(),
  object: z.string().optional(),
  unmanagedSince: z.string().optional(),
});

const SavedState = z.object({
  version: z.literal(STATE_VERSION),
  salt: z.string().min(1),
  resources: z.record(z.string(), ResourceRecord),
  suspended: z.looseObject({ since: z.string(), reason: z.string().optional() }).optional(),
});

/** An empty state with a new random salt for the secret hashes. */
export function newState(): State {
  return { version: STATE_VERSION, salt: randomBytes(32).toString("base64url"), resources: {} };
}

export function serializeState(state: State): string {
  return `${JSON.stringify(state, null, 1)}\n`;
}

/**
 * The State saved in `text`, read from `where` (named in errors). Throws StateError when it is not
 * JSON, has another format version, or does not have the shape of a state.
 */
export function parseState(text: string, where: string): State {
  const keep = "It was left as it is";
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new StateError(
      `${where} is corrupt (not valid JSON: ${(error as Error).message}). ${keep}: restore it from a backup, or move it aside to start from an empty state (driftless then forgets what it created)`,
      { cause: error },
    );
  }
  const version = (json as { version?: unknown } | null)?.version;
  if (typeof version === "number" && version !== STATE_VERSION) {
    throw new StateError(
      `${where} has state format version ${version}, and this driftless reads version ${STATE_VERSION} only: ${
        version > STATE_VERSION ? "run a newer driftless" : "migrate it with the driftless that wrote it"
      }. ${keep}`,
    );
  }
  const parsed = SavedState.safeParse(json);
  if (!parsed.success) {
    throw new StateError(
      `${where} is not a driftless state: ${z.prettifyError(parsed.error)}. ${keep}: restore it from a backup, or move it aside to start from an empty state`,
      { cause: parsed.error },
    );
  }
  return parsed.data as State;
}
