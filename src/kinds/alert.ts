import { type DriftField, walk } from "../drift/compare.js";
import { sameId } from "../manifests/identity.js";
import { appliedRecord } from "../plan/record.js";
import type { Change, ResourcePlan, SpecOf, Write } from "../plan/types.js";
import { isPlainObject, member, omit, same } from "../plan/values.js";
import type { AlertUpdate } from "../platform/observability.js";
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
import { baselineRecord, foldLive, specPathOf } from "./shared.js";

/**
 * An alert: adopted by its `alertId`, or created with its POST when the manifest names none, then
 * replaced whole by its PUT whenever what the manifest states changes: the platform clears what a PUT
 * leaves out (docs/platform-apis.md#alerts), so every field the manifest states is sent every time. A
 * tile alert that names its tile by Dashboard manifest and tile key gets the dashboard's id and the
 * tile's from the pass, and waits while the dashboard has none (dashboards are applied first). Read
 * with its GET (a first contact from the team's alert list); deleted with its DELETE.
 */

type Spec = SpecOf<"Alert">;
type Watcher = Subject<"Alert">;

/** The alert's id: the one the manifest names, or the one the platform answered its create with. */
const idOf = ({ spec, record }: Watcher): string | undefined => spec.alertId ?? record?.serverId;

/** The alert in the platform's terms, and the tile it cannot name yet, if any (then without its ids). */
type Desired = { body: AlertUpdate; unresolved?: ReferenceState };

/**
 * The alert as the manifest wants it: what the create and the PUT send and what drift compares. Its
 * source is the manifest's, else the kind of what it names; a tile named by manifest and key is sent as
 * the ids the pass knows.
 */
function desired(spec: Spec, context: Pick<PlanContext, "ref">): Desired {
  const { alertId: _id, dashboard, tile, source, ...fields } = spec;
  const body: AlertUpdate = {
    source: source ?? (spec.savedSearchId === undefined ? "tile" : "saved_search"),
    // The manifest's fields, those it leaves out dropped.
    ...omit(fields, []),
  };
  if (dashboard === undefined || tile === undefined) return { body };
  const found = context.ref("Dashboard", dashboard);
  if (found.state !== "ready") return { body, unresolved: found };
  const tileId = found.parts?.[tile];
  if (tileId === undefined) {
    const reason = `waits for tile ${tile} of Dashboard/${dashboard}: the dashboard has no id for it yet`;
    return { body, unresolved: { state: "waiting", reason } };
  }
  return { body: { ...body, dashboardId: found.id, tileId } };
}

/** A plan that sends nothing while the tile is not known: waiting, or refused when it cannot come. */
function unresolvedPlan({ kind, name }: PlanInput<"Alert">, unresolved: ReferenceState): ResourcePlan {
  const outcome = unresolved.state === "missing" ? "refuse" : "wait";
  const reason = unresolved.state === "ready" ? "" : unresolved.reason;
  return { kind, name, outcome, reason, changes: [] };
}

/** The fields a PUT keeps when left out (it clears the others). */
const KEPT_WHEN_LEFT_OUT = ["thresholdMax", "scheduleStartAt", "scheduleOffsetMinutes"];

/**
 * What was last applied, as a PUT of `body` would leave it: a field the platform keeps when left out is
 * no change when the manifest stops stating it (the alert keeps it; driftless no longer manages it).
 */
function appliedAgainst(body: AlertUpdate, applied: Record<string, unknown> | undefined) {
  if (!applied) return applied;
  const dropped = KEPT_WHEN_LEFT_OUT.filter((field) => !(field in body));
  return dropped.length > 0 ? omit(applied, dropped) : applied;
}

/** What the PUT changes against what was last applied; a field left out is cleared by the platform. */
function changesOf(body: AlertUpdate, applied: Record<string, unknown> | undefined): Change[] {
  const changes: Change[] = [];
  for (const [path, to] of Object.entries(body)) {
    const from = applied?.[path];
    if (!same(to, from)) changes.push({ path, ...(from === undefined ? {} : { from }), to, op: "set" });
  }
  for (const [path, from] of Object.entries(applied ?? {}))
    if (!(path in body) && from !== undefined) changes.push({ path, from, op: "remove" });
  return changes;
}

/** The alert's PUT: the whole alert, when what the manifest states changed (or on a re-assertion). */
function plan(input: PlanInput<"Alert">): ResourcePlan {
  const { kind, name, record, context } = input;
  const { body, unresolved } = desired(input.spec, context);
  if (unresolved) return unresolvedPlan(input, unresolved);
  const applied = appliedAgainst(body, record?.applied);
  if (!context.reassert && same(body, applied))
    return { kind, name, outcome: "none", reason: "in sync", changes: [] };
  const changes = changesOf(body, applied);
  return {
    kind,
    name,
    outcome: "send",
    reason: changes.length > 0 ? `${changes.length} change(s)` : "re-asserted",
    write: {
      request: { route: "putAlert", params: { id: idOf(input) ?? "" }, body },
      record: (answer, at) => appliedRecord(input, body, at, answer),
    } satisfies Write<"putAlert">,
    changes,
  };
}

/** The alert's POST: every field the manifest states, its tile as ids. */
function createPlan(input: PlanInput<"Alert">): ResourcePlan {
  const { kind, name, context } = input;
  const { body, unresolved } = desired(input.spec, context);
  if (unresolved) return unresolvedPlan(input, unresolved);
  return {
    kind,
    name,
    outcome: "send",
    reason: "not created yet",
    write: {
      request: { route: "createAlert", params: {}, body },
      record: (answer, at) => created(input, answer.id, answer, at, body),
    } satisfies Write<"createAlert">,
    changes: Object.entries(body).map(([path, to]): Change => ({ path, to, op: "set" })),
  };
}

/** The tiles of no dashboard: what an alert found by a list (no pass at hand) is compared without. */
const NO_REFERENCES: Pick<PlanContext, "ref"> = {
  ref: () => ({ state: "waiting", reason: "" }),
};

/**
 * The record of an alert known to be `id` (created, or found by a list): what the create sent as applied
 * (found by a list: the alert without its tile's ids, which the next round sends if they differ).
 */
function created(
  { kind, name, spec, record }: Watcher,
  id: string,
  live: object | undefined,
  at: string,
  sent?: AlertUpdate,
) {
  const { intent: _done, ...rest } = record ?? { kind, name };
  const body = sent ?? desired(spec, NO_REFERENCES).body;
  return appliedRecord({ kind, name, record: rest }, body, at, live, { serverId: id });
}

/** `live` with its scheduleStartAt spelled as the manifest spells the same instant, if it is that instant. */
function sameInstant(body: AlertUpdate, live: unknown): unknown {
  const at = member(live, "scheduleStartAt");
  const want = body.scheduleStartAt;
  if (!isPlainObject(live) || typeof at !== "string" || typeof want !== "string") return live;
  return Date.parse(at) === Date.parse(want) ? { ...live, scheduleStartAt: want } : live;
}

/** The fields of the live alert that differ from what the manifest states (a tile not known yet: not compared). */
function drift({ spec, context }: PlanInput<"Alert">, live: unknown): DriftField[] {
  const { body } = desired(spec, context);
  return walk(body, sameInstant(body, live));
}

/** The alert met for the first time (reads on): as if its PUT had been sent and answered `live`. */
function baseline(input: PlanInput<"Alert">, live: object, fields: readonly DriftField[]) {
  const { body, unresolved } = desired(input.spec, input.context);
  if (unresolved) return undefined;
  return foldLive(baselineRecord(input, body, live), fields, live);
}

export const alert: Complete<"Alert"> = {
  kind: "Alert",
  phase: "dependents",
  references: (spec) =>
    spec.dashboard === undefined ? [] : [{ kind: "Dashboard" as const, name: spec.dashboard }],
  address: (spec, record) => {
    const id = spec.alertId ?? record?.serverId;
    return id === undefined ? undefined : { id };
  },
  create: {
    noun: "alert",
    within: "of the team",
    idField: "alertId",
    idOf: (spec) => spec.alertId,
    plan: createPlan,
    list: () =>
      ({
        request: { route: "listAlerts", params: {}, body: undefined },
        live: (answer) => answer.data,
      }) satisfies LiveRead<"listAlerts">,
    // A lost create's alert: every field the create sent, but the tile's ids (not known without a pass).
    matches: ({ spec }, listed) => walk(desired(spec, NO_REFERENCES).body, listed).length === 0,
    adopted: (watcher, id, live, at) => created(watcher, id, live, at),
    unusable: () => undefined,
  },
  update: { plan, learn: none("an alert's PUT sends it whole: nothing live is needed to plan it") },
  delete: {
    request: ({ id }) => (id ? { route: "deleteAlert", params: { id }, body: undefined } : undefined),
  },
  observe: {
    read: (watcher) => {
      const id = idOf(watcher);
      if (id === undefined) return undefined;
      return {
        request: { route: "getAlert", params: { id }, body: undefined },
        live: (answer) => answer,
      } satisfies LiveRead<"getAlert">;
    },
    drift,
    fold: (record: ResourceRecord, fields, live) => foldLive(record, fields, live),
    baseline,
    listed: (watcher) => {
      const id = idOf(watcher);
      if (id === undefined) return undefined;
      return {
        request: { route: "listAlerts", params: {}, body: undefined },
        live: (answer) => answer.data.find((listed) => sameId(listed.id, id)),
      } satisfies LiveRead<"listAlerts">;
    },
  },
  poll: none("a managed alert's state is read by the daemon's alert states round, not polled as a watch"),
  specPath: (path, spec) => {
    // The tile's ids come from the dashboard's manifest and the tile key.
    if (spec.dashboard !== undefined && path[0] === "dashboardId") return ["dashboard"];
    if (spec.tile !== undefined && path[0] === "tileId") return ["tile"];
    return specPathOf("alertId")(path);
  },
};
