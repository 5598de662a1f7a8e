import type { Manifest } from "../manifests/manifest.js";
import { READY } from "../plan/reverse-private-endpoint.js";
import type { LiveRead, PlannedRequest } from "../plan/types.js";
import { type PlanView, viewOf } from "../plan/view.js";
import { ROUTES } from "../platform/routes.js";
import type { ResourceStatus } from "../resources.js";
import type { State } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import type { Facts } from "./decide.js";
import type { Effects } from "./effects.js";
import { type PassRun, prepareRecords, runPhases } from "./pass.js";
import type { RecordChanges } from "./records.js";
import type { Reader } from "./send.js";
import type { Pass, ResourceOutcome } from "./types.js";

/**
 * A pass that sends nothing (`plan`, `plan --base`): apply's own pass (pass.ts, resource.ts,
 * decide.ts), with effects that answer each request as the platform would, with made-up ids where the
 * platform assigns one, and keep the records in memory. So a plan shows what apply would send, including
 * what depends on an earlier answer of the same pass (a pipe naming an endpoint created before it).
 */

/** A made-up id, where the platform would assign one: shown in the requests that carry it. */
export const madeUpEndpointId = (name: string) => `<id of ReversePrivateEndpoint/${name}>`;
const madeUpTileId = (dashboard: string, key: string) => `<id of tile ${key} of Dashboard/${dashboard}>`;

/**
 * The answer a platform would give `request` of `manifest`: an endpoint's id (Ready), a dashboard's
 * tile ids (the planner sends tiles in the manifest's order). PATCH answers carry nothing a record
 * needs: lists are taken from what was sent. Nothing secret is echoed.
 */
function madeUpAnswer(request: PlannedRequest, manifest: Manifest): Record<string, unknown> {
  if (ROUTES[request.route].method === "POST") return { id: madeUpEndpointId(manifest.name), status: READY };
  if (request.route !== "putDashboard") return {};
  const keys = manifest.kind === "Dashboard" ? manifest.spec.tiles.map((tile) => tile.key) : [];
  const tiles = request.body.tiles.map((tile, index) => ({
    ...tile,
    id: tile.id || madeUpTileId(manifest.name, keys[index] ?? String(index)),
  }));
  return { tiles };
}

/**
 * Effects that change nothing outside: made-up answers, records in `state` only, nothing saved. `read`
 * (plan with reads on): reads are sent, they change nothing either; `plan --base` has none.
 */
export function dryEffects(state: State, read?: Reader): Effects {
  return {
    ...(read ? { read: (request: LiveRead) => read(request, { priority: "read" }) } : {}),
    record(id, record) {
      if (record) state.resources[id] = record;
      else delete state.resources[id];
    },
    save: async () => {},
    mayWrite: async () => undefined,
    send: async (request, { manifest }) => ({ result: madeUpAnswer(request, manifest) }),
  };
}

export type DryRunOptions = {
  /** Quiet: a dry run's log lines would describe requests that were never sent. */
  log: Logger;
  allowCreate?: readonly string[];
  reassert?: boolean;
  /** When "now" is for the planners and the retention of records without a manifest. */
  now: Date;
  deps: PassRun["deps"] & { unmanagedRetentionMs?: number; read?: Reader };
  desired: Facts["desired"];
};

/** What a dry run came to: each manifest's outcome in pass order, and the records it prepared. */
export type DryRun = { outcomes: ResourceOutcome[]; records: RecordChanges };

/** Runs `pass` as apply would, sending nothing and saving nothing; its state is changed in memory. */
export async function dryRun(pass: Pass, options: DryRunOptions): Promise<DryRun> {
  const { log } = options;
  const allowCreate = options.allowCreate ?? [];
  const records = prepareRecords(pass, {
    allow: new Set(allowCreate),
    now: options.now,
    log,
    ...(options.deps.unmanagedRetentionMs ? { retentionMs: options.deps.unmanagedRetentionMs } : {}),
  });
  const { outcomes } = await runPhases({
    pass,
    effects: dryEffects(pass.state, options.deps.read),
    log,
    options: { trigger: "cli", allowCreate, reassert: options.reassert ?? false },
    deps: options.deps,
    now: options.now,
    memory: { refusals: new Map(), unsaved: new Map() },
    desired: options.desired,
  });
  return { outcomes, records };
}

/** What `plan` shows of a resource: the decision of its first round. */
export function viewOfOutcome({ first, status }: ResourceOutcome): PlanView {
  if (!first) return { kind: status.kind, name: status.name, outcome: "none", reason: "", changes: [] };
  return viewOf(first.plan, first.input?.record?.applied);
}

/** What `plan` shows of the records without a manifest: nothing is sent for them. */
export function unmanagedViews(records: RecordChanges): PlanView[] {
  const view = (s: ResourceStatus, reason: string): PlanView => ({
    kind: s.kind,
    name: s.name,
    outcome: "unmanaged",
    reason,
    changes: [],
  });
  return [
    ...records.unmanaged.map((s) => view(s, s.message ?? "")),
    ...records.dropped.map((s) => view(s, `${s.message ?? ""}; the next apply drops its record`)),
  ];
}
