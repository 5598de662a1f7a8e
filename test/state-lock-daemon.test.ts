import { utimes } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createFileStore, LOCK_FILE } from "../src/state/file-store.js";
import { files, statusOf, useDaemonRun } from "./helpers/daemon-run.js";

/**
 * `driftless run` with the file store, stalled (SIGSTOP) past the lock's stale period while another
 * process takes the state folder over: when it resumes, it must send nothing more. Needs dist/ built.
 */

const run = useDaemonRun();

describe("a daemon that lost its state lock during a stall", () => {
  it("sends no request when it resumes, and says that another process holds the lock", async () => {
    const d = await run.start();
    await d.waitForLog((l) => l.msg === "pass finished");
    const stateDir = join(run.root, "state");

    // A frozen container: long enough for the lock to go stale and for another driftless to take it.
    d.child.kill("SIGSTOP");
    const old = new Date(Date.now() - 10 * 60_000);
    await utimes(join(stateDir, LOCK_FILE), old, old);
    const successor = createFileStore(stateDir);
    await successor.load();
    d.child.kill("SIGCONT");
    const revision = await run.layout.publish(files("ci-deployer-renamed"));
    await d.waitForLog(
      (l) => (l.msg === "pass finished" || l.msg === "pass failed") && l.revision === revision,
    );
    const { passError } = (await statusOf(d)) as { passError?: string | null };
    await successor.close();

    const renames = run
      .keyPatches()
      .filter((r) => (r.body as { name?: string }).name === "ci-deployer-renamed");
    expect(renames).toEqual([]);
    expect(passError).toContain("this process no longer holds the state lock");
    expect(passError).toContain(`process ${process.pid} on `);
  });
});
