import { StateError } from "../errors.js";
import type { StateStore } from "../state/store.js";
import type { Leadership } from "./leadership.js";

/**
 * `store`, but save() and ensureWritable() throw StateError unless this replica leads at that moment.
 * Leadership is judged at the call (the Lease's own isLeader() reads the monotonic clock against its
 * renew deadline), not by the step-down timer, which a paused process runs late. A request already in
 * flight when the Lease is lost runs to its answer (it cannot be called back); recording it would
 * overwrite the state the new leader now owns, so the deposed pass stops writing instead. The new
 * leader's level-based pass sees the platform as that request left it; a create's intent, saved before
 * its POST while still leading, leaves that resource Unknown rather than created twice.
 */
export function leaderOnlyStore(store: StateStore, leadership: Leadership): StateStore {
  const mustLead = (what: string) => {
    if (!leadership.isLeader()) {
      throw new StateError(
        `${what}: this replica is no longer the leader (it could not renew its lease within the renew deadline, or another replica took it over); this pass stops and sends nothing more`,
      );
    }
  };
  return {
    load: () => store.load(),
    async save(state) {
      mustLead("not saving the state");
      await store.save(state);
    },
    async ensureWritable() {
      mustLead("not writing");
      await store.ensureWritable();
    },
    close: () => store.close(),
  };
}
