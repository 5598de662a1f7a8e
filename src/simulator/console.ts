import type { IncomingMessage, ServerResponse } from "node:http";
import type { PlatformState } from "./model.js";

/**
 * The simulator's console: an edit made in the platform's web console, behind driftless's back, for
 * tests and demos of drift. In process, `consoleEdit`; over HTTP, on either API's port and outside
 * both APIs (no credential, never recorded as a request driftless sent):
 *
 *   PATCH /__console/{collection}/{id}                  merges the JSON body into the object
 *   PATCH /__console/dashboards/{id}/tiles/{tileId}     merges it into one tile of a dashboard
 *
 * `collection` is one of the platform's: organizations, keys, pipes, endpoints, dashboards, alerts,
 * webhooks. A member set to null is removed; objects merge member by member; anything else (lists too)
 * is replaced. An alert is edited in its stored form (`dashboard`, `team`: model.ts).
 */

export const CONSOLE_PREFIX = "/__console/";

export const CONSOLE_COLLECTIONS = [
  "organizations",
  "keys",
  "pipes",
  "endpoints",
  "dashboards",
  "alerts",
  "webhooks",
] as const;
export type ConsoleCollection = (typeof CONSOLE_COLLECTIONS)[number];

/** Where an edit goes: an object of a collection, or one tile of a dashboard. */
export type ConsoleTarget = { collection: ConsoleCollection; id: string; tileId?: string };

/** An edit that names nothing the platform has. */
export class ConsoleEditError extends Error {
  override name = "ConsoleEditError";
}

/** Merges `patch` into the object `target` names, in place; returns it. Throws ConsoleEditError. */
export function consoleEdit(
  state: PlatformState,
  target: ConsoleTarget,
  patch: unknown,
): Record<string, unknown> {
  if (!isObject(patch)) throw new ConsoleEditError("the edit must be a JSON object");
  const list = state[target.collection] as unknown as Array<Record<string, unknown>>;
  const found = list.find((item) => item.id === target.id);
  if (!found) throw new ConsoleEditError(`the simulator has no ${target.collection} ${target.id}`);
  if (target.tileId === undefined) return merge(found, patch);
  const tiles = Array.isArray(found.tiles) ? (found.tiles as Array<Record<string, unknown>>) : [];
  const tile = tiles.find((t) => t.id === target.tileId);
  if (!tile) throw new ConsoleEditError(`dashboard ${target.id} has no tile ${target.tileId}`);
  return merge(tile, patch);
}

function merge(into: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  for (const [key, value] of Object.entries(patch)) {
    if (key === "id") continue;
    if (value === null) delete into[key];
    else if (isObject(value) && isObject(into[key])) merge(into[key] as Record<string, unknown>, value);
    else into[key] = value;
  }
  return into;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The target of a console path, or undefined when the path is not one. */
export function consoleTarget(path: string): ConsoleTarget | undefined {
  if (!path.startsWith(CONSOLE_PREFIX)) return undefined;
  const parts = path.slice(CONSOLE_PREFIX.length).split("/").map(decodeURIComponent);
  const [collection, id, tiles, tileId] = parts;
  if (!CONSOLE_COLLECTIONS.includes(collection as ConsoleCollection) || !id) return undefined;
  if (parts.length === 2) return { collection: collection as ConsoleCollection, id };
  if (collection === "dashboards" && tiles === "tiles" && tileId && parts.length === 4) {
    return { collection: "dashboards", id, tileId };
  }
  return undefined;
}

/** Serves one console request; `changed` is called after an edit (to save the state). */
export async function serveConsole(
  state: PlatformState,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  changed: () => void,
): Promise<void> {
  const answer = (status: number, body: unknown) => {
    response.writeHead(status, { "content-type": "application/json" });
    response.end(JSON.stringify(body));
  };
  const target = consoleTarget(path);
  if (!target)
    return answer(404, { error: `no console path ${path}: PATCH ${CONSOLE_PREFIX}{collection}/{id}` });
  if (request.method !== "PATCH") return answer(405, { error: "the console takes PATCH" });
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  let patch: unknown;
  try {
    patch = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return answer(400, { error: "the edit must be a JSON object" });
  }
  try {
    const edited = consoleEdit(state, target, patch);
    changed();
    return answer(200, edited);
  } catch (error) {
    if (!(error instanceof ConsoleEditError)) throw error;
    return answer(404, { error: error.message });
  }
}
