import { spawnSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import {
  appendFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  utimes,
  writeFile,
} from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isStateError, type StateError } from "../src/errors.js";
import { createFileStore, type FileStore, LOCK_FILE, STATE_FILE } from "../src/state/file-store.js";
import { JOURNAL_FILE } from "../src/state/journal.js";
import type { ResourceRecord, State } from "../src/state/store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { describeStateStore, sampleRecord } from "./helpers/state-store-contract.js";
import { until } from "./helpers/wait.js";

describeStateStore("file store", async () => {
  const dir = await mkdtemp(join(tmpdir(), "driftless-contract-"));
  return {
    open: () => createFileStore(join(dir, "state")),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

let root: string;
let dir: string;
const stores: FileStore[] = [];
const open = (options?: Parameters<typeof createFileStore>[1]) => {
  const store = createFileStore(dir, options);
  stores.push(store);
  return store;
};
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-state-"));
  dir = join(root, "state");
});
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  await rm(root, { recursive: true, force: true });
});

async function stateError(promise: Promise<unknown>): Promise<StateError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isStateError(error)) throw new Error(`expected a StateError, got ${String(error)}`);
  return error;
}

const withRecord = (state: State): State => ({ ...state, resources: { "DataPipe/a": sampleRecord("a") } });

describe("the state file", () => {
  it("is versioned JSON readable only by its owner, with no temporary file left", async () => {
    const store = open();

    await store.save(withRecord(await store.load()));

    const saved = JSON.parse(await readFile(join(dir, STATE_FILE), "utf8"));
    expect(saved).toMatchObject({ version: 1, resources: { "DataPipe/a": { kind: "DataPipe" } } });
    expect((await stat(join(dir, STATE_FILE))).mode & 0o777).toBe(0o600);
    expect((await readdir(dir)).sort()).toEqual([STATE_FILE, LOCK_FILE].sort());
  });

  it("rejects another format version with a clear error and leaves the file alone", async () => {
    await mkdir(dir);
    const text = JSON.stringify({ version: 2, salt: "s", resources: {}, shards: [] });
    await writeFile(join(dir, STATE_FILE), text);

    const error = await stateError(open().load());

    expect(error.message).toContain("state format version 2");
    expect(error.message).toContain("run a newer driftless");
    expect(await readFile(join(dir, STATE_FILE), "utf8")).toBe(text);
  });

  it("reports a corrupt file and refuses to save over it", async () => {
    await mkdir(dir);
    await writeFile(join(dir, STATE_FILE), '{"version": 1, "salt": "s", "resou');
    const store = open();

    const error = await stateError(store.load());
    const saving = await stateError(store.save({ version: 1, salt: "new", resources: {} }));

    expect(error.message).toContain(`${join(dir, STATE_FILE)} is corrupt`);
    expect(error.message).toContain("left as it is");
    expect(saving.message).toContain("not saving over a state that could not be read");
    expect(await readFile(join(dir, STATE_FILE), "utf8")).toBe('{"version": 1, "salt": "s", "resou');
  });

  it("starts afresh once a corrupt file is moved aside, as its error advises, without a restart", async () => {
    await mkdir(dir);
    await writeFile(join(dir, STATE_FILE), '{"version": 1, "salt": "s", "resou');
    const store = open();
    await stateError(store.load());

    await rename(join(dir, STATE_FILE), join(dir, "state.json.corrupt"));
    const fresh = await store.load();
    await store.save(withRecord(fresh));

    expect(fresh.resources).toEqual({});
    expect(JSON.parse(await readFile(join(dir, STATE_FILE), "utf8")).resources).toHaveProperty("DataPipe/a");
  });

  it("names the field of a state of the wrong shape", async () => {
    await mkdir(dir);
    await writeFile(
      join(dir, STATE_FILE),
      JSON.stringify({ version: 1, salt: "s", resources: { x: { kind: 3 } } }),
    );

    const error = await stateError(open().load());

    expect(error.message).toContain("not a driftless state");
    expect(error.message).toContain("resources.x.kind");
  });

  it("reports a state that cannot be read", async () => {
    await mkdir(join(dir, STATE_FILE), { recursive: true });

    const error = await stateError(open().load());

    expect(error.message).toContain(`cannot read the state ${join(dir, STATE_FILE)}`);
  });

  it("removes temporary files of a write that never finished", async () => {
    await mkdir(dir);
    await writeFile(join(dir, `.${STATE_FILE}.123.abcdef.tmp`), '{"version": 1, "sa');

    await open().load();

    expect(await readdir(dir)).toEqual([LOCK_FILE]);
  });
});

describe("the lock", () => {
  it("stops a second store on the same folder, naming the holder, until the first closes", async () => {
    const first = open();
    await first.load();
    const second = open();

    const error = await stateError(second.load());
    await first.close();

    expect(error.message).toContain(`locked by process ${process.pid} on ${hostname()}`);
    expect(error.message).toContain(join(dir, LOCK_FILE));
    await expect(second.load()).resolves.toMatchObject({ version: 1 });
  });

  it("takes over the lock of a process that is gone", async () => {
    const dead = spawnSync(process.execPath, ["-e", ""]).pid as number;
    await mkdir(dir);
    await writeFile(
      join(dir, LOCK_FILE),
      JSON.stringify({ pid: dead, hostname: hostname(), startedAt: "then", token: "t" }),
    );
    const store = open();

    await store.save(withRecord(await store.load()));

    expect(JSON.parse(await readFile(join(dir, LOCK_FILE), "utf8"))).toMatchObject({ pid: process.pid });
  });

  it("takes over a lock left by an earlier process with our own pid (a restarted container's pid 1)", async () => {
    await mkdir(dir);
    const earlier = {
      pid: process.pid,
      hostname: hostname(),
      startedAt: "then",
      processStartedAt: 1,
      token: "t",
    };
    await writeFile(join(dir, LOCK_FILE), JSON.stringify(earlier));

    await expect(open().load()).resolves.toMatchObject({ version: 1 });
  });

  it("takes over a lock that names no holder once it is 5 s old, and respects a younger one", async () => {
    await mkdir(dir);
    const lock = join(dir, LOCK_FILE);
    await writeFile(lock, "");

    const error = await stateError(open().load());
    const old = new Date(Date.now() - 10_000);
    await utimes(lock, old, old);

    expect(error.message).toContain("locked by a process that left no name in it");
    await expect(open().load()).resolves.toMatchObject({ version: 1 });
    expect(JSON.parse(await readFile(lock, "utf8"))).toMatchObject({ pid: process.pid });
  });

  it("sweeps away what killed processes left beside the lock once it is a minute old, and nothing newer", async () => {
    await mkdir(dir);
    const left = [`${LOCK_FILE}.0123abcd.new`, `${LOCK_FILE}.77.beef.stale`];
    for (const name of left) await writeFile(join(dir, name), "{}");
    const old = new Date(Date.now() - 120_000);
    for (const name of left) await utimes(join(dir, name), old, old);
    await writeFile(join(dir, `${LOCK_FILE}.fresh.new`), "{}");

    await open().load();

    expect((await readdir(dir)).sort()).toEqual([LOCK_FILE, `${LOCK_FILE}.fresh.new`]);
  });

  it("respects a fresh lock from another host, and takes it over once it goes stale", async () => {
    await mkdir(dir);
    const lock = join(dir, LOCK_FILE);
    await writeFile(lock, JSON.stringify({ pid: 1, hostname: "other-pod", startedAt: "then", token: "t" }));

    const error = await stateError(open().load());
    const old = new Date(Date.now() - 120_000);
    await utimes(lock, old, old);

    expect(error.message).toContain("locked by process 1 on other-pod");
    await expect(open().load()).resolves.toMatchObject({ version: 1 });
  });

  it("refuses to save once another process has taken the lock over", async () => {
    const store = open();
    const state = await store.load();
    await writeFile(
      join(dir, LOCK_FILE),
      JSON.stringify({ pid: 1, hostname: "other-pod", startedAt: "now", token: "x" }),
    );

    const error = await stateError(store.save(withRecord(state)));

    expect(error.message).toContain("no longer holds the state lock");
    expect(await readdir(dir)).toEqual([LOCK_FILE]);
  });
});

describe("ensureWritable(), asked before every write request", () => {
  const takeOver = () =>
    writeFile(
      join(dir, LOCK_FILE),
      JSON.stringify({ pid: 1, hostname: "other-pod", startedAt: "now", token: "x" }),
    );

  it("resolves while this store holds the lock, taking it first if need be", async () => {
    const store = open();

    await store.ensureWritable();

    expect(JSON.parse(await readFile(join(dir, LOCK_FILE), "utf8"))).toMatchObject({ pid: process.pid });
  });

  it("refuses, and so does load(), once another process has taken the lock over", async () => {
    const store = open();
    await store.load();
    await takeOver();

    const refused = await stateError(store.ensureWritable());
    const loading = await stateError(store.load());

    expect(refused.message).toContain(`this process no longer holds the state lock ${join(dir, LOCK_FILE)}`);
    expect(refused.message).toContain("process 1 on other-pod");
    expect(refused.message).toContain("sends nothing more");
    expect(loading.message).toContain("no longer holds the state lock");
  });

  it("refuses on a read-only store", async () => {
    const error = await stateError(open({ readOnly: true }).ensureWritable());

    expect(error.message).toContain("read-only");
  });

  it.skipIf(!canMakeImmutable())(
    "reports a lock it cannot touch instead of swallowing the failure",
    async () => {
      const lines: string[] = [];
      const sink = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      });
      const logger = createLogger("warn", sink);
      const store = open({ logger, lockRefreshMs: 20 });
      await store.load();
      const lock = join(dir, LOCK_FILE);
      spawnSync("chattr", ["+i", lock]);

      try {
        const refused = await stateError(store.ensureWritable());
        await until(() => lines.some((line) => line.includes("cannot touch the state lock")));

        expect(refused.message).toContain(`cannot touch the state lock ${lock}`);
        expect(refused.message).toContain("another driftless may take it over");
      } finally {
        spawnSync("chattr", ["-i", lock]);
      }
    },
  );
});

/** True where a file can be made immutable (root on a file system with attributes, as ext4). */
function canMakeImmutable(): boolean {
  const probe = join(tmpdir(), `driftless-immutable-${process.pid}`);
  writeFileSync(probe, "");
  const made = spawnSync("chattr", ["+i", probe]).status === 0;
  spawnSync("chattr", ["-i", probe]);
  rmSync(probe, { force: true });
  return made;
}

describe("a read-only store (driftless plan beside a daemon)", () => {
  it("loads a new state from a missing folder without creating anything", async () => {
    const store = open({ readOnly: true });

    const state = await store.load();

    expect(state).toMatchObject({ version: 1, resources: {} });
    await expect(stat(dir)).rejects.toThrow();
  });

  it("reads the state while another store holds the lock, and refuses to save", async () => {
    const writer = open();
    await writer.save(withRecord(await writer.load()));
    const reader = open({ readOnly: true });

    const state = await reader.load();
    const error = await stateError(reader.save(state));

    expect(state.resources["DataPipe/a"]).toEqual(sampleRecord("a"));
    expect(error.message).toContain("read-only");
  });
});

const pipes = (state: State, count: number, generation = 1): State => ({
  ...state,
  resources: Object.fromEntries(
    Array.from({ length: count }, (_, i) => [
      `DataPipe/p${i}`,
      { ...sampleRecord(`p${i}`), applied: { generation, padding: "x".repeat(200) } },
    ]),
  ),
});

describe("the journal", () => {
  it("writes only the changed record on a save: one journal line, the snapshot untouched", async () => {
    const store = open();
    const state = pipes(await store.load(), 100);
    await store.save(state);
    const snapshot = await readFile(join(dir, STATE_FILE), "utf8");

    state.resources["DataPipe/p7"] = {
      ...(state.resources["DataPipe/p7"] as ResourceRecord),
      serverId: "changed",
    };
    delete state.resources["DataPipe/p8"];
    await store.save(state);

    const journal = await readFile(join(dir, JOURNAL_FILE), "utf8");
    expect(await readFile(join(dir, STATE_FILE), "utf8")).toBe(snapshot);
    expect(journal.split("\n")).toHaveLength(2);
    expect(JSON.parse(journal)).toEqual({
      set: { "DataPipe/p7": state.resources["DataPipe/p7"] },
      delete: ["DataPipe/p8"],
    });
    expect(Buffer.byteLength(journal)).toBeLessThan(
      JSON.stringify(state.resources["DataPipe/p7"]).length + 100,
    );
    await store.close();
    expect(await open().load()).toEqual(state);
  });

  it("folds the journal into state.json on close, so that after a clean stop the file alone holds the state", async () => {
    const store = open();
    const state = pipes(await store.load(), 10);
    await store.save(state);
    state.resources["DataPipe/p3"] = {
      ...(state.resources["DataPipe/p3"] as ResourceRecord),
      serverId: "journaled",
    };
    await store.save(state);

    await store.close();

    expect(JSON.parse(await readFile(join(dir, STATE_FILE), "utf8"))).toEqual(state);
    expect(await readFile(join(dir, JOURNAL_FILE), "utf8")).toBe("");
  });

  it("writes nothing for a save that changed nothing", async () => {
    const store = open();
    const state = pipes(await store.load(), 10);
    await store.save(state);

    await store.save(structuredClone(state));

    expect(existsSync(join(dir, JOURNAL_FILE))).toBe(false);
  });

  it("ignores a torn last line (a save cut short by a crash) and appends after the last whole one", async () => {
    const store = open();
    const state = pipes(await store.load(), 3);
    await store.save(state);
    state.resources["DataPipe/p1"] = {
      ...(state.resources["DataPipe/p1"] as ResourceRecord),
      serverId: "saved",
    };
    await store.save(state);
    await store.close();
    await appendFile(join(dir, JOURNAL_FILE), '{"set":{"DataPipe/p2":{"kind":"DataPipe","na');

    const reopened = open();
    const loaded = await reopened.load();
    loaded.resources["DataPipe/p0"] = {
      ...(loaded.resources["DataPipe/p0"] as ResourceRecord),
      serverId: "after the crash",
    };
    await reopened.save(loaded);
    await reopened.close();

    expect(loaded.resources["DataPipe/p1"]?.serverId).toBe("saved");
    expect(loaded.resources["DataPipe/p2"]).toEqual(state.resources["DataPipe/p2"]);
    expect(await open().load()).toEqual(loaded);
  });

  it("loads the same state when a crash came between the snapshot's replacement and the journal's truncation", async () => {
    const store = open();
    const first = pipes(await store.load(), 5, 1);
    await store.save(first);
    const second = pipes(first, 5, 2);
    await store.save(second);
    const third = pipes(first, 4, 3);
    await store.save(third);
    const journal = await readFile(join(dir, JOURNAL_FILE), "utf8");
    await store.close();

    // As if compaction had replaced the snapshot with the latest state and died before emptying the journal.
    await writeFile(join(dir, STATE_FILE), JSON.stringify(third));
    await writeFile(join(dir, JOURNAL_FILE), journal);

    expect(journal.trim().split("\n")).toHaveLength(2);
    expect(await open().load()).toEqual(third);
  });

  it("compacts the journal into the snapshot once it outgrows it, and loads the same state after", async () => {
    const store = open();
    let state = pipes(await store.load(), 2000, 0);
    await store.save(state);
    const sizes: number[] = [];
    for (let generation = 1; generation <= 12; generation++) {
      state = pipes(state, 2000, generation);
      await store.save(state);
      sizes.push((await stat(join(dir, JOURNAL_FILE))).size);
    }
    await store.close();

    expect(Math.max(...sizes)).toBeLessThanOrEqual(2 * (await stat(join(dir, STATE_FILE))).size);
    expect(sizes).toContain(0);
    expect(await open().load()).toEqual(state);
  });

  it("lets a read-only store (plan beside the daemon) see the saves still in the journal", async () => {
    const writer = open();
    const state = pipes(await writer.load(), 10);
    await writer.save(state);
    state.resources["DataPipe/p3"] = {
      ...(state.resources["DataPipe/p3"] as ResourceRecord),
      serverId: "journaled",
    };
    await writer.save(state);

    const seen = await open({ readOnly: true }).load();

    expect(seen).toEqual(state);
  });

  it("loads a journal an earlier driftless appended onto a torn line: the whole save after the tear counts, the torn one does not", async () => {
    const store = open();
    const state = pipes(await store.load(), 3);
    await store.save(state);
    await store.close();
    const record = (name: string, serverId: string) => ({ ...state.resources[name], serverId });
    const whole = (set: Record<string, unknown>) => JSON.stringify({ set });
    const torn = whole({ "DataPipe/p2": record("DataPipe/p2", "torn") }).slice(0, 60);
    await writeFile(
      join(dir, JOURNAL_FILE),
      `${whole({ "DataPipe/p1": record("DataPipe/p1", "saved") })}\n${torn}${whole({ "DataPipe/p0": record("DataPipe/p0", "after the tear") })}\n`,
    );

    const reopened = open();
    const loaded = await reopened.load();
    await reopened.save(loaded);

    expect(loaded.resources["DataPipe/p0"]?.serverId).toBe("after the tear");
    expect(loaded.resources["DataPipe/p1"]?.serverId).toBe("saved");
    expect(loaded.resources["DataPipe/p2"]).toEqual(state.resources["DataPipe/p2"]);
    expect(await readFile(join(dir, JOURNAL_FILE), "utf8")).toBe("");
    expect(JSON.parse(await readFile(join(dir, STATE_FILE), "utf8"))).toEqual(loaded);
  });

  it("saves the whole state when the journal was cut behind its back, so the saves it held are not lost", async () => {
    const store = open();
    const state = pipes(await store.load(), 3);
    await store.save(state);
    state.resources["DataPipe/p1"] = {
      ...(state.resources["DataPipe/p1"] as ResourceRecord),
      serverId: "one",
    };
    await store.save(state);
    await writeFile(join(dir, JOURNAL_FILE), "");

    state.resources["DataPipe/p2"] = {
      ...(state.resources["DataPipe/p2"] as ResourceRecord),
      serverId: "two",
    };
    await store.save(state);

    // Read as a process would after a crash now, before any compaction at close.
    expect(await open({ readOnly: true }).load()).toEqual(state);
  });

  it("refuses a whole journal line that is not JSON, advising to delete that line rather than the state", async () => {
    const store = open();
    await store.save(pipes(await store.load(), 2));
    await store.close();
    await writeFile(join(dir, JOURNAL_FILE), '{"set":{}}\nnot a save\n');

    const error = await stateError(open().load());

    expect(error.message).toContain(`${join(dir, JOURNAL_FILE)} line 2 is corrupt`);
    expect(error.message).toContain("delete that one line from the journal");
    expect(error.message).toContain("Do not move the state aside");
  });

  it("reports a damaged journal line, naming the file and line, and refuses to save over it", async () => {
    const store = open();
    await store.save(pipes(await store.load(), 2));
    await store.close();
    await writeFile(join(dir, JOURNAL_FILE), '{"set":{}}\n{"set":{"x":{"kind":3}}}\n');
    const reopened = open();

    const error = await stateError(reopened.load());
    const saving = await stateError(reopened.save({ version: 1, salt: "s", resources: {} }));

    expect(error.message).toContain(`${join(dir, JOURNAL_FILE)} line 2 is not a driftless state`);
    expect(error.message).toContain("set.x.kind");
    expect(saving.message).toContain("not saving over a state that could not be read");
  });

  it("migrates a state.json written by the release before the journal, without loss", async () => {
    await mkdir(dir);
    const fixture = await readFile("test/fixtures/state-v1/state.json", "utf8");
    await writeFile(join(dir, STATE_FILE), fixture);
    const store = open();

    const loaded = await store.load();
    const asWritten = structuredClone(loaded);
    loaded.resources["DataPipe/pipe-3"] = {
      ...(loaded.resources["DataPipe/pipe-3"] as ResourceRecord),
      serverId: "after the upgrade",
    };
    await store.save(loaded);
    const snapshotAfterSave = await readFile(join(dir, STATE_FILE), "utf8");
    await store.close();

    expect(asWritten).toEqual(JSON.parse(fixture));
    expect(asWritten.resources["ApiKey/ci-deployer"]).toMatchObject({ futureField: { kept: true } });
    expect(snapshotAfterSave).toBe(fixture);
    expect(await open().load()).toEqual(loaded);
  });
});
