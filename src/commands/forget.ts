import type { Config } from "../config.js";
import { ConfigError, messageOf, StateError } from "../errors.js";
import { escapeLine } from "../escape.js";
import { parseResourceId, resourceId } from "../resources.js";
import type { ResourceRecord } from "../state/store.js";
import { commandLogger, type Io } from "./io.js";
import { createStateStore } from "./platform.js";

/**
 * `driftless forget KIND/NAME`: drops one record from the state now, instead of waiting for the
 * retention of a deleted manifest. Works on the state directly: the file store refuses while a daemon
 * holds its lock (stop it first); the Kubernetes store writes conditionally, so a daemon pass that saved
 * in between is never overwritten. Exit 0 when the record was dropped, 1 when there was none.
 */
export async function forgetCommand(config: Config, id: string, io: Io): Promise<number> {
  const { kind, name } = parseResourceId(id);
  if (!kind || !name) throw new ConfigError(`${id} is not KIND/NAME, like Dashboard/overview`);
  const key = resourceId({ kind, name });
  const store = createStateStore(config, { logger: commandLogger(config, io, "warn") });
  try {
    const state = await store.load().catch((error) => {
      throw new StateError(`cannot forget ${key}: ${messageOf(error)}`, {
        cause: error,
      });
    });
    const record = state.resources[key];
    if (!record) {
      io.err(escapeLine(`driftless: the state holds no record of ${key}; nothing was changed`));
      return 1;
    }
    delete state.resources[key];
    await store.save(state);
    io.out(escapeLine(`Forgot ${key}${lost(record)}.`));
    return 0;
  } finally {
    await store.close();
  }
}

/** What driftless no longer knows once the record is gone, for the operator to keep if needed. */
function lost(record: ResourceRecord): string {
  const parts = [
    ...(record.serverId ? [`server id ${record.serverId}`] : []),
    ...(record.tileIds
      ? [
          `tile ids ${Object.entries(record.tileIds)
            .map(([k, v]) => `${k}=${v}`)
            .join(", ")}`,
        ]
      : []),
    ...Object.entries(record.owned ?? {})
      .filter(([, entries]) => entries.length > 0)
      .map(([list, entries]) => `its own ${list} entries ${entries.join(", ")}`),
    ...(record.intent ? [`a create sent at ${record.intent.startedAt} with an unknown outcome`] : []),
  ];
  return parts.length > 0 ? `: driftless no longer knows ${parts.join("; ")}` : "";
}
