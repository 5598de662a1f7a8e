import { mkdtemp, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loadManifests } from "../src/manifests/load.js";
import { createParseCache } from "../src/manifests/read-file.js";

/** The daemon's parse cache: a pass reads every file, and parses again only those whose text changed. */

const key = (name: string, display: string) =>
  `apiVersion: driftless/v1\nkind: ApiKey\nmetadata:\n  name: ${name}\nspec:\n  organizationId: 9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f\n  keyId: 00000000-0000-4000-8000-000000000001\n  name: ${display}\n  roles: [developer]\n`;

/** A time of modification in whole seconds, which utimes sets exactly. */
const WHEN = 1_790_000_000;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "driftless-parse-cache-"));
});
afterEach(async () => {
  vi.useRealTimers();
  await rm(dir, { recursive: true, force: true });
});

/** Writes `file` with times long past, then loads the folder into `cache` as a minute later: settled, not racy. */
async function readSettled(cache: ReturnType<typeof createParseCache>, file: string, text: string) {
  await writeFile(file, text);
  await utimes(file, WHEN, WHEN);
  vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 60_000 });
  await loadManifests(dir, { cache });
  vi.useRealTimers();
}

const names = (set: Awaited<ReturnType<typeof loadManifests>>) =>
  set.manifests.map((m) => (m.spec as { name: string }).name);

describe("loading with a parse cache", () => {
  it("sees an edit of the same size, a removed file and a file's problems again, as a load without it", async () => {
    const cache = createParseCache();
    await writeFile(join(dir, "a.yaml"), key("a", "first"));
    await writeFile(join(dir, "b.yaml"), key("b", "other"));
    await writeFile(join(dir, "bad.yaml"), "kind: [\n");
    await loadManifests(dir, { cache });

    await writeFile(join(dir, "a.yaml"), key("a", "FIRST"));
    await rm(join(dir, "b.yaml"));
    const cached = await loadManifests(dir, { cache });
    const fresh = await loadManifests(dir);

    expect(names(cached)).toEqual(["FIRST"]);
    expect(cached.problems).toEqual(fresh.problems);
    expect(cached.problems).toHaveLength(1);
    expect(JSON.stringify(cached.manifests)).toBe(JSON.stringify(fresh.manifests));
    expect([...cache.files.keys()].sort()).toEqual(["a.yaml", "bad.yaml"]);
  });

  it("sees an edit that keeps the size and sets the time of modification back, long after the last read", async () => {
    const cache = createParseCache();
    const file = join(dir, "a.yaml");
    await readSettled(cache, file, key("a", "first"));

    await writeFile(file, key("a", "FIRST"));
    await utimes(file, WHEN, WHEN);
    expect((await stat(file)).mtimeMs).toBe(WHEN * 1000);
    const cached = await loadManifests(dir, { cache });

    expect(names(cached)).toEqual(["FIRST"]);
  });

  it("sees a file replaced by another of the same size and times (a git-sync revision swap)", async () => {
    const cache = createParseCache();
    const file = join(dir, "a.yaml");
    await readSettled(cache, file, key("a", "first"));

    await writeFile(join(dir, "next.tmp"), key("a", "other"));
    await utimes(join(dir, "next.tmp"), WHEN, WHEN);
    await rm(file);
    await rename(join(dir, "next.tmp"), file);
    const cached = await loadManifests(dir, { cache });

    expect(names(cached)).toEqual(["other"]);
  });
});
