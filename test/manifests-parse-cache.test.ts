import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadManifests } from "../src/manifests/load.js";
import { createParseCache } from "../src/manifests/read-file.js";

/** The daemon's parse cache: a pass reads every file, and parses again only those whose text changed. */

const key = (name: string, display: string) =>
  `apiVersion: driftless/v1\nkind: ApiKey\nmetadata:\n  name: ${name}\nspec:\n  organizationId: 9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f\n  keyId: 00000000-0000-4000-8000-000000000001\n  name: ${display}\n  roles: [developer]\n`;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "driftless-parse-cache-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

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

    expect(cached.manifests.map((m) => (m.spec as { name: string }).name)).toEqual(["FIRST"]);
    expect(cached.problems).toEqual(fresh.problems);
    expect(cached.problems).toHaveLength(1);
    expect(JSON.stringify(cached.manifests)).toBe(JSON.stringify(fresh.manifests));
    expect([...cache.files.keys()].sort()).toEqual(["a.yaml", "bad.yaml"]);
  });
});
