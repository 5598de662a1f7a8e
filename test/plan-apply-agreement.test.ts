import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../src/errors.js";
import type { PlannedRequest } from "../src/plan/types.js";
import type { PlanView } from "../src/plan/view.js";
import { createReconciler, planPass } from "../src/reconcile/engine.js";
import type { Sender } from "../src/reconcile/send.js";
import { seededRandom } from "../src/simulator/faults.js";
import type { ResourceRecord, State, StateStore } from "../src/state/store.js";
import { createLogger } from "../src/telemetry/logger.js";

/**
 * `plan` is `apply` without sending: over random manifests, records and operator options, what the
 * plan lists as "send" is exactly what the apply then sends (which resources, and the first request of
 * each). The platform is a fake sender that answers every request as the platform would, with ids of
 * its own; the manifests are real files, the state an in-memory store. AGREEMENT_SEED=<n> replays one
 * case, AGREEMENT_CASES=<n> runs more.
 */

const CASES = Number(process.env.AGREEMENT_CASES ?? 2_000);
const ONLY = process.env.AGREEMENT_SEED === undefined ? undefined : Number(process.env.AGREEMENT_SEED);

const ORG = "9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f";
/** An organization driftless has no key for: its resources fail and send nothing. */
const KEYLESS_ORG = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";
const SERVICE = "2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7";
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

/** One variant of a small estate: every kind that sends, with the choices a change may touch. */
function estate(d: Draw, endpointNames: string[]): Doc[] {
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
        keyId: uuid(i),
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
      dataPipeId: uuid(10),
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
      dataPipeId: uuid(11),
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
  docs.push({ kind: "Dashboard", name: "board", spec: { dashboardId: hex(99), name: "Board", tiles } });
  return docs.filter(() => !d.chance(0.1)).map((doc) => (d.chance(0.05) ? suspended(doc) : doc));
}

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

/**
 * The platform as a fake: every request answered, an endpoint's create with its own id (named after
 * the endpoint, as the plan's made-up id is) and a status that is not always Ready, a dashboard's new
 * tiles with new ids. It records every request.
 */
function fakePlatform(d: Draw): { send: Sender; requests: PlannedRequest[] } {
  const requests: PlannedRequest[] = [];
  let tiles = 0;
  const send: Sender = async (request) => {
    requests.push(request);
    if (request.route === "createReversePrivateEndpoint") {
      const name = String(request.body.description)
        .replace(/^endpoint /, "")
        .replace(/ \(moved\)$/, "");
      return {
        result: { id: `<id of ReversePrivateEndpoint/${name}>`, status: d.pick(["Ready", "Provisioning"]) },
      };
    }
    if (request.route === "putDashboard") {
      return {
        result: {
          ...request.body,
          tiles: request.body.tiles.map((t) => ({ ...t, id: t.id || `tile-${++tiles}` })),
        },
      };
    }
    return { result: {} };
  };
  return { send, requests };
}

/** What an operator changed in the records between the two applies: an unknown create, a spent allowance. */
function disturb(d: Draw, state: State, endpointNames: readonly string[]): void {
  for (const name of endpointNames) {
    const id = `ReversePrivateEndpoint/${name}`;
    const record = state.resources[id];
    if (!record || !d.chance(0.5)) continue;
    const { serverId: _lost, applied: _a, observed: _o, ...rest } = record;
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
type Sends = Map<string, PlanView["request"]>;

const logger = createLogger("silent");
let dir: string;
let manifests: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "driftless-agreement-"));
  manifests = join(dir, "manifests");
  await import("node:fs/promises").then((fs) => fs.mkdir(manifests));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const env = (d: Draw): Record<string, string> =>
  d.chance(0.9) ? { PG_PASSWORD: d.pick(["one", "two"]) } : {};
const managementKeyId = (organizationId: string) => {
  if (organizationId === KEYLESS_ORG)
    throw new ConfigError(`no management key for organization ${organizationId}`);
  return uuid(1);
};

/** Applies `docs` from the empty state with a fake platform: the records an earlier apply left. */
async function earlierState(d: Draw, docs: readonly Doc[]): Promise<State> {
  await writeFile(join(manifests, "m.yaml"), yamlOf(docs));
  const store = memoryStore({ version: 1, salt: "salt", resources: {} });
  const secrets = { env: env(d), secretsDir: dir };
  await createReconciler({
    manifests,
    store,
    send: fakePlatform(d).send,
    secrets,
    logger,
    managementKeyId,
  }).pass({
    trigger: "cli",
  });
  return store.saved();
}

/** The first request of each resource that `plan` says sends, and that `apply` sent. */
async function planAndApply(seed: number): Promise<{ planned: Sends; applied: Sends; shown: Case }> {
  const d = draws(seed);
  const names = d.some(["e1", "e2"]);
  const state = await earlierState(d, estate(d, names));
  disturb(d, state, names);
  const docs = estate(d, [...names, ...(d.chance(0.5) ? ["e3"] : [])]);
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
  const planned: Sends = new Map();
  for (const view of report.resources) {
    if (view.outcome === "send" && view.request) planned.set(`${view.kind}/${view.name}`, view.request);
  }
  const applied: Sends = new Map();
  const platform = fakePlatform(d);
  await createReconciler({
    manifests,
    store: memoryStore(state),
    send: platform.send,
    secrets,
    logger,
    managementKeyId,
    onResource: ({ status, sent }) => {
      const first = sent[0]?.request;
      if (first) applied.set(`${status.kind}/${status.name}`, first);
    },
  }).pass({ trigger: "cli", allowCreate, reassert });
  return { planned, applied, shown: { yaml, allowCreate, reassert } };
}

/** Where plan and apply part: a resource only one of them sends, or sends differently first. */
function disagreements(planned: Sends, applied: Sends): string[] {
  const ids = [...new Set([...planned.keys(), ...applied.keys()])].sort();
  return ids.flatMap((id) => {
    const [plan, apply] = [planned.get(id), applied.get(id)];
    if (JSON.stringify(plan) === JSON.stringify(apply)) return [];
    const shown = (request: PlanView["request"]) =>
      request ? `${request.method} ${request.path} ${JSON.stringify(request.body)}` : "nothing";
    return [`${id}: plan sends ${shown(plan)}; apply sends ${shown(apply)}`];
  });
}

describe("plan and apply agree", () => {
  it(`on ${ONLY === undefined ? CASES : 1} generated estates: plan's sends are apply's, first request for first request`, async () => {
    const seeds = ONLY === undefined ? Array.from({ length: CASES }, (_, i) => i + 1) : [ONLY];
    for (const seed of seeds) {
      const { planned, applied, shown } = await planAndApply(seed);

      const found = disagreements(planned, applied);

      const replay = `AGREEMENT_SEED=${seed}; allowCreate ${JSON.stringify(shown.allowCreate)}, reassert ${shown.reassert}; manifests:\n${shown.yaml}`;
      expect(found, replay).toEqual([]);
    }
  }, 600_000);
});
