import { describe, expect, it } from "vitest";
import {
  compactionBytes,
  compactsAfterSave,
  foldsOnClose,
  MIN_COMPACTION_BYTES,
} from "../../src/state/compaction.js";

/** When the file store folds its journal into the snapshot. */

const MiB = 1024 * 1024;

describe("compaction after a save", () => {
  it("rule: the journal is folded once it is larger than the snapshot", () => {
    const folder = { snapshotBytes: 8 * MiB, mustCompact: false };

    expect(compactsAfterSave({ ...folder, journalBytes: 8 * MiB })).toBe(false);
    expect(compactsAfterSave({ ...folder, journalBytes: 8 * MiB + 1 })).toBe(true);
  });

  it("rule: a small state's journal grows to at least 1 MiB before it is folded", () => {
    const folder = { snapshotBytes: 2_000, mustCompact: false };

    expect(MIN_COMPACTION_BYTES).toBe(MiB);
    expect(compactionBytes(2_000)).toBe(MiB);
    expect(compactsAfterSave({ ...folder, journalBytes: MiB })).toBe(false);
    expect(compactsAfterSave({ ...folder, journalBytes: MiB + 1 })).toBe(true);
  });

  it("rule: a journal holding lines written after a torn one is folded at the next save, however small", () => {
    expect(compactsAfterSave({ snapshotBytes: 8 * MiB, journalBytes: 10, mustCompact: true })).toBe(true);
  });
});

describe("folding on close", () => {
  it("rule: a journal that holds lines is folded, so that state.json alone holds the state after a clean stop", () => {
    expect(foldsOnClose({ journalBytes: 10, readable: true })).toBe(true);
  });

  it("rule: an empty journal, or a state that could not be read, is left as it is", () => {
    expect(foldsOnClose({ journalBytes: 0, readable: true })).toBe(false);
    expect(foldsOnClose({ journalBytes: 10, readable: false })).toBe(false);
  });
});
