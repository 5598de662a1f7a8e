import { idKey } from "../manifests/identity.js";
import type { Kind } from "../manifests/manifest.js";
import { SOURCE_KINDS } from "../manifests/specs/data-pipe.js";
import { isPlainObject } from "../plan/values.js";
import type { CallOptions, PlatformClient } from "../platform/client.js";
import { collectPages } from "../platform/pages.js";
import { seriesOfConfig } from "../platform/tile-config.js";
import { IMPORT_KINDS, type ImportKind } from "./kinds.js";
import { slugOf, uniqueName } from "./names.js";

/**
 * What `driftless import` writes for each kind: where its objects are listed (an organization's, a
 * service's, the team's), and the manifest that adopts a listed object, drafted from the fields the
 * platform answers in the manifests' own form (fit.ts then keeps what the kind's schema takes). One
 * entry per kind, in the order import lists them: dashboards before the alerts that name them.
 */

export { IMPORT_KINDS, type ImportKind };

/** Where a list is read: an organization, a service of it, or (observability) the team. */
export type Place = { organizationId?: string; serviceId?: string };

/** A live object as a list answers it. */
export type Listed = Record<string, unknown> & { id: string };

/** The dashboards that have a manifest (in the folder, or drafted before): by id, their name and tile keys by tile id. */
export type KnownDashboards = Map<string, { name: string; keys: ReadonlyMap<string, string> }>;

/** A manifest drafted from a live object, before it is fitted to its schema and given its file. */
export type Draft = {
  kind: ImportKind;
  /** The object's id, and what it is called in messages. */
  id: string;
  noun: string;
  /** What its manifest name is made from (the object's own name). */
  title: string;
  spec: Record<string, unknown>;
  /** Comment lines for the reviewer (credentials it may add, what is not managed). */
  notes: string[];
};

type Importer = {
  /** The folder its manifests are written to, under the output folder. */
  folder: string;
  /** Whose list holds its objects. */
  scope: "organization" | "service" | "team";
  list(platform: PlatformClient, place: Place, call: CallOptions): Promise<Listed[]>;
  /** The manifest that adopts `live`; a reason when none can state it. */
  draft(live: Listed, place: Place, dashboards: KnownDashboards): Draft | { skipped: string };
};

const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** `value` without its null members, deep (an answer's "none" is a field a manifest leaves out). */
export function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, child]) => child !== null && child !== undefined)
      .map(([key, child]) => [key, withoutNulls(child)]),
  );
}

/** The credentials each pipe source kind's manifest may add as references (answers never carry them). */
const PIPE_CREDENTIALS: Record<(typeof SOURCE_KINDS)[number], string[]> = {
  kafka: ["source.kafka.credentials: {username: NAME, password: {fromEnv: VARIABLE}}"],
  objectStorage: [
    "source.objectStorage.accessKey: {accessKeyId: {fromEnv: VARIABLE}, secretKey: {fromFile: FILE}}",
    "source.objectStorage.connectionString: {fromEnv: VARIABLE}",
  ],
  kinesis: ["source.kinesis.accessKey: {accessKeyId: {fromEnv: VARIABLE}, secretKey: {fromFile: FILE}}"],
  postgres: ["source.postgres.credentials: {username: NAME, password: {fromEnv: VARIABLE}}"],
};

/** A pipe's live state as a manifest states it; undefined for a state it cannot (Provisioning, ...). */
const PIPE_STATES: Record<string, string> = { Running: "running", Stopped: "stopped" };

const ENDPOINT_FIELDS = [
  "vpcEndpointServiceName",
  "vpcResourceConfigurationId",
  "vpcResourceShareArn",
  "mskClusterArn",
  "mskAuthentication",
  "gcpServiceAttachment",
];

/** Dashboard fields driftless does not send: a note says so when the dashboard has them. */
const DASHBOARD_EXTRAS = ["filters", "savedQuery", "savedFilterValues", "containers"];

const pick = (value: unknown, keys: readonly string[]): Record<string, unknown> =>
  isPlainObject(value)
    ? Object.fromEntries(keys.filter((k) => value[k] != null).map((k) => [k, value[k]]))
    : {};

const apiKey: Importer = {
  folder: "api-keys",
  scope: "organization",
  list: async (platform, { organizationId = "" }, call) =>
    (await platform.call("listApiKeys", { organizationId }, undefined, call)).result,
  draft: (key, { organizationId }) => {
    const entries = Array.isArray(key.ipAccessList)
      ? key.ipAccessList.map((entry) => pick(entry, ["source", "description"]))
      : undefined;
    return {
      kind: "ApiKey",
      id: key.id,
      noun: "API key",
      title: text(key.name) ?? `key-${key.id}`,
      spec: {
        organizationId,
        keyId: key.id,
        ...pick(key, ["name", "roles"]),
        // null: the key never expires, a value the manifest states as it is.
        ...("expireAt" in key ? { expireAt: key.expireAt ?? null } : {}),
        ...(entries ? { ipAccessList: entries } : {}),
        ...pick(key, ["state"]),
      },
      notes: [],
    };
  },
};

const dataPipe: Importer = {
  folder: "data-pipes",
  scope: "service",
  list: async (platform, { organizationId = "", serviceId = "" }, call) =>
    (await platform.call("listDataPipes", { organizationId, serviceId }, undefined, call)).result,
  draft: (pipe, { organizationId, serviceId }) => {
    const source = isPlainObject(pipe.source) ? pipe.source : {};
    const sourceKind = SOURCE_KINDS.find((kind) => isPlainObject(source[kind]));
    const state = PIPE_STATES[text(pipe.state) ?? ""];
    const scaling = pick(pipe.scaling, ["replicas", "replicaCpuMillicores", "replicaMemoryGb"]);
    const columns = isPlainObject(pipe.destination) ? pipe.destination.columns : undefined;
    return {
      kind: "DataPipe",
      id: pipe.id,
      noun: "data pipe",
      title: text(pipe.name) ?? `pipe-${pipe.id}`,
      spec: {
        organizationId,
        serviceId,
        dataPipeId: pipe.id,
        ...pick(pipe, ["name"]),
        ...(sourceKind ? { source: { [sourceKind]: withoutNulls(source[sourceKind]) } } : {}),
        ...(Array.isArray(columns) ? { destination: { columns } } : {}),
        ...pick(pipe, ["fieldMappings", "settings"]),
        ...(state ? { state } : {}),
        ...(Object.keys(scaling).length > 0 ? { scaling } : {}),
      },
      notes: [
        ...(sourceKind
          ? [
              "Credentials are never read from the platform; this manifest may add them as references:",
              ...PIPE_CREDENTIALS[sourceKind].map((line) => `  ${line}`),
            ]
          : []),
        ...(state || pipe.state == null
          ? []
          : [`state ${String(pipe.state)} is not managed: a manifest states running or stopped`]),
      ],
    };
  },
};

const reversePrivateEndpoint: Importer = {
  folder: "reverse-private-endpoints",
  scope: "service",
  list: async (platform, { organizationId = "", serviceId = "" }, call) =>
    (await platform.call("listReversePrivateEndpoints", { organizationId, serviceId }, undefined, call))
      .result,
  draft: (endpoint, { organizationId, serviceId }) => ({
    kind: "ReversePrivateEndpoint",
    id: endpoint.id,
    noun: "reverse private endpoint",
    title: text(endpoint.description) || `endpoint-${endpoint.id}`,
    spec: {
      organizationId,
      serviceId,
      id: endpoint.id,
      description: text(endpoint.description) ?? "",
      ...pick(endpoint, ["type", ...ENDPOINT_FIELDS]),
    },
    notes: [],
  }),
};

/** A dashboard's tiles as a manifest writes them: keys made from their names, series from their config. */
function tilesOf(tiles: unknown[]): Record<string, unknown>[] | { skipped: string } {
  const keys = new Set<string>();
  const drafted: Record<string, unknown>[] = [];
  for (const tile of tiles) {
    if (!isPlainObject(tile)) continue;
    const { id, name, x, y, w, h, config, series, asRatio, containerId, tabId } = tile;
    const fromConfig = isPlainObject(config) ? seriesOfConfig(config) : undefined;
    if (isPlainObject(config) && !fromConfig)
      return {
        skipped: `its tile ${String(name)} is a ${String(config.displayType)} tile, which a manifest cannot state`,
      };
    const key = uniqueName(slugOf(text(name) ?? "", "tile"), keys);
    keys.add(key);
    drafted.push({
      key,
      id,
      name,
      x,
      y,
      w,
      h,
      ...(fromConfig?.asRatio === undefined
        ? typeof asRatio === "boolean"
          ? { asRatio }
          : {}
        : { asRatio: fromConfig.asRatio }),
      series: fromConfig?.series ?? withoutNulls(series) ?? [],
      ...(containerId == null ? {} : { containerId }),
      ...(tabId == null ? {} : { tabId }),
    });
  }
  return drafted;
}

const dashboard: Importer = {
  folder: "dashboards",
  scope: "team",
  list: async (platform, _place, call) => (await platform.call("listDashboards", {}, undefined, call)).result,
  draft: (board) => {
    const tiles = tilesOf(Array.isArray(board.tiles) ? board.tiles : []);
    if ("skipped" in tiles) return tiles;
    const extras = DASHBOARD_EXTRAS.filter((field) => {
      const value = board[field];
      return value != null && !(Array.isArray(value) && value.length === 0);
    });
    return {
      kind: "Dashboard",
      id: board.id,
      noun: "dashboard",
      title: text(board.name) ?? `dashboard-${board.id}`,
      spec: { dashboardId: board.id, ...pick(board, ["name", "tags"]), tiles },
      notes: extras.map(
        (field) => `${field}: not a manifest field, so driftless's PUT of this dashboard does not send it`,
      ),
    };
  },
};

/** The tile an alert watches: by its dashboard's manifest and tile key when one is known, else by ids. */
function targetOf(alert: Listed, dashboards: KnownDashboards): Record<string, unknown> {
  // The published contract names it dashboardId, the minimal one dashboard.
  const dashboardId = text(alert.dashboardId) ?? text(alert.dashboard);
  const tileId = text(alert.tileId);
  if (dashboardId === undefined || tileId === undefined) return pick(alert, ["savedSearchId", "groupBy"]);
  const known = dashboards.get(idKey(dashboardId));
  const key = known?.keys.get(idKey(tileId));
  return known && key ? { dashboard: known.name, tile: key } : { dashboardId, tileId };
}

/** An alert's channels as a manifest writes them: `channels` when it has several, else `channel`. */
function channelsOf(alert: Listed): Record<string, unknown> {
  const channel = (value: unknown) => pick(value, ["type", "webhookId"]);
  const channels = Array.isArray(alert.channels) ? alert.channels.map(channel) : [];
  if (channels.length > 1) return { channels };
  const only = channels[0] ?? (isPlainObject(alert.channel) ? channel(alert.channel) : undefined);
  return only ? { channel: only } : {};
}

const alert: Importer = {
  folder: "alerts",
  scope: "team",
  list: (platform, _place, call) =>
    collectPages(async (params) => (await platform.call("listAlerts", params, undefined, call)).result),
  draft: (live, _place, dashboards) => ({
    kind: "Alert",
    id: live.id,
    noun: "alert",
    title: text(live.name) ?? `alert-${live.id}`,
    spec: {
      alertId: live.id,
      ...pick(live, [
        "name",
        "message",
        "note",
        "source",
        "interval",
        "thresholdType",
        "threshold",
        "thresholdMax",
      ]),
      ...targetOf(live, dashboards),
      ...channelsOf(live),
      ...(typeof live.scheduleOffsetMinutes === "number" && live.scheduleOffsetMinutes > 0
        ? { scheduleOffsetMinutes: live.scheduleOffsetMinutes }
        : {}),
      ...pick(live, ["scheduleStartAt", "numConsecutiveWindows"]),
    },
    notes: [],
  }),
};

/** One importer per kind import writes, each a manifest kind. */
export const IMPORTERS: { [K in ImportKind & Kind]: Importer } = {
  ApiKey: apiKey,
  DataPipe: dataPipe,
  ReversePrivateEndpoint: reversePrivateEndpoint,
  Dashboard: dashboard,
  Alert: alert,
};
