import { resourceId } from "../resources.js";
import type { ResourceRecord, State, StateStore } from "./store.js";

/** Every record by its id (`Kind/name`), as a state held them. */
export type Records = Readonly<Record<string, ResourceRecord>>;

/**
 * The records as the reconciler last loaded or saved them, for the daemon's poll and read rounds (an
 * alert watch's tile ids, a dashboard's tile ids and an endpoint's server id to read and compare a
 * resource): noted from each load and save of the reconciler's store that succeeds (see recording), so
 * that a round never loads the state itself (a whole load of the Kubernetes store is 513 reads). Until
 * the first note, and again after forget(), a round waits for the reconciler's next load: the first
 * pass of a process or of a leadership term makes one at once.
 */
export class SavedRecords {
  private saved: Records | undefined;
  /** Rounds waiting for the next note (or the next failed load, which tells them nothing). */
  private waiting: Array<() => void> = [];

  /**
   * `store`, noting the records of every state it loads and every state it saves, once the load or save
   * succeeded. A load that fails releases waiting rounds with no records (as a failed read always did).
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

  /** Every record as last loaded or saved (empty when none was noted); waits for the next load until one is. */
  async records(): Promise<Records> {
    if (!this.saved) await new Promise<void>((resolve) => this.waiting.push(resolve));
    return this.saved ?? {};
  }

  /** The tile ids of Dashboard `name` (a copy the caller may change), undefined when it has none. */
  async tileIdsOf(name: string): Promise<Record<string, string> | undefined> {
    const tileIds = (await this.records())[resourceId({ kind: "Dashboard", name })]?.tileIds;
    return tileIds ? { ...tileIds } : undefined;
  }

  /** Forgets every record (leadership lost: the next leader may change them before this one leads again). */
  forget(): void {
    this.saved = undefined;
  }

  /**
   * A shallow copy: the store's records are replaced, never changed in place (StateStore.load), so the
   * copy stays what was saved while the pass goes on.
   */
  private note(state: State): void {
    this.saved = { ...state.resources };
    this.release();
  }

  private release(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}
