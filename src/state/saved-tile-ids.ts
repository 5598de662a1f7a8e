import { resourceId } from "../resources.js";
import type { State, StateStore } from "./store.js";

/** Tile key → server tile id, by the id of the record (`Dashboard/name`). */
type TileIdsByRecord = ReadonlyMap<string, Readonly<Record<string, string>>>;

/**
 * The tile ids of every Dashboard as the reconciler last loaded or saved them, for the alert polls'
 * check that a watched tile exists: noted from each load and save of the reconciler's store that
 * succeeds (see recording), so that a poll round never loads the state itself (a whole load of the
 * Kubernetes store is 513 reads). Until the first note, and again after forget(), a poll waits for the
 * reconciler's next load: the first pass of a process or of a leadership term makes one at once.
 */
export class SavedTileIds {
  private byRecord: TileIdsByRecord | undefined;
  /** The server id of every ReversePrivateEndpoint, by record id: what the drift reads look up. */
  private serverIds: ReadonlyMap<string, string> | undefined;
  /** Polls waiting for the next note (or the next failed load, which tells them nothing). */
  private waiting: Array<() => void> = [];

  /**
   * `store`, noting the tile ids of every state it loads and every state it saves, once the load or save
   * succeeded. A load that fails releases waiting polls with no tile ids (as a failed read always did).
   */
  recording(store: StateStore): StateStore {
    return {
      load: async () => {
        const state = await store.load().catch((error: unknown) => {
          this.release();
          throw error;
        });
        this.note(state);
        return state;
      },
      save: async (state) => {
        await store.save(state);
        this.note(state);
      },
      ensureWritable: () => store.ensureWritable(),
      close: () => store.close(),
    };
  }

  /**
   * The tile ids of Dashboard `name` (a copy the caller may change), undefined when it has none; waits
   * for the reconciler's next load when none was noted yet.
   */
  async of(name: string): Promise<Record<string, string> | undefined> {
    if (!this.byRecord) await new Promise<void>((resolve) => this.waiting.push(resolve));
    const tileIds = this.byRecord?.get(resourceId({ kind: "Dashboard", name }));
    return tileIds ? { ...tileIds } : undefined;
  }

  /** The server id of ReversePrivateEndpoint `name`, as last loaded or saved; waits like of(). */
  async serverIdOf(name: string): Promise<string | undefined> {
    if (!this.serverIds) await new Promise<void>((resolve) => this.waiting.push(resolve));
    return this.serverIds?.get(resourceId({ kind: "ReversePrivateEndpoint", name }));
  }

  /** Forgets every tile id (leadership lost: the next leader may change them before this one leads again). */
  forget(): void {
    this.byRecord = undefined;
    this.serverIds = undefined;
  }

  private note(state: State): void {
    this.byRecord = tileIdsOf(state);
    this.serverIds = serverIdsOf(state);
    this.release();
  }

  private release(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

/** The start of every Dashboard's record id. */
const DASHBOARD = resourceId({ kind: "Dashboard", name: "" });

/**
 * The tile ids of every Dashboard record of `state`, by record id. Run at every load and save, so it
 * reads the record ids and only the Dashboards' records (a pass over 10,000 resources saves often).
 */
export function tileIdsOf(state: State): TileIdsByRecord {
  const found = new Map<string, Readonly<Record<string, string>>>();
  for (const id of Object.keys(state.resources)) {
    if (!id.startsWith(DASHBOARD)) continue;
    const tileIds = state.resources[id]?.tileIds;
    if (tileIds) found.set(id, { ...tileIds });
  }
  return found;
}

const ENDPOINT = resourceId({ kind: "ReversePrivateEndpoint", name: "" });

/** The server id of every ReversePrivateEndpoint record of `state`, by record id. */
function serverIdsOf(state: State): ReadonlyMap<string, string> {
  const found = new Map<string, string>();
  for (const id of Object.keys(state.resources)) {
    if (!id.startsWith(ENDPOINT)) continue;
    const serverId = state.resources[id]?.serverId;
    if (serverId) found.set(id, serverId);
  }
  return found;
}
