import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, utimes } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isStateError } from "../src/errors.js";
import { createFileStore, type FileStore, LOCK_FILE, STATE_FILE } from "../src/state/file-store.js";
import { bundled } from "./helpers/bundle.js";

/**
 * The file store across real processes: the lock between two of them, and a process killed in the
 * middle of writing. The child processes run the store as the build bundles it.
 */

const built = bundled("src/state/file-store.ts");
const RECORDS = 2000;

/** A child process running `body` with `createFileStore` imported and `dir` set. */
function child(dir: string, body: string): ChildProcess {
  const code = `import { createFileStore } from ${JSON.stringify(built())};
const dir = ${JSON.stringify(dir)};
${body}`;
  return spawn(process.execPath, ["--input-type=module", "-e", code], { stdio: ["ignore", "pipe", "pipe"] });
}

/** Resolves with the child's stdout once it contains `text`; rejects if the child exits first. */
function output(process: ChildProcess, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = "";
    let errors = "";
    process.stdout?.on("data", (chunk) => {
      seen += chunk;
      if (seen.includes(text)) resolve(seen);
    });
    process.stderr?.on("data", (chunk) => {
      errors += chunk;
    });
    process.on("exit", (code) =>
      reject(new Error(`child exited ${code} before "${text}": ${seen}${errors}`)),
    );
  });
}

function exited(process: ChildProcess): Promise<{ code: number | null; stderr: string }> {
  let stderr = "";
  process.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve) => process.on("exit", (code) => resolve({ code, stderr })));
}

async function kill(process: ChildProcess): Promise<void> {
  if (process.exitCode !== null || process.signalCode !== null) return;
  const gone = new Promise((resolve) => process.once("exit", resolve));
  process.kill("SIGKILL");
  await gone;
}

const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

let root: string;
const children: ChildProcess[] = [];
const stores: FileStore[] = [];
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-processes-"));
});
afterEach(async () => {
  for (const process of children.splice(0)) await kill(process);
  for (const store of stores.splice(0)) await store.close();
  await rm(root, { recursive: true, force: true });
});

describe("the lock between two processes", () => {
  it("stops this process while another holds the folder, naming its pid; a killed holder's lock is taken over", async () => {
    const holder = child(
      root,
      `await createFileStore(dir).load(); console.log("locked"); setInterval(() => {}, 1000);`,
    );
    children.push(holder);
    await output(holder, "locked");
    const store = createFileStore(root);
    stores.push(store);

    const refused = await store.load().catch((error: unknown) => error);
    await kill(holder);

    expect(isStateError(refused)).toBe(true);
    expect((refused as Error).message).toContain(`locked by process ${holder.pid} `);
    await expect(store.load()).resolves.toMatchObject({ version: 1 });
  });

  it("never shows a lock file without its holder's name, whenever its holder is stopped", async () => {
    // A holder killed between creating the file and writing its name left a lock nobody could judge
    // for a minute. Stopped (SIGSTOP) at random moments of taking and giving back its lock, the file
    // is either absent or names it.
    const looper = child(
      root,
      `console.log("looping");
for (;;) {
  const store = createFileStore(dir);
  await store.load();
  await store.close();
}`,
    );
    children.push(looper);
    await output(looper, "looping");

    const seen: string[] = [];
    for (let sample = 0; sample < 300; sample++) {
      looper.kill("SIGSTOP");
      while (!(await readFile(`/proc/${looper.pid}/stat`, "utf8")).includes(") T ")) await tick();
      const text = await readFile(join(root, LOCK_FILE), "utf8").catch(() => undefined);
      if (text !== undefined) seen.push(text);
      looper.kill("SIGCONT");
      await tick(Math.random() * 3);
    }

    expect(seen.length).toBeGreaterThan(0);
    for (const text of seen) expect(JSON.parse(text || "{}")).toMatchObject({ pid: looper.pid });
  });

  it("makes the second process fail with a clear error while this one holds the folder", async () => {
    const store = createFileStore(root);
    stores.push(store);
    await store.load();

    const second = child(
      root,
      `try { await createFileStore(dir).load(); } catch (error) { console.error(error.name + ": " + error.message); process.exit(1); }`,
    );
    children.push(second);
    const { code, stderr } = await exited(second);

    expect(code).toBe(1);
    expect(stderr).toContain(`StateError: the state is locked by process ${process.pid} `);
  });
});

describe("a process that stalled past the stale period", () => {
  it("finds its lock taken over when it resumes: load() and ensureWritable() refuse, naming the new holder", async () => {
    const stalled = child(
      root,
      `const store = createFileStore(dir);
await store.load();
process.on("SIGUSR2", async () => {
  for (const [what, call] of [["load", () => store.load()], ["ensureWritable", () => store.ensureWritable()]]) {
    await call().then(() => console.log(what + ": allowed"), (error) => console.log(what + ": " + error.name + ": " + error.message));
  }
  console.log("asked");
});
console.log("locked");
setInterval(() => {}, 1000);`,
    );
    children.push(stalled);
    await output(stalled, "locked");

    // SIGSTOP: a stall (a frozen VM, a paused container) long enough for the lock to go stale.
    stalled.kill("SIGSTOP");
    const old = new Date(Date.now() - 10 * 60_000);
    await utimes(join(root, LOCK_FILE), old, old);
    const successor = createFileStore(root);
    stores.push(successor);
    await successor.load();
    stalled.kill("SIGCONT");
    stalled.kill("SIGUSR2");
    const said = await output(stalled, "asked");

    expect(said).toContain(
      `load: StateError: this process no longer holds the state lock ${join(root, LOCK_FILE)}`,
    );
    expect(said).toContain(`ensureWritable: StateError: this process no longer holds the state lock`);
    expect(said).toContain(`process ${process.pid} on `);
    expect(said).not.toContain("allowed");
    await expect(successor.ensureWritable()).resolves.toBeUndefined();
  });
});

describe("a process killed while writing", () => {
  it("never leaves a torn state: the next process loads the last complete save", async () => {
    for (let round = 1; round <= 6; round++) {
      const writer = child(
        root,
        `const store = createFileStore(dir);
const state = await store.load();
for (let generation = 1; ; generation++) {
  const resources = {};
  for (let i = 0; i < ${RECORDS}; i++) {
    resources["DataPipe/p" + i] = { kind: "DataPipe", name: "p" + i, applied: { generation, padding: "x".repeat(200) } };
  }
  await store.save({ ...state, resources });
  console.log("saved " + generation);
}`,
      );
      children.push(writer);
      // Killed at a random save: the one after the save it last said had landed is under way.
      await output(writer, `saved ${1 + Math.floor(Math.random() * 8)}\n`);
      await kill(writer);

      const store = createFileStore(root);
      const state = await store.load();
      await store.close();

      const records = Object.values(state.resources);
      const generations = new Set(records.map((record) => record.applied?.generation));
      expect(records).toHaveLength(RECORDS);
      expect(generations.size).toBe(1);
    }
    expect((await readdir(root)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
    expect(await readdir(root)).toContain(STATE_FILE);
  });
});
