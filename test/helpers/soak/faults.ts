import type { Fault as PlatformFault, Simulator } from "../../../src/simulator/index.js";
import { DEFAULT_SECRET_NAME, shardName, shardOf } from "../../../src/state/kubernetes-store.js";
import type { FakeKubernetes, Fault as KubernetesFault, RecordedRequest } from "../fake-kubernetes.js";
import { between, pick, type Random } from "./edits.js";
import type { Collection } from "./world.js";

/**
 * The faults the soak injects: the platform's (the simulator's `inject`: 429 and 503 with Retry-After,
 * answers dropped or left hanging, with and without the work done, latency, and hostile answers: deep,
 * huge, reordered or wrong-typed) and the Kubernetes API's (the fake API server's one fault slot: a
 * write that lands without its answer, a write that fails, slow reads). Each returns what it did, for
 * the step list, and counts itself by kind.
 */

export const ENDPOINT_ROUTE =
  "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";

/** The route that creates each collection's objects (all but the endpoints': the published contract's). */
export const CREATE_ROUTES: Record<Collection, string> = {
  endpoints: ENDPOINT_ROUTE,
  keys: "/v1/organizations/{organizationId}/keys",
  pipes: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes",
  dashboards: "/api/v2/dashboards",
};

/** A create, as a fault aims at it. */
export const createTarget = (collection: Collection): Pick<PlatformFault, "api" | "method" | "route"> => ({
  api: collection === "dashboards" ? "observability" : "management",
  method: "POST",
  route: CREATE_ROUTES[collection],
});

/**
 * The requests a platform fault may aim at; the creates, the requests never repeated blindly, most
 * (the endpoint's, which both contracts serve, more), and the deletes.
 */
const TARGETS: Array<Pick<PlatformFault, "api" | "method" | "route">> = [
  createTarget("endpoints"),
  createTarget("endpoints"),
  createTarget("endpoints"),
  createTarget("keys"),
  createTarget("pipes"),
  createTarget("dashboards"),
  { api: "management", method: "DELETE" },
  { api: "observability", method: "DELETE", route: "/api/v2/dashboards/{id}" },
  { api: "management", method: "PATCH", route: "/v1/organizations/{organizationId}" },
  { api: "management", method: "PATCH", route: "/v1/organizations/{organizationId}/keys/{keyId}" },
  {
    api: "management",
    method: "PATCH",
    route: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}",
  },
  {
    api: "management",
    method: "GET",
    route: "/v1/organizations/{organizationId}/services/{serviceId}/backups",
  },
  { api: "management" },
  { api: "observability", method: "PUT", route: "/api/v2/dashboards/{id}" },
  { api: "observability", method: "PUT", route: "/api/v2/dashboards/{id}" },
  { api: "observability", method: "GET", route: "/api/v2/alerts/{id}" },
  { api: "observability" },
];

const ORGANIZATION_ROUTE = "/v1/organizations/{organizationId}";
const KEY_ROUTE = "/v1/organizations/{organizationId}/keys/{keyId}";
const PIPE_ROUTE = "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}";
const DASHBOARD_ROUTE = "/api/v2/dashboards/{id}";

/**
 * Where a hostile answer may be aimed, and the field it rewrites: the reads (reads are on with the
 * full contract; fields the soak's manifests state, or the answer's schema checks) and the polls, any
 * of the four shapes; the answers of writes, only the shapes whose
 * answer driftless still reads (deep is cut, reordered is the same answer): a write's answer of
 * another type is a `terminal` failure by design (docs/operations.md: a URL that is not the
 * platform's API), and a huge one would be kept whole in the state as the write's answer.
 */
const HOSTILE_TARGETS: Array<Pick<PlatformFault, "api" | "method" | "route" | "field"> & { writes?: true }> =
  [
    { api: "management", method: "GET", route: ORGANIZATION_ROUTE, field: "privateEndpoints" },
    { api: "management", method: "GET", route: ORGANIZATION_ROUTE, field: "name" },
    { api: "management", method: "GET", route: KEY_ROUTE, field: "ipAccessList" },
    { api: "management", method: "GET", route: PIPE_ROUTE, field: "settings.streaming_max_insert_wait_ms" },
    { api: "management", method: "GET", route: PIPE_ROUTE, field: "source.postgres.settings.pullBatchSize" },
    { api: "management", method: "GET", route: PIPE_ROUTE, field: "source.postgres.tableMappings" },
    { api: "management", method: "GET", route: ENDPOINT_ROUTE, field: "description" },
    {
      api: "management",
      method: "GET",
      route: "/v1/organizations/{organizationId}/services/{serviceId}/backups",
      field: "finishedAt",
    },
    { api: "observability", method: "GET", route: DASHBOARD_ROUTE, field: "tiles" },
    { api: "observability", method: "GET", route: DASHBOARD_ROUTE, field: "tags" },
    { api: "observability", method: "GET", route: "/api/v2/alerts/{id}", field: "state" },
    { api: "management", method: "PATCH", route: KEY_ROUTE, field: "ipAccessList", writes: true },
    { api: "management", method: "PATCH", route: PIPE_ROUTE, field: "settings", writes: true },
  ];

const SHAPES = ["deep", "huge", "reordered", "wrong-type"] as const;
const WRITE_SHAPES = ["deep", "reordered"] as const;

export type FaultCounts = Record<string, number>;

const count = (counts: FaultCounts, kind: string) => {
  counts[kind] = (counts[kind] ?? 0) + 1;
};

/** The longest latency injected so far: a request held that long may still take effect after its client died. */
export type LatencyBook = { maxMs: number };

export function injectPlatformFault(
  sim: Simulator,
  random: Random,
  counts: FaultCounts,
  latency: LatencyBook,
): string {
  const target = pick(random, TARGETS) as (typeof TARGETS)[number];
  const times = between(random, 1, 3);
  const where = `${target.api} ${target.method ?? "any"} ${target.route ?? "any route"} ×${times}`;
  const roll = random();
  const fault = ((): [string, PlatformFault] => {
    const base = { ...target, count: times };
    if (roll < 0.22) {
      const retryAfter = String(between(random, 1, 2));
      return [
        `429 Retry-After ${retryAfter}`,
        { ...base, kind: "status", status: 429, headers: { "retry-after": retryAfter } },
      ];
    }
    if (roll < 0.4) {
      return ["503 Retry-After 1", { ...base, kind: "status", status: 503, headers: { "retry-after": "1" } }];
    }
    if (roll < 0.55) return ["drop", { ...base, kind: "drop" }];
    if (roll < 0.72) return ["drop applied", { ...base, kind: "drop", applied: true }];
    if (roll < 0.76) return ["hang", { ...base, count: 1, kind: "hang" }];
    if (roll < 0.8) return ["hang applied", { ...base, count: 1, kind: "hang", applied: true }];
    const ms = between(random, 1, 15) * 100;
    latency.maxMs = Math.max(latency.maxMs, ms);
    return [`latency ${ms} ms`, { ...base, kind: "latency", ms }];
  })();
  count(counts, `platform ${fault[0].replace(/ [\d.]+( ms)?$/, "")}`);
  sim.inject(fault[1]);
  return `platform fault: ${fault[0]} on ${where}`;
}

/**
 * A hostile answer: one of the shapes (deep, huge, reordered, wrong-type), aimed at a read, a poll or
 * a write's answer, for the next one to three matching answers.
 */
export function injectHostileAnswer(sim: Simulator, random: Random, counts: FaultCounts): string {
  const { writes, ...target } = pick(random, HOSTILE_TARGETS) as (typeof HOSTILE_TARGETS)[number];
  const kind = pick(random, writes ? WRITE_SHAPES : SHAPES) as (typeof SHAPES)[number];
  const times = between(random, 1, 3);
  count(counts, `hostile ${kind} answer`);
  sim.inject({ ...target, kind, count: times });
  return `hostile answer: ${kind} ${target.field} on ${target.api} ${target.method} ${target.route} ×${times}`;
}

/**
 * Matches, of the next `times` requests `match` picks, each with chance `probability` (drawn from
 * `random`), then none: a window in which some writes of a save land and others fail.
 */
function someOf(
  times: number,
  probability: number,
  random: Random,
  match: (request: RecordedRequest) => boolean,
) {
  let left = times;
  return (request: RecordedRequest) => {
    if (left <= 0 || !match(request)) return false;
    left -= 1;
    return random() < probability;
  };
}

const isWrite = (request: RecordedRequest) => request.method !== "GET";
const isRead = (request: RecordedRequest) => request.method === "GET";

/**
 * Sets the fake API server's fault (replacing the one before, which may be unspent) for a window of
 * the next writes (or reads), each hit by chance: a save of several Secret writes (a rename moves a
 * record between two shards) then lands in part.
 */
export function injectKubernetesFault(fake: FakeKubernetes, random: Random, counts: FaultCounts): string {
  const roll = random();
  const writes = between(random, 2, 12);
  const chance = between(random, 3, 8) / 10;
  const [kind, fault, match]: [string, KubernetesFault, (r: RecordedRequest) => boolean] =
    roll < 0.25
      ? ["write lands, answer hangs", { afterEffect: "hang" }, someOf(writes, chance / 3, random, isWrite)]
      : roll < 0.5
        ? ["write lands, connection reset", { afterEffect: "reset" }, someOf(writes, chance, random, isWrite)]
        : roll < 0.8
          ? ["write fails 500", { status: 500 }, someOf(writes, chance, random, isWrite)]
          : [
              "slow reads",
              { delayMs: between(random, 5, 20) },
              someOf(between(random, 200, 1500), 1, random, isRead),
            ];
  count(counts, `kubernetes ${kind}`);
  fake.setFault(fault, match);
  const what =
    "delayMs" in fault ? `${fault.delayMs} ms` : `${Math.round(chance * 100)}% of the next ${writes} writes`;
  return `kubernetes fault: ${kind} (${what})`;
}

/**
 * Aims the fake API server's fault at the first write of the shard that is the new home of a record
 * just renamed (`ids`, `Kind/name`): it fails with 500, or lands without its answer. The save that
 * moves the record then lands in part, the case a save's order is there for.
 */
export function injectRenameFault(
  fake: FakeKubernetes,
  random: Random,
  counts: FaultCounts,
  ids: string[],
): string {
  const id = pick(random, ids) as string;
  const shard = shardName(DEFAULT_SECRET_NAME, shardOf(id));
  const lands = random() < 0.3;
  const kind = lands
    ? "renamed record's new shard: write lands, connection reset"
    : "renamed record's new shard: write fails 500";
  count(counts, `kubernetes ${kind}`);
  const fault: KubernetesFault = lands ? { afterEffect: "reset" } : { status: 500 };
  fake.setFault(
    fault,
    someOf(1, 1, random, (r) => isWrite(r) && r.body?.metadata?.name === shard),
  );
  return `kubernetes fault: ${id}'s new shard ${shard}: ${lands ? "its write lands, the connection reset" : "its write fails 500"}`;
}
