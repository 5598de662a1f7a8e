import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import {
  defaultIds as ids,
  type RecordedRequest,
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "../../src/simulator/index.js";
import { driftlessAsync } from "./cli.js";
import { mskEndpoint } from "./manifests.js";
import { platformEnv } from "./platform-env.js";

/**
 * The arrangement of the lifecycle tests (creates, deletes, the guard, a pipe's state): the simulator
 * serving the published contract on port 0, a folder of manifests the test writes and removes, and the
 * built CLI pointed at both with a state folder and a key-secrets folder of its own.
 */

/** One `apply -o json` (or `plan -o json`) as the tests read it: exit code, document, text. */
export type CliRun = {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The JSON document printed (apply's statuses, plan's resources); {} when none was printed. */
  doc: CliDocument;
};

export type CliDocument = {
  statuses?: { kind: string; name: string; status: string; message?: string; next?: string }[];
  resources?: { kind: string; name: string; outcome: string; action?: string; reason: string }[];
  exitCode?: number;
};

export type LifecycleCli = {
  sim: Simulator;
  root: string;
  env: Record<string, string>;
  /** Writes (or replaces) a manifest file. */
  write(file: string, yaml: string): Promise<void>;
  /** Removes a manifest file: its manifest leaves git. */
  remove(...files: string[]): Promise<void>;
  /** `driftless apply -o json ...args`, with `env` over the arrangement's. */
  apply(args?: string[], env?: Record<string, string>): Promise<CliRun>;
  /** `driftless plan -o json ...args`. */
  plan(args?: string[], env?: Record<string, string>): Promise<CliRun>;
  /** The writes the simulator received since the last clear, as `METHOD route`, in order. */
  writes(): string[];
  /** The requests the simulator received of `method` on `route`, answered or not. */
  sent(method: string, route: string): RecordedRequest[];
};

const off = { management: false, observability: false } as const;

/** Registers beforeEach/afterEach hooks and returns the context they fill. Needs `dist/` built. */
export function useLifecycleCli(options: SimulatorOptions = {}): LifecycleCli {
  const context = {} as LifecycleCli;
  const run = async (command: string, args: string[], env: Record<string, string>): Promise<CliRun> => {
    const result = await driftlessAsync([command, "-o", "json", ...args], { ...context.env, ...env });
    let doc: CliDocument = {};
    try {
      doc = JSON.parse(result.stdout) as CliDocument;
    } catch {
      // Not a document (a usage error): the test reads stdout and stderr.
    }
    return { ...result, doc };
  };
  beforeEach(async () => {
    context.sim = await startSimulator({
      contract: "full",
      rateLimit: off,
      endpointReadyAfterMs: 0,
      ...options,
    });
    context.root = await mkdtemp(join(tmpdir(), "driftless-lifecycle-"));
    await mkdir(join(context.root, "manifests"));
    context.env = {
      ...platformEnv(context.sim),
      DRIFTLESS_MANIFESTS: join(context.root, "manifests"),
      DRIFTLESS_STATE_DIR: join(context.root, "state"),
      DRIFTLESS_KEY_SECRETS_DIR: join(context.root, "key-secrets"),
      KAFKA_PASSWORD: "kafka-password-for-tests",
    };
  });
  afterEach(async () => {
    await context.sim.close();
    await rm(context.root, { recursive: true, force: true });
  });
  context.write = (file, yaml) => writeFile(join(context.root, "manifests", file), yaml);
  context.remove = async (...files) => {
    for (const file of files) await rm(join(context.root, "manifests", file));
  };
  context.apply = (args = [], env = {}) => run("apply", args, env);
  context.plan = (args = [], env = {}) => run("plan", args, env);
  context.writes = () =>
    context.sim.requests.filter((r) => r.method !== "GET").map((r) => `${r.method} ${r.route}`);
  context.sent = (method, route) =>
    context.sim.requests.filter((r) => r.method === method && r.route === route);
  return context;
}

/** `Kind/name Status` of each status of an apply, in its order. */
export const statusLines = (run: CliRun): string[] =>
  (run.doc.statuses ?? []).map((s) => `${s.kind}/${s.name} ${s.status}`);

/** The status of `Kind/name` in an apply's document. */
export const statusOf = (run: CliRun, id: string) =>
  (run.doc.statuses ?? []).find((s) => `${s.kind}/${s.name}` === id);

/** The routes of the published contract the lifecycle tests name. */
export const ROUTE = {
  keys: "/v1/organizations/{organizationId}/keys",
  key: "/v1/organizations/{organizationId}/keys/{keyId}",
  pipes: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes",
  pipe: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}",
  pipeState: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}/state",
  pipeScaling: "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}/scaling",
  endpoints: "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints",
  endpoint:
    "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints/{reversePrivateEndpointId}",
  dashboards: "/api/v2/dashboards",
  dashboard: "/api/v2/dashboards/{id}",
} as const;

/** Indented `metadata.annotations` lines, or nothing. */
const annotationsOf = (annotations: Record<string, string>) => {
  const entries = Object.entries(annotations);
  return entries.length === 0
    ? ""
    : `  annotations:\n${entries.map(([k, v]) => `    ${k}: ${v}\n`).join("")}`;
};

export type ManifestOptions = { annotations?: Record<string, string>; extra?: string };

/** An ApiKey that driftless creates (no keyId), its pair written to the file `name`. */
export const createdKey = (name: string, options: ManifestOptions = {}) => `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ${name}
${annotationsOf(options.annotations ?? {})}spec:
  organizationId: ${ids.organizationId}
  name: ${name}
  roles: [developer]
  secretTarget: { file: ${name} }
${options.extra ?? ""}`;

/** An ApiKey adopting the existing key `keyId` (default: the fixture's CI key). */
export const adoptedKey = (
  name: string,
  keyId: string = ids.ciDeployerKeyId,
  options: ManifestOptions = {},
) =>
  `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ${name}
${annotationsOf(options.annotations ?? {})}spec:
  organizationId: ${ids.organizationId}
  keyId: ${keyId}
  name: ${name}
${options.extra ?? ""}`;

export type PipeOptions = ManifestOptions & {
  /** Manifest names of the endpoints it reads through. */
  endpoints?: string[];
  /** Server ids of the endpoints it reads through. */
  endpointIds?: string[];
  topics?: string;
  /** More spec lines, indented as spec fields. */
  spec?: string;
};

/** A Kafka DataPipe that driftless creates (no dataPipeId). */
export const createdPipe = (name: string, options: PipeOptions = {}) => `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: ${name}
${annotationsOf(options.annotations ?? {})}spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  name: ${name}
  source:
    kafka:
      type: confluent
      format: JSONEachRow
      brokers: broker-1.example.com:9092
      topics: ${options.topics ?? name}
      authentication: PLAIN
      credentials: { username: pipe, password: { fromEnv: KAFKA_PASSWORD } }
${options.endpoints ? `      reversePrivateEndpoints: [${options.endpoints.join(", ")}]\n` : ""}${options.endpointIds ? `      reversePrivateEndpointIds: [${options.endpointIds.join(", ")}]\n` : ""}  destination:
    database: analytics
    table: ${name.replaceAll("-", "_")}
    managedTable: true
    columns: [{ name: id, type: String }]
  fieldMappings: [{ sourceField: id, destinationField: id }]
${options.spec ?? ""}`;

/** A Dashboard that driftless creates (no dashboardId), with one tile. */
export const createdBoard = (name: string, options: ManifestOptions & { title?: string } = {}) =>
  `apiVersion: driftless/v1
kind: Dashboard
metadata:
  name: ${name}
${annotationsOf(options.annotations ?? {})}spec:
  name: ${options.title ?? name}
  tiles:
    - key: volume
      name: Volume
      x: 0
      y: 0
      w: 6
      h: 4
      series:
        - { type: time, aggFn: count, where: "service:${name}", whereLanguage: lucene, groupBy: [], sourceId: ${ids.sourceIds[0]} }
`;

/** A ReversePrivateEndpoint that driftless creates (endpoints have no id in their manifest). */
export const createdEndpoint = (name: string, options: ManifestOptions = {}) =>
  mskEndpoint(name, { cluster: name, ...(options.annotations ? { annotations: options.annotations } : {}) });
