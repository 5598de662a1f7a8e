import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createPlatform, keySecretsOf, type PlatformDeps } from "../../src/commands/platform.js";
import { Config } from "../../src/config.js";
import { createRead } from "../../src/platform/client.js";
import { createReconciler, type PlanReport, planPass } from "../../src/reconcile/engine.js";
import type { ApplyOptions, PassResult } from "../../src/reconcile/types.js";
import type { SimulatorOptions } from "../../src/simulator/index.js";
import {
  defaultIds,
  type RecordedRequest,
  type Simulator,
  startSimulator,
} from "../../src/simulator/index.js";
import { createFileStore } from "../../src/state/file-store.js";
import type { State, StateStore } from "../../src/state/store.js";
import { createLogger } from "../../src/telemetry/logger.js";

/**
 * A simulator on 127.0.0.1 port 0, temporary manifests / state / secrets folders, and the engine wired
 * to them the way the apply command wires it. Each apply builds a fresh store and fresh clients, so
 * every apply is what a restarted process would do.
 */
export type EngineWorld = {
  sim: Simulator;
  manifests: string;
  stateDir: string;
  secretsDir: string;
  /** Every log line written by the engine and the clients, as text. */
  logs: string[];
  env: Record<string, string>;
  config: Config;
  write(file: string, yaml: string): Promise<void>;
  remove(file: string): Promise<void>;
  /** `wiring`: another platform URL (a scripted test server), a store wrapped to misbehave. */
  apply(options?: Partial<ApplyOptions>, wiring?: Wiring): Promise<PassResult>;
  /** `reads`: plan with reads on (the live objects read through a platform client). */
  plan(options?: { allowCreate?: string[]; reads?: boolean }): Promise<PlanReport>;
  state(): Promise<State>;
  /** The write requests (anything but GET) the simulator received since the last clear. */
  writes(): RecordedRequest[];
  /** Every file under the state folder, as text. */
  stateFolderText(): Promise<string>;
  close(): Promise<void>;
};

export type Wiring = {
  config?: Partial<Config>;
  store?: (store: StateStore) => StateStore;
  /** Resources handled at once (the engine's default when unset). */
  concurrency?: number;
  /** Reads on: the engine reads live objects where a plan needs them. */
  reads?: boolean;
};

export const ids = defaultIds;

export async function startEngineWorld(
  options: { simulator?: SimulatorOptions; platform?: Partial<PlatformDeps> } = {},
): Promise<EngineWorld> {
  const sim = await startSimulator({ endpointReadyAfterMs: 0, ...options.simulator });
  const root = await mkdtemp(join(tmpdir(), "driftless-engine-"));
  const manifests = join(root, "manifests");
  const stateDir = join(root, "state");
  const secretsDir = join(root, "secrets");
  await Promise.all(
    [manifests, secretsDir].map((dir) => import("node:fs/promises").then((fs) => fs.mkdir(dir))),
  );
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const logger = createLogger("debug", destination);
  const env: Record<string, string> = {};
  const config = Config.parse({
    manifests,
    stateDir,
    secretsDir,
    managementUrl: sim.managementUrl,
    observabilityUrl: sim.observabilityUrl,
    managementKeyId: { value: sim.credentials.managementKeyId },
    managementKeySecret: { value: sim.credentials.managementKeySecret },
    observabilityToken: { value: sim.credentials.observabilityToken },
  });

  const world: EngineWorld = {
    sim,
    manifests,
    stateDir,
    secretsDir,
    logs,
    env,
    config,
    write: (file, yaml) => writeFile(join(manifests, file), yaml),
    remove: (file) => rm(join(manifests, file)),
    async apply(applyOptions = {}, wiring = {}) {
      const fileStore = createFileStore(stateDir, { logger });
      const store = wiring.store ? wiring.store(fileStore) : fileStore;
      const wired = wiring.config ? Config.parse({ ...config, ...wiring.config }) : config;
      const platform = await createPlatform(wired, { logger, ...options.platform });
      try {
        const reconciler = createReconciler({
          manifests,
          store,
          send: platform.send,
          ...(wiring.reads ? { read: createRead(platform.client), readDrift: true } : {}),
          secrets: { env, secretsDir },
          logger,
          managementKeyId: platform.managementKeyId,
          keySecrets: keySecretsOf(wired),
          ...(wiring.concurrency ? { concurrency: wiring.concurrency } : {}),
        });
        return await reconciler.pass({ trigger: "cli", ...applyOptions });
      } finally {
        await platform.close();
        await store.close();
      }
    },
    async plan({ reads, ...planOptions } = {}) {
      const store = createFileStore(stateDir, { logger, readOnly: true });
      const platform = reads ? await createPlatform(config, { logger, ...options.platform }) : undefined;
      try {
        return await planPass(
          {
            manifests,
            store,
            secrets: { env, secretsDir },
            logger,
            managementKeyId: () => sim.credentials.managementKeyId,
            ...(platform ? { read: createRead(platform.client) } : {}),
          },
          { ...planOptions, ...(platform ? { readDrift: true } : {}) },
        );
      } finally {
        await platform?.close();
        await store.close();
      }
    },
    async state() {
      // As the next process would load it: the snapshot with its journal laid over.
      const store = createFileStore(stateDir, { logger, readOnly: true });
      try {
        return await store.load();
      } finally {
        await store.close();
      }
    },
    writes: () => sim.requests.filter((r) => r.method !== "GET"),
    async stateFolderText() {
      const files = await readdir(stateDir).catch(() => [] as string[]);
      const texts = await Promise.all(files.map((f) => readFile(join(stateDir, f), "utf8").catch(() => "")));
      return texts.join("\n");
    },
    async close() {
      await sim.close();
      await rm(root, { recursive: true, force: true });
    },
  };
  return world;
}

export const header = (kind: string, name: string) =>
  `apiVersion: driftless/v1\nkind: ${kind}\nmetadata:\n  name: ${name}\nspec:\n`;

/** The Organization "acme" whose desired private endpoints are `entries` (ids; descriptions "<id> desc"). */
export const organizationWith = (entries: string[]) =>
  `${header("Organization", "acme")}  organizationId: ${ids.organizationId}
  name: Acme Analytics
  privateEndpoints:${entries.length === 0 ? " []" : ""}
${entries.map((id) => `    - {id: ${id}, description: "${id} desc"}`).join("\n")}
`;

/** The postgres DataPipe "customers" whose desired table mappings are `tables` (public.<t> → <t>). */
export const postgresPipeWith = (tables: string[]) =>
  `${header("DataPipe", "customers")}  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.postgresPipeId}
  name: customers from postgres
  source:
    postgres:
      tableMappings:${tables.length === 0 ? " []" : ""}
${tables.map((t) => `        - {sourceSchemaName: public, sourceTable: ${t}, targetTable: ${t}}`).join("\n")}
`;
