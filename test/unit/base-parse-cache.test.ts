import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadRevision, type ManifestSet } from "../../src/manifests/load.js";
import { createParseCache } from "../../src/manifests/read-file.js";
import { loadBase } from "../../src/review/git-manifests.js";

/**
 * `plan --base` reads the base revision, then the working tree: a file whose text is the same at both
 * is parsed once, its manifests shared; one whose text differs is parsed again.
 */

const key = (name: string, keyName: string, n: number) =>
  `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ${name}
spec:
  organizationId: 11111111-2222-4333-8444-555555555555
  keyId: 0a0b0c0d-0000-4000-8000-00000000000${n}
  name: ${keyName}
  roles: [developer]
`;

let root: string;
let manifests: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-base-cache-"));
  manifests = join(root, "manifests");
  await mkdir(manifests);
  await writeFile(join(manifests, "same.yaml"), key("same", "ci", 1));
  await writeFile(join(manifests, "changed.yaml"), key("changed", "deploy", 2));
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd: root });
  git("init", "-q");
  git("add", ".");
  git("commit", "-qm", "base");
  await writeFile(join(manifests, "changed.yaml"), key("changed", "deploy-2", 2));
});
afterEach(() => rm(root, { recursive: true, force: true }));

describe("plan --base's two reads", () => {
  it("share the manifests of a file whose text did not change, and parse a changed one again", async () => {
    const cache = createParseCache();

    const base = await loadBase("HEAD", manifests, cache);
    const head = await loadRevision(manifests, { cache });

    const byName = (set: ManifestSet, name: string) => set.manifests.find((m) => m.name === name);
    expect(head.manifests).toHaveLength(2);
    expect(byName(head, "same")).toBe(byName(base, "same"));
    expect(byName(head, "changed")).not.toBe(byName(base, "changed"));
    expect(byName(head, "changed")?.spec).toMatchObject({ name: "deploy-2" });
    expect(head.manifests).toEqual((await loadRevision(manifests)).manifests);
  });
});
