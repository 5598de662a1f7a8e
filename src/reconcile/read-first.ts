import { messageOf } from "../errors.js";
import { createOf, kindOf, observeOf } from "../kinds/index.js";
import {
  type Create,
  isNone,
  type LiveRead,
  type Observe,
  type PlanContext,
  type Subject,
} from "../kinds/kind.js";
import type { Kind } from "../manifests/manifest.js";
import { isPlainObject } from "../plan/values.js";
import type { ResourceRecord, State } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import type { Effects } from "./effects.js";
import type { ListReads } from "./list-reads.js";
import type { Admitted, Settlement } from "./step.js";

/**
 * With reads on, what a resource's plan must know of the live platform before it is made: the list a
 * create whose answer was lost would have added to (which settles it); the live object of a first
 * contact (an object its manifest names, never applied), compared with the manifest so that only what
 * differs is sent (an imported manifest sends nothing); or the live object where the kind cannot plan
 * without it (a three-way list the manifest grows by an entry not seen live). A read that fails changes
 * nothing: the plan is made as with reads off.
 */

/** What the step reads of its resource's run. */
export type ReadFirst = {
  effects: Pick<Effects, "read" | "save">;
  state: State;
  log: () => Logger;
  /** Writes the record the read completed (its live list), through the pass's effects. */
  write(record: ResourceRecord): void;
  /** How the resource sees those it names, for a first contact's comparison. */
  context: PlanContext;
  /** The lists the pass read for its first contacts, each read once. */
  lists: ListReads;
};

/** `resource`, with what a read before planning told (synchronous when nothing is to be read). */
export function readFirst(resource: Admitted, run: ReadFirst): Admitted | Promise<Admitted> {
  const read = run.effects.read;
  if (!read) return resource;
  const { manifest, id, spec } = resource;
  const subject: Subject = {
    kind: manifest.kind,
    name: manifest.name,
    spec,
    record: run.state.resources[id],
  };
  const create = createOf(subject.kind);
  if (!isNone(create) && unsettled(create, subject)) return settle(resource, subject, create, run);
  const observe = observeOf(subject.kind);
  if (!isNone(observe) && firstContact(observe, subject)) return meet(resource, subject, observe, run);
  const learn = kindOf(subject.kind).update.learn;
  if (isNone(learn) || isNone(observe) || !learn.needs(subject)) return resource;
  const live = observe.read(subject);
  if (!live) return resource;
  return answerOf(run, live).then(
    async (answer) => {
      const kept =
        answer === undefined ? { why: "the platform has no such object" } : learn.keep(subject, answer);
      if ("why" in kept) warnUnread(run, kept.why);
      else await keep(kept.record, run);
      return resource;
    },
    (error) => {
      warnUnread(run, messageOf(error));
      return resource;
    },
  );
}

/** An object the manifest names (or driftless created) that driftless never applied: there is one to read. */
const firstContact = (observe: Observe<Kind>, subject: Subject): boolean =>
  subject.record?.appliedAt === undefined && observe.read(subject) !== undefined;

/**
 * A first contact: the live object, read from its list (once per pass for all it holds) or by itself,
 * becomes the record as if the manifest had been applied to it, what differs folded in (the kind's
 * baseline), so that the plan sends only what differs from git. Nothing is recorded when the platform
 * has no such object (the plan then sends everything, and its answer says what is wrong).
 */
async function meet(
  resource: Admitted,
  subject: Subject,
  observe: Observe<Kind>,
  run: ReadFirst,
): Promise<Admitted> {
  const read = run.effects.read;
  const live = observe.listed(subject) ?? observe.read(subject);
  if (!read || !live) return resource;
  let found: object | undefined;
  try {
    found = await run.lists.read({ read }, live);
  } catch (error) {
    warnUnread(run, messageOf(error));
    return resource;
  }
  if (found === undefined) {
    warnUnread(run, "the platform has no such object");
    return resource;
  }
  const input = { ...subject, context: run.context };
  const record = observe.baseline(input, found, observe.drift(input, found));
  if (record) await keep(record, run);
  return resource;
}

/** A create whose answer was lost: its intent is recorded, and no id is known. */
const unsettled = (create: Create<Kind>, { spec, record }: Subject): boolean =>
  record?.intent !== undefined && record.serverId === undefined && create.idOf(spec) === undefined;

/** The object a read answers (a list's items, a live object), typed by the route it reads. */
async function answerOf(run: ReadFirst, live: LiveRead): Promise<object | undefined> {
  const read = run.effects.read;
  if (!read) return undefined;
  return live.live(await read(live.request));
}

/**
 * Reads the list a lost create would have added to: exactly one listed object not known to another
 * resource of its kind, and equal to what the create sends, is the one it made.
 */
async function settle(
  resource: Admitted,
  subject: Subject,
  create: Create<Kind>,
  run: ReadFirst,
): Promise<Admitted> {
  let listed: object | undefined;
  try {
    // Every page of a paged list (the team's alerts): the object may be on any of them.
    const read = run.effects.read;
    listed = read ? await run.lists.read({ read }, create.list(subject.spec)) : undefined;
  } catch (error) {
    return {
      ...resource,
      settled: { state: "unclear", reason: `the list could not be read (${messageOf(error)})` },
    };
  }
  if (!Array.isArray(listed))
    return { ...resource, settled: { state: "unclear", reason: "the answer was not a list" } };
  const taken = idsOfOthers(run.state, resource.id, subject.kind);
  const found = listed
    .filter(isPlainObject)
    .filter((live) => typeof live.id === "string" && live.id !== "" && !taken.has(live.id))
    .filter((live) => create.matches(subject, live));
  return { ...resource, settled: settlementOf(create, found) };
}

function settlementOf(create: Create<Kind>, found: Record<string, unknown>[]): Settlement {
  const [only] = found;
  if (!only) return { state: "absent" };
  if (found.length > 1)
    return {
      state: "unclear",
      reason: `${found.length} ${create.noun}s ${create.within} match the manifest (${found.map((e) => String(e.id)).join(", ")}), so the list cannot tell which one the create made`,
    };
  return { state: "found", id: String(only.id), live: only };
}

function warnUnread(run: ReadFirst, reason: string): void {
  run.log().warn({ reason }, "live object not read: planned from what was last answered");
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

/** The server ids other records of `kind` hold: a listed object with one of them is not this resource's. */
function idsOfOthers(state: State, id: string, kind: Kind): Set<string> {
  const ids = new Set<string>();
  for (const [other, record] of Object.entries(state.resources))
    if (other !== id && record.kind === kind && record.serverId) ids.add(record.serverId);
  return ids;
}
