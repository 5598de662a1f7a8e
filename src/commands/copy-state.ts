import { isDeepStrictEqual } from "node:util";
import type { Config } from "../config.js";
import { StateError } from "../errors.js";
import { SETTINGS } from "../settings.js";
import type { StateStore } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import { commandLogger, type Io } from "./io.js";
import { createStateStore } from "./platform.js";

type StoreKind = Config["stateStore"];

export type CopyStateOptions = {
  /** The store written; the other one is read. */
  to: StoreKind;
  /** Replace a state that holds records (default: refuse). */
  overwrite: boolean;
};

/**
 * `driftless copy-state --to kubernetes|file`: the state of the other store (the file store in
 * DRIFTLESS_STATE_DIR, snapshot and journal; or the Secrets in DRIFTLESS_NAMESPACE) written into this
 * one, whole (salt, records, suspension), then read back and compared. The source is only read. Run it
 * with no driftless running on either store (scaled to zero). Throws StateError when the source holds
 * no record (a mistyped folder or namespace), when the target holds records and `overwrite` is not
 * given, or when what is read back differs; a locked or unreadable store throws as its load does.
 */
export async function copyStateCommand(config: Config, options: CopyStateOptions, io: Io): Promise<number> {
  const logger = commandLogger(config, io, "warn");
  const from: StoreKind = options.to === "file" ? "kubernetes" : "file";
  const source = await placeOf(config, from);
  const target = await placeOf(config, options.to);

  const state = await withStore(config, from, logger, { readOnly: true }, (store) => store.load());
  const count = Object.keys(state.resources).length;
  if (count === 0) {
    throw new StateError(
      `${source.name} holds no resource records: nothing to copy (check ${source.setting})`,
    );
  }
  await withStore(config, options.to, logger, {}, async (store) => {
    const held = Object.keys((await store.load()).resources).length;
    if (held > 0 && !options.overwrite) {
      throw new StateError(
        `${target.name} already holds the state of ${held} resources: nothing was copied. Is a driftless already running on it? To replace it, give --overwrite`,
      );
    }
    await store.save(state);
  });
  // Read back by a store of its own, as the next driftless will read it.
  const copied = await withStore(config, options.to, logger, { readOnly: true }, (store) => store.load());
  if (!isDeepStrictEqual(copied, state)) {
    throw new StateError(`${target.name} does not read back the state just written: copy it again`);
  }
  io.out(
    `Copied the state of ${count} resources from ${source.name} into ${target.name}${target.detail}, and read it back the same. The ${from === "file" ? "file" : "Kubernetes"} store is left as it was.`,
  );
  return 0;
}

/** How a store is named to the operator, and the setting that places it. */
async function placeOf(
  config: Config,
  kind: StoreKind,
): Promise<{ name: string; detail: string; setting: string }> {
  if (kind === "file") {
    const { env, flag } = SETTINGS.stateDir;
    return {
      name: `the file store in ${config.stateDir}`,
      detail: "",
      setting: `${env}, ${flag.split(" ")[0]}`,
    };
  }
  // Imported only here: the Kubernetes client takes seconds to load. Throws ConfigError without one.
  const { kubernetesTarget } = await import("../kubernetes/client.js");
  const { DEFAULT_SECRET_NAME } = await import("../state/kubernetes-store.js");
  const { namespace } = kubernetesTarget(config.namespace);
  const { env, flag } = SETTINGS.namespace;
  return {
    name: `the Kubernetes store in namespace ${namespace}`,
    detail: ` (Secret ${DEFAULT_SECRET_NAME} and its shards)`,
    setting: `${env}, ${flag.split(" ")[0]}`,
  };
}

/** `use` of the store of `kind`, closed after it (its lock released) whatever happens. */
async function withStore<T>(
  config: Config,
  kind: StoreKind,
  logger: Logger,
  { readOnly = false }: { readOnly?: boolean },
  use: (store: StateStore) => Promise<T>,
): Promise<T> {
  const store = createStateStore({ ...config, stateStore: kind }, { logger, readOnly });
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}
