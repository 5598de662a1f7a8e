import { execFileSync, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, rmdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFileStore } from "../src/state/file-store.js";
import { bundled } from "./helpers/bundle.js";

/**
 * The file store on a disk that fills up: a save cut short mid-append leaves a torn journal line,
 * and whatever comes next (another save, a failed compaction, a crash) must leave a state that loads,
 * holding every save that was answered "saved". On a real small file system (tmpfs, which CI can
 * mount as root), else under a file-size limit (RLIMIT_FSIZE) that cuts writes the same way.
 */

/** A folder on a 1 MiB tmpfs, or undefined where mounting is not permitted. */
async function smallDisk(): Promise<{ dir: string; unmount(): Promise<void> } | undefined> {
  const dir = await mkdtemp(join(tmpdir(), "driftless-full-disk-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", dir], { stdio: "ignore" });
  } catch {
    await rmdir(dir);
    return undefined;
  }
  return {
    dir,
    async unmount() {
      execFileSync("umount", [dir], { stdio: "ignore" });
      await rmdir(dir);
    },
  };
}

/**
 * The store's steps as a process of its own runs them (the store bundled at `store`, in `dir`): 100
 * records saved; one change journaled; the disk filled (mode "tmpfs") or the size limit met (mode
 * "limit") by a save whose line is 200 KiB; a little room made again (a file of someone else's
 * shrinks); then a small save of the same state object, as a pass saves again. Prints what each save
 * answered.
 */
const scenario = (store: string) => `
import { open, rm, stat, truncate } from "node:fs/promises";
import { join } from "node:path";
const [dir, mode] = process.argv.slice(2);
const { createFileStore } = await import(${JSON.stringify(store)});
const outcome = (promise) => promise.then(() => "saved", (error) => error.message);
const record = (name, extra = {}) => ({ kind: "DataPipe", name, serverId: "id-" + name, applied: { padding: "x".repeat(600) }, ...extra });
const store = createFileStore(join(dir, "state"));
const state = await store.load();
for (let i = 0; i < 100; i++) state.resources["DataPipe/p" + i] = record("p" + i);
await store.save(state);
state.resources["DataPipe/p0"] = record("p0", { serverId: "changed" });
await store.save(state);
const filler = join(dir, "filler");
if (mode === "tmpfs") {
  const handle = await open(filler, "w");
  try { for (;;) await handle.write(Buffer.alloc(4096)); } catch {} finally { await handle.close(); }
}
state.resources["DataPipe/p1"] = record("p1", { applied: { padding: "y".repeat(200 * 1024) } });
const big = await outcome(store.save(state));
if (mode === "tmpfs") {
  await truncate(filler, (await stat(filler)).size - 8192);
}
state.resources["DataPipe/p1"] = record("p1");
state.resources["DataPipe/p2"] = record("p2", { serverId: "after the full disk" });
const small = await outcome(store.save(state));
await store.close();
await rm(filler, { force: true });
console.log(JSON.stringify({ big, small }));
`;

const store = bundled("src/state/file-store.ts");

/** Runs the scenario in a child process; `limitBlocks` caps the size of any file it writes (512-byte blocks). */
async function runScenario(scratch: string, dir: string, mode: "tmpfs" | "limit", limitBlocks?: number) {
  const script = join(scratch, "scenario.mjs");
  await writeFile(script, scenario(store()));
  const node = `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(script)} ${JSON.stringify(dir)} ${mode}`;
  // SIGXFSZ ignored: a write over the limit then fails with EFBIG, as a full disk's fails with ENOSPC.
  const shell = limitBlocks ? `trap '' XFSZ; ulimit -f ${limitBlocks}; ${node}` : node;
  const child = spawn("sh", ["-c", shell], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk;
  });
  child.stderr.on("data", (chunk: Buffer) => {
    err += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  expect(code, err).toBe(0);
  return JSON.parse(out) as { big: string; small: string };
}

describe("the file store when the disk fills up mid-append", () => {
  let disk: Awaited<ReturnType<typeof smallDisk>>;
  let scratch: string;
  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), "driftless-limit-"));
    // Last: nothing that could fail comes between the mount and the hook that unmounts it.
    disk = await smallDisk();
  });
  afterAll(async () => {
    await disk?.unmount();
    await rm(scratch, { recursive: true, force: true });
  });

  const expectEverySavedChange = async (dir: string, saves: { big: string; small: string }) => {
    const loaded = await createFileStore(join(dir, "state"), { readOnly: true }).load();

    expect(saves.big).toMatch(/^cannot write the state .*(ENOSPC|EFBIG)/);
    expect(saves.small).toBe("saved");
    expect(Object.keys(loaded.resources)).toHaveLength(100);
    expect(loaded.resources["DataPipe/p0"]?.serverId).toBe("changed");
    expect(loaded.resources["DataPipe/p1"]?.applied).toEqual({ padding: "x".repeat(600) });
    expect(loaded.resources["DataPipe/p2"]?.serverId).toBe("after the full disk");
  };

  it("on a full tmpfs: cuts the torn line before the next append, which lands, and every later load has it", async (context) => {
    if (!disk)
      return context.skip("mounting a tmpfs is not permitted here: the file-size limit test stands in");

    const saves = await runScenario(scratch, disk.dir, "tmpfs");

    await expectEverySavedChange(disk.dir, saves);
  });

  it("under a file-size limit: cuts the torn line before the next append, which lands, and every later load has it", async () => {
    const dir = join(scratch, "limited");
    await mkdir(dir);

    // 128 KiB: the 70 KiB snapshot fits, the 200 KiB journal line does not.
    const saves = await runScenario(scratch, dir, "limit", 256);

    await expectEverySavedChange(dir, saves);
  });
});
