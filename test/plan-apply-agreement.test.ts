import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatform, type Platform } from "../src/commands/platform.js";
import { Config } from "../src/config.js";
import { ConfigError } from "../src/errors.js";
import { kindOf } from "../src/kinds/index.js";
import { isNone } from "../src/kinds/kind.js";
import { isKind } from "../src/manifests/manifest.js";
import type { PlanView } from "../src/plan/view.js";
import { expandTemplate, ROUTES } from "../src/platform/routes.js";
import { createReconciler, planPass } from "../src/reconcile/engine.js";
import { defaultFixture } from "../src/simulator/default-fixture.js";
import { seededRandom } from "../src/simulator/faults.js";
import { parseFixture } from "../src/simulator/fixture.js";
import { defaultIds, type RecordedRequest, type Simulator, startSimulator } from "../src/simulator/index.js";
import type { ResourceRecord, State, StateStore } from "../src/state/store.js";
import { createLogger } from "../src/telemetry/logger.js";

/**
 * `plan` is `apply` without sending: over random manifests, records and operator options, what the
 * plan lists as sent is exactly what the simulator then receives from the apply, on the wire (which
 * resources, and the method, path and body of the first request of each). The manifests are real
 * files, the state an in-memory store, the platform the simulator (a fresh one per case). The plan's
 * made-up ids stand for the ids the platform assigned, and its masked secrets for their values.
 * AGREEMENT_SEED=<n> replays one case, AGREEMENT_CASES=<n> runs more.
 */

const CASES = Number(process.env.AGREEMENT_CASES ?? 200);
const ONLY = process.env.AGREEMENT_SEED === undefined ? undefined : Number(process.env.AGREEMENT_SEED);

const ORG = defaultIds.organizationId;
/** An organization driftless has no key for: its resources fail and send nothing. */
const KEYLESS_ORG = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";
const SERVICE = defaultIds.serviceId;
/** The simulator's keys: key-1 is the one driftless authenticates with (its lock-out guard applies). */
const KEYS = [defaultIds.managementKeyId, defaultIds.ciDeployerKeyId];
const uuid = (n: number) => `5a1b2c3d-4e5f-4a7b-8c9d-${String(n).padStart(12, "0")}`;
const hex = (n: number) => `65f1a2b3c4d5e6f7${String(n).padStart(8, "0")}`;

type Draw = {
  chance(p: number): boolean;
  int(n: number): number;
  pick<T>(items: readonly T[]): T;
  some<T>(items: readonly T[]): T[];
};

function draws(seed: number): Draw {
  const next = seededRandom(seed);
  const draw: Draw = {
    chance: (p) => next() < p,
    int: (n) => Math.floor(next() * n),
    pick: (items) => items[draw.int(items.length)] as (typeof items)[number],
    some: (items) => items.filter(() => next() < 0.5),
  };
  return draw;
}

type Doc = {
  kind: string;
  name: string;
  spec: Record<string, unknown>;
  annotations?: Record<string, string>;
};

/**
 * One variant of a small estate: every kind that sends, with the choices a change may touch; with
 * `creates` (a platform serving the published contract), a pipe and a dashboard whose manifests name no
 * id, which driftless creates (and deletes, once a later estate leaves them out).
 */
function estate(d: Draw, endpointNames: string[], creates = false): Doc[] {
  const docs: Doc[] = [];
  const org = d.chance(0.15) ? KEYLESS_ORG : ORG;
  docs.push({
    kind: "Organization",
    name: "org",
    spec: {
      organizationId: ORG,
      ...(d.chance(0.7) ? { name: d.pick(["Acme", "Acme Inc"]) } : {}),
      ...(d.chance(0.6)
        ? { privateEndpoints: d.some(["pe-1", "pe-2", "pe-3"]).map((id) => ({ id, description: id })) }
        : {}),
    },
  });
  for (const i of [1, 2]) {
    docs.push({
      kind: "ApiKey",
      name: `key-${i}`,
      spec: {
        organizationId: i === 2 ? org : ORG,
        keyId: KEYS[i - 1],
        name: d.pick(["ci", "deployer"]),
        roles: d.chance(0.7) ? ["admin"] : ["developer"],
        ...(d.chance(0.3) ? { expireAt: d.pick(["2020-01-01T00:00:00Z", "2099-01-01T00:00:00Z", ""]) } : {}),
      },
    });
  }
  for (const name of endpointNames) {
    docs.push({
      kind: "ReversePrivateEndpoint",
      name,
      spec: {
        organizationId: ORG,
        serviceId: SERVICE,
        description: `endpoint ${name}${d.chance(0.1) ? " (moved)" : ""}`,
        type: "VPC_ENDPOINT_SERVICE",
        vpcEndpointServiceName: `com.amazonaws.vpce.${name}`,
        ...(d.chance(0.1) ? { id: uuid(100 + endpointNames.indexOf(name)) } : {}),
      },
    });
  }
  const kafka = d.some(endpointNames);
  docs.push({
    kind: "DataPipe",
    name: "kafka-pipe",
    spec: {
      organizationId: ORG,
      serviceId: SERVICE,
      dataPipeId: defaultIds.kafkaPipeId,
      name: d.pick(["orders", "orders v2"]),
      source: {
        kafka: { iamRole: "arn:role", ...(kafka.length > 0 ? { reversePrivateEndpoints: kafka } : {}) },
      },
    },
  });
  docs.push({
    kind: "DataPipe",
    name: "pg-pipe",
    spec: {
      organizationId: org,
      serviceId: SERVICE,
      dataPipeId: defaultIds.postgresPipeId,
      source: {
        postgres: {
          host: "db",
          credentials: { username: "u", password: { fromEnv: "PG_PASSWORD" } },
          tableMappings: d.some(["a", "b", "c"]).map((t) => ({
            sourceSchemaName: "public",
            sourceTable: t,
            targetTable: t,
            ...(d.chance(0.2) ? { excludedColumns: ["x"] } : {}),
          })),
        },
      },
    },
  });
  const tiles = d.some(["t1", "t2", "t3"]).map((key, x) => ({
    key,
    name: `tile ${key}${d.chance(0.2) ? " renamed" : ""}`,
    x,
    y: 0,
    w: 1,
    h: 1,
    series: [{ type: "number", aggFn: "count" }],
    ...(d.chance(0.1) ? { id: hex(x) } : {}),
  }));
  docs.push({
    kind: "Dashboard",
    name: "board",
    spec: { dashboardId: defaultIds.dashboardId, name: "Board", tiles },
  });
  if (creates) docs.push(...created(d));
  return docs.filter(() => !d.chance(0.1)).map((doc) => (d.chance(0.05) ? suspended(doc) : doc));
}

/** A pipe and a dashboard driftless creates: their manifests name no id. */
function created(d: Draw): Doc[] {
  const pipe: Doc = {
    kind: "DataPipe",
    name: "new-pipe",
    spec: {
      organizationId: ORG,
      serviceId: SERVICE,
      name: "new pipe",
      source: {
        kafka: {
          type: "confluent",
          format: "JSONEachRow",
          brokers: "broker-1.example.com:9092",
          topics: d.pick(["payments", "refunds"]),
          authentication: "PLAIN",
          credentials: { username: "pipe", password: { fromEnv: "PG_PASSWORD" } },
        },
      },
      destination: {
        database: "analytics",
        table: "payments",
        managedTable: true,
        columns: [{ name: "id", type: "String" }],
      },
      fieldMappings: [{ sourceField: "payment_id", destinationField: "id" }],
    },
  };
  const tiles = d.some(["n1", "n2"]).map((key, x) => ({
    key,
    name: `new tile ${key}`,
    x,
    y: 0,
    w: 1,
    h: 1,
    series: [{ type: "number", aggFn: "count", sourceId: defaultIds.sourceIds[0] }],
  }));
  const board: Doc = { kind: "Dashboard", name: "new-board", spec: { name: "New board", tiles } };
  return [pipe, board].map((doc) => (d.chance(0.2) ? { ...doc, annotations: ORPHAN } : doc));
}

const ORPHAN = { "driftless/deletion-policy": "orphan" };

const suspended = (doc: Doc): Doc => ({ ...doc, annotations: { "driftless/suspend": "true" } });

/** The manifests file: each document on one line of JSON, which YAML reads as it is and is quick to write. */
function yamlOf(docs: readonly Doc[]): string {
  return docs
    .map(({ kind, name, spec, annotations }) =>
      JSON.stringify({
        apiVersion: "driftless/v1",
        kind,
        metadata: { name, ...(annotations ? { annotations } : {}) },
        spec,
      }),
    )
    .join("\n---\n");
}

/** A store in memory, as the file store behaves: each load is a copy of what was saved last. */
function memoryStore(state: State): StateStore & { saved(): State } {
  let saved = structuredClone(state);
  return {
    load: async () => structuredClone(saved),
    save: async (next) => {
      saved = structuredClone(next);
    },
    ensureWritable: async () => {},
    close: async () => {},
    saved: () => structuredClone(saved),
  };
}

/** The simulators of the cases: endpoints Ready at once, or Provisioning (a pipe then waits for them). */
const simulators: Simulator[] = [];
let platforms: Platform[] = [];

/** A fresh platform for a case: the simulator's fixture again, and no request recorded. */
function freshPlatform(d: Draw): { sim: Simulator; platform: Platform } {
  const index = d.int(simulators.length);
  const sim = simulators[index] as Simulator;
  Object.assign(sim.state, parseFixture(defaultFixture(), "the agreement test"));
  sim.clearRequests();
  return { sim, platform: platforms[index] as Platform };
}

/** What an operator changed in the records between the two applies: an unknown create, a spent allowance. */
function disturb(d: Draw, state: State, endpointNames: readonly string[]): void {
  for (const name of endpointNames) {
    const id = `ReversePrivateEndpoint/${name}`;
    const record = state.resources[id];
    if (!record || !d.chance(0.5)) continue;
    const { serverId: _lost, applied: _a, observed: _o, address: _d, ...rest } = record;
    const unknown: ResourceRecord = {
      ...rest,
      intent: { action: "create", startedAt: "2024-01-01T00:00:00Z" },
    };
    state.resources[id] = d.chance(0.5) ? { ...unknown, allowanceUsedAt: "2024-01-01T00:00:00Z" } : unknown;
  }
  for (const id of Object.keys(state.resources)) if (d.chance(0.1)) delete state.resources[id];
  if (d.chance(0.05)) state.suspended = { since: "2024-01-01T00:00:00Z" };
}

type Case = { yaml: string; allowCreate: string[]; reassert: boolean };
/** The first request of each resource that sends: method, path and body, as compared. */
type Sends = Map<string, { method: string; path: string; body: unknown }>;

const logger = createLogger("silent");
let dir: string;
let manifests: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "driftless-agreement-"));
  manifests = join(dir, "manifests");
  await import("node:fs/promises").then((fs) => fs.mkdir(manifests));
  const off = { management: false, observability: false } as const;
  for (const endpointReadyAfterMs of [0, 3_600_000])
    simulators.push(await startSimulator({ rateLimit: off, endpointReadyAfterMs }));
  // The published contract: creates and deletes of pipes and dashboards.
  simulators.push(await startSimulator({ rateLimit: off, endpointReadyAfterMs: 0, contract: "full" }));
  const unlimited = { requests: 1_000_000, windowMs: 1_000 };
  platforms = await Promise.all(
    simulators.map((sim) =>
      createPlatform(
        Config.parse({
          managementUrl: sim.managementUrl,
          observabilityUrl: sim.observabilityUrl,
          managementKeyId: { value: sim.credentials.managementKeyId },
          managementKeySecret: { value: sim.credentials.managementKeySecret },
          observabilityToken: { value: sim.credentials.observabilityToken },
        }),
        { logger, budgets: { management: unlimited, observability: unlimited } },
      ),
    ),
  );
});

afterAll(async () => {
  await Promise.all(platforms.map((platform) => platform.close()));
  await Promise.all(simulators.map((sim) => sim.close()));
  await rm(dir, { recursive: true, force: true });
});

const env = (d: Draw): Record<string, string> =>
  d.chance(0.9) ? { PG_PASSWORD: d.pick(["one", "two"]) } : {};
const managementKeyId = (organizationId: string) => {
  if (organizationId === KEYLESS_ORG)
    throw new ConfigError(`no management key for organization ${organizationId}`);
  return defaultIds.managementKeyId;
};

/** Applies `docs` from the empty state: the records an earlier apply left. */
async function earlierState(d: Draw, docs: readonly Doc[], platform: Platform): Promise<State> {
  await writeFile(join(manifests, "m.yaml"), yamlOf(docs));
  const store = memoryStore({ version: 1, salt: "salt", resources: {} });
  const secrets = { env: env(d), secretsDir: dir };
  await createReconciler({ manifests, store, send: platform.send, secrets, logger, managementKeyId }).pass({
    trigger: "cli",
  });
  return store.saved();
}

/** What `plan` lists as sent: the request of each resource whose first step sends. */
function plannedSends(resources: readonly PlanView[]): Sends {
  const planned: Sends = new Map();
  for (const view of resources) {
    if (view.outcome !== "send" || !view.request) continue;
    const { method, path, body } = view.request;
    planned.set(`${view.kind}/${view.name}`, { method, path, body });
  }
  return planned;
}

/**
 * What the simulator received from the apply: the first request of each resource, its path or, for an
 * endpoint's create, its description telling whose it is.
 */
function receivedSends(requests: readonly RecordedRequest[], docs: readonly Doc[], before: State): Sends {
  const owners = new Map<string, string>();
  // A delete's path is its record's address, as its kind deletes it.
  for (const [id, record] of Object.entries(before.resources)) {
    const remover = isKind(record.kind) ? kindOf(record.kind).delete : undefined;
    const request =
      remover && !isNone(remover) && record.address ? remover.request(record.address) : undefined;
    if (request) owners.set(expandTemplate(ROUTES[request.route].template, request.params), id);
  }
  for (const doc of docs) {
    const spec = doc.spec;
    const id = `${doc.kind}/${doc.name}`;
    if (doc.kind === "Organization") owners.set(`/v1/organizations/${spec.organizationId}`, id);
    if (doc.kind === "ApiKey") owners.set(`/v1/organizations/${spec.organizationId}/keys/${spec.keyId}`, id);
    if (doc.kind === "DataPipe")
      owners.set(
        `/v1/organizations/${spec.organizationId}/services/${SERVICE}/datapipes/${spec.dataPipeId}`,
        id,
      );
    if (doc.kind === "Dashboard") owners.set(`/api/v2/dashboards/${spec.dashboardId}`, id);
    if (doc.kind === "ReversePrivateEndpoint") owners.set(String(spec.description), id);
    // A create's object is known by its name (an endpoint's by its description).
    if (doc.kind === "DataPipe" && spec.dataPipeId === undefined) owners.set(String(spec.name), id);
    if (doc.kind === "Dashboard" && spec.dashboardId === undefined) owners.set(String(spec.name), id);
  }
  const received: Sends = new Map();
  for (const { method, path, body } of requests) {
    if (method === "GET") continue;
    const named = body as { description?: unknown; name?: unknown } | undefined;
    const description = method === "POST" ? (named?.description ?? named?.name) : undefined;
    const owner =
      owners.get(description === undefined ? path : String(description)) ?? `(unknown: ${method} ${path})`;
    if (!received.has(owner)) received.set(owner, { method, path, body });
  }
  return received;
}

/**
 * The planned sends as the wire shows them: each made-up id as the id the platform assigned (the
 * records after the apply know it), each masked secret as the value sent.
 */
function onTheWire(planned: Sends, records: State["resources"], secrets: Record<string, string>): Sends {
  const ids = new Map<string, string>();
  for (const [id, record] of Object.entries(records))
    if (record.serverId) ids.set(`<id of ${id}>`, record.serverId);
  const values = Object.values(secrets);
  const wire = (value: unknown): unknown => {
    if (typeof value === "string") {
      if (ids.has(value)) return ids.get(value);
      // The only secret of the estate: a masked secret is the value of PG_PASSWORD.
      if (value === "(changed)" || value === "(unchanged)") return values[0] ?? value;
      return value;
    }
    if (Array.isArray(value)) return value.map(wire);
    if (value && typeof value === "object")
      return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, wire(child)]));
    return value;
  };
  return new Map([...planned].map(([id, send]) => [id, { ...send, body: wire(send.body) }]));
}

/** What `plan` says is sent, and what the simulator then received from the apply, by resource. */
async function planAndApply(seed: number): Promise<{ planned: Sends; applied: Sends; shown: Case }> {
  const d = draws(seed);
  const { sim, platform } = freshPlatform(d);
  const names = d.some(["e1", "e2"]);
  const creates = sim.contract === "full";
  const state = await earlierState(d, estate(d, names, creates), platform);
  disturb(d, state, names);
  const docs = estate(d, [...names, ...(d.chance(0.5) ? ["e3"] : [])], creates);
  const yaml = yamlOf(docs);
  await writeFile(join(manifests, "m.yaml"), yaml);
  const ids = docs
    .filter((doc) => doc.kind === "ReversePrivateEndpoint")
    .map((doc) => `ReversePrivateEndpoint/${doc.name}`);
  const allowCreate = d.some(ids);
  const reassert = d.chance(0.2);
  const secrets = { env: env(d), secretsDir: dir };

  const report = await planPass(
    { manifests, store: memoryStore(state), secrets, logger, managementKeyId },
    { allowCreate, reassert },
  );
  sim.clearRequests();
  const store = memoryStore(state);
  await createReconciler({ manifests, store, send: platform.send, secrets, logger, managementKeyId }).pass({
    trigger: "cli",
    allowCreate,
    reassert,
  });
  const planned = onTheWire(plannedSends(report.resources), store.saved().resources, secrets.env);
  return {
    planned,
    applied: receivedSends(sim.requests, docs, state),
    shown: { yaml, allowCreate, reassert },
  };
}

/** Where plan and apply part: a resource only one of them sends, or sends differently first. */
function disagreements(planned: Sends, applied: Sends): string[] {
  const ids = [...new Set([...planned.keys(), ...applied.keys()])].sort();
  return ids.flatMap((id) => {
    const [plan, apply] = [planned.get(id), applied.get(id)];
    if (JSON.stringify(plan) === JSON.stringify(apply)) return [];
    const shown = (send: Sends extends Map<string, infer S> ? S | undefined : never) =>
      send ? `${send.method} ${send.path} ${JSON.stringify(send.body)}` : "nothing";
    return [`${id}: plan sends ${shown(plan)}; the simulator received ${shown(apply)}`];
  });
}

describe("plan and apply agree", () => {
  it(`on ${ONLY === undefined ? CASES : 1} generated estates: plan's sends are what the simulator receives, first request for first request`, async () => {
    const seeds = ONLY === undefined ? Array.from({ length: CASES }, (_, i) => i + 1) : [ONLY];
    const compared = new Set<string>();
    for (const seed of seeds) {
      const { planned, applied, shown } = await planAndApply(seed);
      for (const [id, { method }] of applied) compared.add(`${method} ${id.split("/")[0]}`);

      const found = disagreements(planned, applied);

      const replay = `AGREEMENT_SEED=${seed}; allowCreate ${JSON.stringify(shown.allowCreate)}, reassert ${shown.reassert}; manifests:\n${shown.yaml}`;
      expect(found, replay).toEqual([]);
    }
    // The generated cases reach every create and delete driftless sends here.
    if (ONLY === undefined)
      expect([...compared].sort()).toEqual(
        expect.arrayContaining([
          "DELETE Dashboard",
          "DELETE DataPipe",
          "DELETE ReversePrivateEndpoint",
          "POST Dashboard",
          "POST DataPipe",
          "POST ReversePrivateEndpoint",
        ]),
      );
  }, 600_000);
});
