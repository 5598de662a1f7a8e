import type { Leadership } from "../../src/leader/leadership.js";

/** A Leadership the test turns on and off; `set` tells every listener, as a Lease change would. */
export type SwitchableLeadership = Leadership & { set(leader: boolean): void };

export function switchableLeadership(leader: boolean): SwitchableLeadership {
  let current = leader;
  const listeners = new Set<(leader: boolean) => void>();
  return {
    isLeader: () => current,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    stop: async () => {},
    set(value) {
      current = value;
      for (const listener of listeners) listener(value);
    },
  };
}
