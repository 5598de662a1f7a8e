import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { KubeConfig } from "@kubernetes/client-node";
import { defaultIds as ids, type Simulator } from "../../../src/simulator/index.js";
import { createFileStore } from "../../../src/state/file-store.js";
import {
  createKubernetesStateStore,
  DEFAULT_SECRET_NAME,
  SHARD_COUNT,
  shardName,
} from "../../../src/state/kubernetes-store.js";
import type { State } from "../../../src/state/store.js";
import { createLogger } from "../../../src/telemetry/logger.js";
import type { LogLine } from "../daemon-process.js";
import type { FakeKubernetes } from "../fake-kubernetes.js";
import type { StateFacts } from "./edits.js";
import type { PlatformLedger } from "./lifecycle.js";
import { liveTiles, owned, type World } from "./world.js";

/**
 * What must hold after every step of the soak, whatever was injected: the state loads through the
 * store's own load (journal or shards included) and forgets no object driftless created; a tile id,
 * once saved, stays the tile's in the state and on the platform; no planted secret appears in anything
 * driftless wrote or served. (Creates and deletes: lifecycle.ts.) Each check throws an Error saying
 * what broke.
 */

export type StateSource =
  | { store: "file"; dir: string }
  | { store: "kubernetes"; fake: FakeKubernetes; namespace: string };

const silent = createLogger("silent");

/** The state as a new reader loads it, through the project's own load: a StateError is a broken invariant. */
export async function loadState(source: StateSource): Promise<State> {
  const store =
    source.store === "file"
      ? createFileStore(source.dir, { readOnly: true })
      : createKubernetesStateStore({
          kubeConfig: kubeConfigOf(source.fake),
          namespace: source.namespace,
          readOnly: true,
          logger: silent,
        });
  try {
    return await store.load();
  } catch (error) {
    throw new Error(`the state does not load: ${(error as Error).message}`, { cause: error });
  } finally {
    await store.close();
  }
}

function kubeConfigOf(fake: FakeKubernetes): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(fake.kubeconfigPath);
  return kubeConfig;
}

export function factsOf(state: State): StateFacts {
  return { records: state.resources as StateFacts["records"] };
}

/**
 * What the state must never forget, since a new process would then create again or send a tile
 * without its id: each object the platform holds of a manifest object driftless creates (read before
 * the state was loaded) has a record, under one of its manifest's names, with its id or with the
 * create's intent; each tile id learned is held under one of the tile's keys by a record of one of the
 * dashboard's names. Returns the problems (a Kubernetes load is no snapshot: one that ran beside a save
 * may miss a record moving between shards, so the caller loads again before it calls a miss lost).
 */
export function forgotten(
  held: ReadonlyMap<string, string>,
  world: World,
  state: State,
  learned: ReadonlyMap<number, string>,
): string[] {
  const problems: string[] = [];
  for (const o of owned(world)) {
    const id = held.get(o.identity);
    if (!id) continue;
    const records = o.names.flatMap((name) => state.resources[`${o.kind}/${name}`] ?? []);
    if (!records.some((r) => r.serverId === id || r.intent)) {
      problems.push(
        `the platform holds ${o.kind} ${id} of "${o.identity}", but the state has no record of it under ${o.names.join(", ")} (a new process would create it again)`,
      );
    }
  }
  const records = world.dashboardNames.flatMap((name) => state.resources[`Dashboard/${name}`] ?? []);
  for (const t of liveTiles(world)) {
    const id = learned.get(t.number);
    if (!id || records.some((r) => t.keys.some((key) => r.tileIds?.[key] === id))) continue;
    problems.push(
      `the state no longer holds tile "${t.name}"'s id ${id} under any of its keys (${t.keys.join(", ")})`,
    );
  }
  return problems;
}

/** The id of the object the platform holds for each object the manifests create, by its identity. */
export function heldObjects(ledger: PlatformLedger, world: World): Map<string, string> {
  const held = new Map<string, string>();
  for (const o of owned(world)) {
    const found = ledger.held(o.collection, o.identity)[0];
    if (found) held.set(o.identity, found.id);
  }
  return held;
}

/**
 * A tile keeps its id: the first id the state saves for it (or the id it was adopted with) is the only
 * one the state ever holds for any of its keys, and the only one the platform shows for its name, while
 * the manifest keeps the tile. The alert on the watched tile is never deleted (a tile sent without its
 * id would have been). `learned` holds the ids learned so far, by tile number.
 */
export function checkTileIds(sim: Simulator, world: World, state: State, learned: Map<number, string>) {
  const records = world.dashboardNames.flatMap((name) => state.resources[`Dashboard/${name}`] ?? []);
  const platform = sim.state.dashboards.find((d) => d.id === ids.dashboardId);
  for (const t of liveTiles(world)) {
    for (const record of records) {
      for (const key of t.keys) {
        const id = record.tileIds?.[key];
        if (!id) continue;
        const known = learned.get(t.number) ?? t.adoptedId;
        if (known && id !== known) {
          throw new Error(
            `tile "${t.name}" had id ${known}; the state's record ${record.name} now holds ${id} for its key ${key}`,
          );
        }
        learned.set(t.number, id);
      }
    }
    const known = learned.get(t.number) ?? t.adoptedId;
    const shown = platform?.tiles.find((x) => x.name === t.name);
    if (known && shown && shown.id !== known) {
      throw new Error(`tile "${t.name}" had id ${known}; the platform now shows it as ${shown.id}`);
    }
  }
  if (!sim.state.alerts.some((a) => a.id === ids.alertId)) {
    throw new Error(`the alert ${ids.alertId} on tile ${ids.tileIds[0]} was deleted: its tile lost its id`);
  }
}

/** JavaScript's own errors: a bug of driftless's, never the world's (a platform, a store, a file). */
const BUG = /^(RangeError|TypeError|ReferenceError|SyntaxError|EvalError|URIError|AggregateError|Error)$/;

/** What may make a whole pass fail: the state store (a Kubernetes fault), a revision swapped under it. */
const PASS_MAY_FAIL = new Set(["StateError", "SupersededError"]);

/**
 * The daemon's failures are the world's, never its own: no answer of the platform, however deep, long,
 * reordered or wrong-typed, makes an HTTP answer a 500, a pass fail (but for its state store), or any
 * line carry a JavaScript error of its own (a stack overflow, a TypeError).
 */
export function checkFailures(lines: readonly LogLine[]): void {
  for (const line of lines) {
    const err = line.err as { type?: string; message?: string } | undefined;
    const said = `${line.msg}: ${err?.type ?? ""} ${err?.message ?? ""}`.slice(0, 600);
    if (line.msg === "http handler failed")
      throw new Error(`the daemon answered an HTTP request 500 (${said})`);
    if (line.msg === "pass failed" && !PASS_MAY_FAIL.has(err?.type ?? "")) {
      throw new Error(`a pass failed for something else than its state store (${said})`);
    }
    if (err?.type && BUG.test(err.type)) throw new Error(`the daemon logged an error of its own (${said})`);
  }
}

/** Throws when any of `secrets` occurs in `text` (named `where` in the message). */
export function checkNoSecret(where: string, text: string, secrets: Map<string, string>) {
  for (const [name, value] of secrets) {
    const at = text.indexOf(value);
    if (at >= 0) {
      throw new Error(
        `the ${name} appears in ${where}: …${text.slice(Math.max(0, at - 200), at + value.length + 50)}…`,
      );
    }
  }
}

/** Every text the state store holds: the folder's files, or each Secret with its data decoded. */
export async function stateTexts(source: StateSource): Promise<Array<[string, string]>> {
  if (source.store === "file") {
    const names = await readdir(source.dir).catch(() => [] as string[]);
    const texts: Array<[string, string]> = [];
    for (const name of names) {
      const text = await readFile(join(source.dir, name), "utf8").catch(() => "");
      texts.push([join(source.dir, name), text]);
    }
    return texts;
  }
  const names = [
    DEFAULT_SECRET_NAME,
    ...Array.from({ length: SHARD_COUNT }, (_, i) => shardName(DEFAULT_SECRET_NAME, i)),
  ];
  return names.flatMap((name): Array<[string, string]> => {
    const secret = source.fake.get("secrets", source.namespace, name);
    if (!secret) return [];
    const decoded = Object.values(secret.data ?? {}).map((value) => {
      const bytes = Buffer.from(value, "base64");
      return bytes[0] === 0x1f && bytes[1] === 0x8b
        ? gunzipSync(bytes).toString("utf8")
        : bytes.toString("utf8");
    });
    return [[`Secret ${source.namespace}/${name}`, [JSON.stringify(secret), ...decoded].join("\n")]];
  });
}
