/**
 * When the file store folds its journal into the snapshot (see file-store.ts): pure decisions from the
 * sizes of the two files, unit-tested in test/unit/compaction.test.ts.
 */

/** The journal is compacted into the snapshot once it is larger than the snapshot and than this. */
export const MIN_COMPACTION_BYTES = 1024 * 1024;

/** The journal size past which a save compacts: the snapshot's, and at least MIN_COMPACTION_BYTES. */
export function compactionBytes(snapshotBytes: number): number {
  return Math.max(snapshotBytes, MIN_COMPACTION_BYTES);
}

/**
 * Whether a save compacts once its line is appended: the journal outgrew compactionBytes, or it holds
 * lines an earlier driftless wrote after a torn one (`mustCompact`), which the snapshot should replace.
 * A save that compacts stays cheap on average: the snapshot is rewritten once per snapshot's worth of
 * journal.
 */
export function compactsAfterSave(folder: {
  journalBytes: number;
  snapshotBytes: number;
  mustCompact: boolean;
}): boolean {
  return folder.mustCompact || folder.journalBytes > compactionBytes(folder.snapshotBytes);
}

/**
 * Whether close folds the journal into the snapshot, so that after a clean stop state.json alone holds
 * the state (what an operator reads, backs up or edits by hand): only when the journal holds lines and
 * the state was readable (folding an unreadable one would replace it). The store folds only while it
 * still holds its lock.
 */
export function foldsOnClose(folder: { journalBytes: number; readable: boolean }): boolean {
  return folder.readable && folder.journalBytes > 0;
}
