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
 * A load made for a reader while the same store saves for a pass: a slow file system is played by a
 * read of the journal whose answer the test holds back (the store's own calls, through
 * node:fs/promises) until the pass has asked for its saves.
 */

const slowJournal = vi.hoisted(() => ({
  /** While set, a read of the journal answers only once it resolves. */
  held: undefined as Promise<void> | undefined,
  reads: 0,
}));
vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  // What was read comes back when the test lets it, as from a slow network file system.
  const readFile = (async (...args: Parameters<typeof real.readFile>) => {
    const text = await real.readFile(...args);
    if (slowJournal.held && String(args[0]).endsWith(JOURNAL_FILE)) {
      slowJournal.reads += 1;
      await slowJournal.held;
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
  slowJournal.held = undefined;
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
    let release = () => {};
    slowJournal.held = new Promise((resolve) => {
      release = resolve;
    });
    // Touched by a backup tool: the next load reads the folder instead of trusting what it knows.
    const now = new Date();
    await utimes(join(dir, JOURNAL_FILE), now, now);

    const poll = store.load();
    await until(() => slowJournal.reads > 0);
    // The pass saves while the reader's load is reading, and again once it has read.
    const first = saveOne();
    release();
    await Promise.all([poll, first]);
    await saveOne();
    const next = await store.load();
    await store.close();
    slowJournal.held = undefined;
    const reopened = createFileStore(dir);
    const afterClose = await reopened.load();
    await reopened.close();

    expect(next).toEqual(state);
    expect(afterClose).toEqual(state);
  });
});
