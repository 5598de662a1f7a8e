import { StateError } from "../errors.js";
import type { StateStore } from "../state/store.js";
import type { Leadership } from "./leadership.js";

/**
 * `store`, but save() throws StateError unless this replica leads at that moment. A request already in
 * flight when the Lease is lost runs to its answer (it cannot be called back); recording it would
 * overwrite the state the new leader now owns, so the deposed pass stops writing instead. The new
 * leader's level-based pass sees the platform as that request left it; a create's intent, saved before
 * its POST while still leading, leaves that resource Unknown rather than created twice.
 */
export function leaderOnlyStore(store: StateStore, leadership: Leadership): StateStore {
  return {
    load: () => store.load(),
    async save(state) {
      if (!leadership.isLeader()) {
        throw new StateError("not saving the state: this replica is no longer the leader");
      }
      await store.save(state);
    },
    close: () => store.close(),
  };
}
