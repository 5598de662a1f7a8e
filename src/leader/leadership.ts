/**
 * Who may write. With leader election off, this process always may; with it on, only while it holds the
 * Lease (src/leader/lease.ts). The daemon asks before every pass and aborts a pass when leadership is lost.
 */
export interface Leadership {
  /** True while this process may write to the platform and the state. */
  isLeader(): boolean;
  /** Calls `listener` on every change; returns a function that removes it. */
  onChange(listener: (leader: boolean) => void): () => void;
  /** Stops campaigning and releases the lease if held. */
  stop(): Promise<void>;
}

/** Leadership without election: always the leader. */
export function soleLeader(): Leadership {
  return { isLeader: () => true, onChange: () => () => {}, stop: async () => {} };
}
