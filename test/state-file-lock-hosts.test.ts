import { type ChildProcess, spawn } from "node:child_process";
import { statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isStateError } from "../src/errors.js";
import { acquireFileLock, type FileLock } from "../src/state/file-lock.js";
import { bundled } from "./helpers/bundle.js";
import { until as eventually } from "./helpers/daemon-run.js";
import { until } from "./helpers/wait.js";

/**
 * The state lock between hosts whose clocks disagree (two pods on a shared volume): the holder is a
 * real process of the built lock, on a host named "other-pod" whose clock is five minutes slow. Its
 * lock must be judged by the file system's times, never by comparing the two hosts' clocks.
 */

/** The lock as the build bundles it, for the holder process. */
const built = bundled("src/state/file-lock.ts");

/** A process holding the lock at `path` as host "other-pod", its wall clock `skewMs` behind. */
function holder(path: string, skewMs: number): { child: ChildProcess; ready: Promise<void> } {
  const code = `
import os from "node:os";
import { syncBuiltinESMExports } from "node:module";
os.hostname = () => "other-pod";
syncBuiltinESMExports();
const RealDate = Date;
globalThis.Date = class extends RealDate {
  constructor(...args) { super(...(args.length > 0 ? args : [RealDate.now() - ${skewMs}])); }
  static now() { return RealDate.now() - ${skewMs}; }
};
const { acquireFileLock } = await import(${JSON.stringify(built())});
await acquireFileLock(${JSON.stringify(path)}, { refreshMs: 50 });
console.log("held");
setInterval(() => {}, 1000);
`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", code], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const ready = new Promise<void>((done, fail) => {
    let err = "";
    child.stderr?.on("data", (chunk) => {
      err += chunk;
    });
    child.stdout?.on("data", (chunk) => {
      if (String(chunk).includes("held")) done();
    });
    child.once("exit", (code) => fail(new Error(`the holder exited ${code}: ${err}`)));
  });
  return { child, ready };
}

let dir: string;
let child: ChildProcess | undefined;
const taken: FileLock[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "driftless-lock-hosts-"));
});
afterEach(async () => {
  for (const lock of taken.splice(0)) await lock.release();
  if (child && child.exitCode === null && child.signalCode === null) {
    const gone = new Promise((done) => child?.once("exit", done));
    child.kill("SIGKILL");
    await gone;
  }
  await rm(dir, { recursive: true, force: true });
});

describe("the state lock held from another host", () => {
  it("is respected while its holder lives, though that host's clock is five minutes slow", async () => {
    const path = join(dir, "state.lock");
    const running = holder(path, 5 * 60_000);
    child = running.child;
    await running.ready;
    const created = statSync(path).mtimeMs;
    await until(() => statSync(path).mtimeMs !== created);

    const attempt = await acquireFileLock(path, { staleMs: 60_000 }).then(
      (lock) => {
        taken.push(lock);
        return "taken over";
      },
      (error: unknown) => (isStateError(error) ? error.message : String(error)),
    );

    expect(attempt).toContain("locked by process");
    expect(attempt).toContain("on other-pod");
  });

  it("is taken over once its holder is gone and the file system's clock says it is stale, though that host's clock ran five minutes fast", async () => {
    const path = join(dir, "state.lock");
    const running = holder(path, -5 * 60_000);
    child = running.child;
    await running.ready;
    const created = statSync(path).mtimeMs;
    await until(() => statSync(path).mtimeMs !== created);
    const gone = new Promise((done) => running.child.once("exit", done));
    running.child.kill("SIGKILL");
    await gone;

    const lock = await eventually(
      () => acquireFileLock(path, { staleMs: 300 }).catch(() => undefined),
      5_000,
    );
    taken.push(lock);

    expect(lock.holder.hostname).not.toBe("other-pod");
  });
});
