import { mkdtemp, rm, utimes } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createFileStore } from "../src/state/file-store.js";
import { JOURNAL_FILE } from "../src/state/journal.js";
import type { ResourceRecord, State } from "../src/state/store.js";
import { sampleRecord } from "./helpers/state-store-contract.js";
import { until } from "./helpers/wait.js";

/**
 * A load made for a reader (a poll round reading tile ids) while the same store saves for a pass: a
 * slow file system is played by a read of the journal whose answer comes 20 ms after the read (the
 * store's own calls, through node:fs/promises), which widens the window in which a save lands while
 * a load reads.
 */

const slowJournal = vi.hoisted(() => ({ ms: 0, reads: 0 }));
vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  // What was read comes back `ms` later, as from a slow network file system.
  const readFile = (async (...args: Parameters<typeof real.readFile>) => {
    const text = await real.readFile(...args);
    if (slowJournal.ms > 0 && String(args[0]).endsWith(JOURNAL_FILE)) {
      slowJournal.reads += 1;
      await new Promise((resolve) => setTimeout(resolve, slowJournal.ms));
    }
    return text;
  }) as typeof real.readFile;
  return { ...real, readFile, default: { ...real, readFile } };
});

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-readers-"));
});
afterEach(async () => {
  slowJournal.ms = 0;
  slowJournal.reads = 0;
  await rm(root, { recursive: true, force: true });
});

const pipes = (state: State, count: number): State => ({
  ...state,
  resources: Object.fromEntries(
    Array.from({ length: count }, (_, i) => [`DataPipe/p${i}`, { ...sampleRecord(`p${i}`) }]),
  ),
});

describe("a load for a reader while the same store saves", () => {
  it("never makes a later load, or the compaction at close, forget a saved record", async () => {
    const dir = join(root, "state");
    const store = createFileStore(dir);
    const state = pipes(await store.load(), 300);
    await store.save(state);
    let saved = 0;
    const saveOne = async () => {
      const id = `DataPipe/p${saved % 300}`;
      saved += 1;
      state.resources[id] = { ...(state.resources[id] as ResourceRecord), serverId: `saved-${saved}` };
      await store.save(state);
    };
    await saveOne();
    slowJournal.ms = 20;
    // Touched by a backup tool: the next load reads the folder instead of trusting what it knows.
    const now = new Date();
    await utimes(join(dir, JOURNAL_FILE), now, now);

    const poll = store.load();
    await until(() => slowJournal.reads > 0);
    // The pass saves twice while the poll's load is reading.
    await saveOne();
    await saveOne();
    await poll;
    const next = await store.load();
    await store.close();
    slowJournal.ms = 0;
    const reopened = createFileStore(dir);
    const afterClose = await reopened.load();
    await reopened.close();

    expect(next).toEqual(state);
    expect(afterClose).toEqual(state);
  });
});
