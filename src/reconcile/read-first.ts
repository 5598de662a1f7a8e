import { messageOf } from "../errors.js";
import { findingOf, liveReadOf } from "../plan/planners.js";
import type { LiveInput, ReadOutcome } from "../plan/types.js";
import type { ResourceRecord, State } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import type { Admitted } from "./decide.js";
import type { Effects } from "./effects.js";

/**
 * With reads on, what a resource's plan must know of the live platform before it is made: a three-way
 * list at first contact (or one the manifest grows by an entry not seen live), read instead of learned
 * from a first request; the list of a service's endpoints, which settles a create whose answer was lost.
 * A read that fails changes nothing: the plan is made as with reads off.
 */

/** What the step reads of its resource's run. */
export type ReadFirst = {
  effects: Pick<Effects, "read" | "save">;
  state: State;
  log: () => Logger;
  /** Writes the record the read completed (its live list), through the pass's effects. */
  write(record: ResourceRecord): void;
};

/** `resource`, with what a read before planning told (synchronous when nothing is to be read). */
export function readFirst(resource: Admitted, run: ReadFirst): Admitted | Promise<Admitted> {
  const read = run.effects.read;
  if (!read) return resource;
  const { manifest, id, spec } = resource;
  const record = run.state.resources[id];
  const input = { kind: manifest.kind, name: manifest.name, spec, record, taken: new Set<string>() };
  const request = liveReadOf(input);
  if (!request) return resource;
  if (request.route === "listReversePrivateEndpoints") input.taken = endpointIdsOfOthers(run.state, id);
  return read(request).then(
    (answer) => use(resource, input, { answer }, run),
    (error) => use(resource, input, { error: messageOf(error) }, run),
  );
}

async function use(
  resource: Admitted,
  input: LiveInput,
  read: ReadOutcome,
  run: ReadFirst,
): Promise<Admitted> {
  const finding = findingOf(input, read);
  if ("record" in finding) await keep(finding.record, run);
  if ("settled" in finding) return { ...resource, settled: finding.settled };
  if ("why" in finding)
    run.log().warn({ reason: finding.why }, "live object not read: planned from what was last answered");
  return resource;
}

/**
 * Writes and saves the record a read completed: a plan that then sends nothing would otherwise read
 * again at every pass. A save that fails is retried by the pass's next save.
 */
async function keep(record: ResourceRecord, run: ReadFirst): Promise<void> {
  run.write(record);
  try {
    await run.effects.save();
  } catch (error) {
    run.log().warn({ err: error }, "live list read, but the state could not be saved yet");
  }
}

/** The endpoint ids other records hold: a listed endpoint with one of them is not this resource's. */
function endpointIdsOfOthers(state: State, id: string): Set<string> {
  const ids = new Set<string>();
  for (const [other, record] of Object.entries(state.resources))
    if (other !== id && record.serverId) ids.add(record.serverId);
  return ids;
}
