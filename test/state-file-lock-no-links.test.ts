import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { isStateError } from "../src/errors.js";
import { acquireFileLock } from "../src/state/file-lock.js";

/**
 * The state lock on a file system without hard links (some SMB shares answer link() with EPERM): it is
 * created in place instead, and still keeps a second holder out.
 */

vi.mock("node:fs/promises", async (original) => {
  const fs = await original<typeof import("node:fs/promises")>();
  const noLink = async () => {
    throw Object.assign(new Error("EPERM: operation not permitted, link"), { code: "EPERM" });
  };
  return { ...fs, default: { ...fs, link: noLink }, link: noLink };
});

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "driftless-no-links-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

it("takes the lock in place, naming its holder, and refuses a second holder", async () => {
  const path = join(dir, "state.lock");
  const first = await acquireFileLock(path);

  const second = await acquireFileLock(path).catch((error: unknown) => error);

  expect(JSON.parse(await readFile(path, "utf8"))).toMatchObject({
    pid: process.pid,
    token: first.holder.token,
  });
  expect(isStateError(second)).toBe(true);
  expect((second as Error).message).toContain(`locked by process ${process.pid} `);
  expect(await readdir(dir)).toEqual(["state.lock"]);
  await first.release();
  expect(await readdir(dir)).toEqual([]);
});
