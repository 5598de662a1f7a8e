import { kindOf } from "../kinds/index.js";
import { isNone } from "../kinds/kind.js";
import { READY } from "../kinds/reverse-private-endpoint.js";
import { isKind } from "../manifests/manifest.js";
import type { PlannedRequest } from "../plan/types.js";
import { member } from "../plan/values.js";
import { type PlanView, viewOf } from "../plan/view.js";
import type { Read } from "../platform/client.js";
import type { Answers, RouteName } from "../platform/routes.js";
import { type ResourceStatus, resourceId } from "../resources.js";
import type { State } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import type { Facts } from "./decide.js";
import { deleteLimits, runDeletes } from "./deletes.js";
import type { Effects } from "./effects.js";
import type { ListReads } from "./list-reads.js";
import { type PassRun, prepareRecords, runPhases } from "./pass.js";
import type { RecordChanges } from "./records.js";
import type { EngineDeps, Pass, ResourceOutcome } from "./types.js";
import type { Writer } from "./write-guard.js";

/**
 * A pass that sends nothing (`plan`, `plan --base`, `validate --contract`): apply's own pass (pass.ts,
 * resource.ts, decide.ts), with effects that answer each request as the platform would, with made-up
 * ids where the platform assigns one, and keep the records in memory. So a plan shows what apply would
 * send, including what depends on an earlier answer of the same pass (a pipe naming an endpoint
 * created before it).
 */

/** A made-up id, where the platform would assign one: shown in the requests that carry it. */
export const madeUpId = (manifest: Writer) => `<id of ${resourceId(manifest)}>`;
const madeUpTileId = (dashboard: string, key: string) => `<id of tile ${key} of Dashboard/${dashboard}>`;

/** What a made-up answer may need to know: the resource, and the id the platform would assign it. */
type Asker = { manifest: Writer; id: string };

/**
 * The answer a platform would give each route, as far as a record needs it: the id it addresses (or
 * assigns), a dashboard's tile ids (the PUT sends tiles in the manifest's order), an endpoint's status
 * (Ready). Lists come back empty: a record takes its lists from what was sent. Nothing secret is echoed.
 */
const MADE_UP: { [R in RouteName]: (request: PlannedRequest<R>, asker: Asker) => Answers[R] } = {
  updateOrganization: ({ params }) => ({ id: params.organizationId }),
  updateApiKey: ({ params }) => ({ id: params.keyId }),
  updateDataPipe: ({ params }) => ({ id: params.dataPipeId }),
  createReversePrivateEndpoint: (_, { id }) => ({ id, status: READY }),
  listBackups: () => [],
  putDashboard: ({ params, body }, asker) => ({ id: params.id, tiles: madeUpTiles(body.tiles, asker) }),
  getAlert: ({ params }) => ({ id: params.id }),
  getOrganization: ({ params }) => ({ id: params.organizationId }),
  getApiKey: ({ params }) => ({ id: params.keyId }),
  getDataPipe: ({ params }) => ({ id: params.dataPipeId }),
  listReversePrivateEndpoints: () => [],
  getReversePrivateEndpoint: ({ params }) => ({ id: params.reversePrivateEndpointId }),
  getDashboard: ({ params }) => ({ id: params.id, tiles: [] }),
  listSources: () => [],
  listApiKeys: () => [],
  createApiKey: ({ body }, { id }) => ({ key: { id, name: body.name } }),
  deleteApiKey: () => undefined,
  listDataPipes: () => [],
  createDataPipe: ({ body }, { id }) => ({ id, name: body.name }),
  deleteDataPipe: () => undefined,
  updateDataPipeState: ({ params }) => ({ id: params.dataPipeId }),
  updateDataPipeScaling: ({ params }) => ({ id: params.dataPipeId }),
  deleteReversePrivateEndpoint: () => undefined,
  listDashboards: () => [],
  createDashboard: ({ body }, asker) => ({ id: asker.id, tiles: madeUpTiles(body.tiles, asker) }),
  validateDashboard: () => ({ valid: true, errors: [] }),
  deleteDashboard: () => undefined,
  listAlerts: () => ({ data: [] }),
  createAlert: (_, { id }) => ({ id }),
  putAlert: ({ params }) => ({ id: params.id }),
  deleteAlert: () => undefined,
  listWebhooks: () => ({ data: [] }),
  createWebhook: (_, { id }) => ({ id }),
  putWebhook: ({ params }) => ({ id: params.id }),
  deleteWebhook: () => undefined,
};

/** The tiles of a dashboard's answer: each with its id, or a made-up one named after its key. */
function madeUpTiles(tiles: readonly { id?: string; name: string }[], { manifest }: Asker) {
  const specTiles = member(manifest.spec, "tiles");
  const keys = Array.isArray(specTiles) ? specTiles.map((tile) => String(member(tile, "key"))) : [];
  return tiles.map((tile, index) => ({
    ...tile,
    id: tile.id || madeUpTileId(manifest.name, keys[index] ?? String(index)),
  }));
}

function madeUpAnswer<R extends RouteName>(request: PlannedRequest<R>, asker: Asker): Answers[R] {
  const answer: (request: PlannedRequest<R>, asker: Asker) => Answers[R] = MADE_UP[request.route];
  return answer(request, asker);
}

/**
 * Effects that change nothing outside: made-up answers, records in `state` only, nothing saved. `read`
 * (plan with reads on): reads are sent, they change nothing either; `plan --base` has none. `idOf` makes
 * the id the platform would assign a created object (`madeUpId` by default).
 */
export function dryEffects(
  state: State,
  options: { read?: Read; idOf?: (manifest: Writer) => string } = {},
): Effects {
  const { read, idOf = madeUpId } = options;
  return {
    ...(read
      ? {
          read: async <R extends RouteName>(request: PlannedRequest<R>) =>
            (await read(request, { priority: "read" })).result,
        }
      : {}),
    record(id, record) {
      if (record) state.resources[id] = record;
      else delete state.resources[id];
    },
    save: async () => {},
    mayWrite: async () => undefined,
    // A key's id and secret are made when it is created; a plan makes up neither, and writes nothing.
    credential: async () => ({
      pair: { keyId: "(made when the key is created)", keySecret: "" },
      unwritten: false,
    }),
    send: async (request, { manifest }) => ({
      result: madeUpAnswer(request, { manifest, id: idOf(manifest) }),
    }),
  };
}

export type DryRunOptions = {
  /** Quiet: a dry run's log lines would describe requests that were never sent. */
  log: Logger;
  allowCreate?: readonly string[];
  reassert?: boolean;
  /** When "now" is for the planners and the retention of records without a manifest. */
  now: Date;
  /** The clock of the times the dry run stamps; default the wall clock. */
  clock?: () => Date;
  deps: PassRun["deps"] &
    Pick<EngineDeps, "prune" | "maxDeletes"> & { unmanagedRetentionMs?: number; read?: Read };
  /** The operator lets the plan's pass send up to this many deletes (--allow-deletes). */
  allowDeletes?: number;
  desired: Facts["desired"];
  /** The lists plan's id check read: the pass finds its first contacts in them, not reading them again. */
  lists?: ListReads;
};

/** What a dry run came to: each manifest's outcome in pass order, and the records it prepared. */
export type DryRun = { outcomes: ResourceOutcome[]; records: RecordChanges };

/** Runs `pass` as apply would, sending nothing and saving nothing; its state is changed in memory. */
export async function dryRun(pass: Pass, options: DryRunOptions): Promise<DryRun> {
  const { log, deps, now } = options;
  const allowCreate = options.allowCreate ?? [];
  const records = prepareRecords(pass, {
    allow: new Set(allowCreate),
    now,
    log,
    prune: deps.prune ?? true,
    ...(deps.unmanagedRetentionMs ? { retentionMs: deps.unmanagedRetentionMs } : {}),
  });
  const passOptions = {
    trigger: "cli" as const,
    allowCreate,
    reassert: options.reassert ?? false,
    ...(options.allowDeletes === undefined ? {} : { allowDeletes: options.allowDeletes }),
  };
  const run = {
    pass,
    effects: dryEffects(pass.state, deps.read ? { read: deps.read } : {}),
    log,
    options: passOptions,
    deps,
    now,
    clock: options.clock ?? (() => new Date()),
    memory: { refusals: new Map(), unsaved: new Map() },
    desired: options.desired,
    ...(options.lists ? { lists: options.lists } : {}),
  };
  const { outcomes } = await runPhases(run);
  const deletes = await runDeletes(run, records.deletions, deleteLimits(deps, passOptions, now));
  return { outcomes: [...outcomes, ...deletes.outcomes], records };
}

/** What `plan` shows of a resource: the decision of its first round (or what a delete shows). */
export function viewOfOutcome({ first, status, shown }: ResourceOutcome): PlanView {
  if (shown) return shown;
  // A create's id is the platform's to assign: what the dry run made up for it is not shown as one.
  const id = status.id && first?.action !== "create" ? { id: status.id } : {};
  if (!first)
    return { kind: status.kind, name: status.name, ...id, outcome: "none", reason: "", changes: [] };
  const view = { ...viewOf(first.plan, first.input?.record?.applied), ...id };
  if (first.action === "create" || first.action === "update") return { ...view, action: first.action };
  return view;
}

/** What `plan` shows of the records without a manifest: nothing is sent for them. */
export function unmanagedViews(records: RecordChanges): PlanView[] {
  const view = (s: ResourceStatus, reason: string): PlanView => ({
    kind: s.kind,
    name: s.name,
    ...(s.id ? { id: s.id } : {}),
    outcome: "unmanaged",
    reason,
    changes: [],
  });
  return [
    // Kept without a manifest: an object of a kind driftless deletes is left as it is (orphaned).
    ...records.unmanaged.map((s): PlanView => {
      const deletable = isKind(s.kind) && !isNone(kindOf(s.kind).delete);
      return { ...view(s, s.message ?? ""), ...(deletable ? { action: "orphan" } : {}) };
    }),
    ...records.dropped.map((s) => view(s, `${s.message ?? ""}; the next apply drops its record`)),
  ];
}
