import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadManifests } from "../src/manifests/load.js";
import { positionOf } from "../src/manifests/manifest.js";
import { createGitSyncLayout } from "./helpers/git-sync-layout.js";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "driftless-load-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `count` AlertWatch files whose alert ids all carry `revision`, so a mixed read shows. */
function tree(revision: string, count: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) {
    files[`team-${i % 7}/watch-${i}.yaml`] =
      `apiVersion: driftless/v1\nkind: AlertWatch\nmetadata:\n  name: watch-${i}\nspec:\n  alertId: ${revision}-${i}\n`;
  }
  return files;
}

describe("loading a git-sync link", () => {
  it("reads the link's target once and names the revision", async () => {
    const layout = await createGitSyncLayout(join(dir, "git"), tree("first", 3));

    const set = await loadManifests(layout.link);

    expect(set.revision).toBe(layout.revision);
    expect(set.root).toBe(join(dir, "git", layout.revision));
    expect(set.superseded).toBe(false);
    expect(set.manifests.map((m) => m.position.file)).toEqual([
      "team-0/watch-0.yaml",
      "team-1/watch-1.yaml",
      "team-2/watch-2.yaml",
    ]);
  });

  it("never mixes two revisions: a pass racing a link swap is one revision, or flagged superseded", async () => {
    const layout = await createGitSyncLayout(join(dir, "git"), tree("rev0", 150));

    for (let round = 1; round <= 3; round++) {
      const [set] = await Promise.all([loadManifests(layout.link), layout.publish(tree(`rev${round}`, 150))]);

      const revisions = new Set(
        set.manifests.map((m) => (m.kind === "AlertWatch" ? m.spec.alertId.split("-")[0] : "?")),
      );
      if (!set.superseded) {
        expect(set.problems).toEqual([]);
        expect(revisions.size).toBe(1);
        expect(set.manifests).toHaveLength(150);
      }
      expect(revisions.size).toBeLessThanOrEqual(1);
    }
  });

  it("flags a pass superseded when the link moves while it reads", async () => {
    // Whether a read overlaps the swap is a matter of timing: each try swaps the link (as git-sync does:
    // a new link renamed over it) right after a read of a large tree began. A read that began before
    // and ended after the swap must be flagged; a try whose read happened to end first is tried again.
    let flagged: Awaited<ReturnType<typeof loadManifests>> | undefined;
    for (let attempt = 1; attempt <= 5 && !flagged; attempt++) {
      const root = join(dir, `git-${attempt}`);
      await Promise.all(
        Object.entries(tree("old", 1500)).map(async ([file, text]) => {
          await mkdir(dirname(join(root, "rev-old", file)), { recursive: true });
          await writeFile(join(root, "rev-old", file), text);
        }),
      );
      await mkdir(join(root, "rev-new"));
      await symlink("rev-old", join(root, "current"));

      const reading = loadManifests(join(root, "current"));
      await symlink("rev-new", join(root, ".link-new"));
      await rename(join(root, ".link-new"), join(root, "current"));
      const set = await reading;

      if (set.superseded) flagged = set;
    }
    expect(flagged?.superseded).toBe(true);
    expect(flagged?.revision).toBe("rev-old");
  });
});

describe("the two readers of a file", () => {
  it("give the same manifests and positions with or without anchors", async () => {
    const root = join(dir, "manifests");
    await mkdir(root);
    const doc = (name: string, labels: string) =>
      `# a comment first\napiVersion: driftless/v1\nkind: Dashboard\nmetadata:\n  name: ${name}\n  labels: ${labels}\nspec:\n  dashboardId: d-${name}\n  name: Board\n  tiles:\n    - key: a\n      name: A\n      x: 0\n      y: 0\n      w: 6\n      h: 3\n      series: [{type: time, dataSource: events, aggFn: count, where: "level:error"}]\n`;
    // Anchors send a file down the careful path; without them it takes the fast one.
    await writeFile(join(root, "plain.yaml"), `---\n${doc("plain", "{team: data}")}`);
    await writeFile(join(root, "anchored.yaml"), `---\n${doc("anchored", "&labels {team: data}")}`);

    const set = await loadManifests(root);

    const [anchored, plain] = set.manifests;
    expect(set.problems).toEqual([]);
    expect(anchored?.labels).toEqual(plain?.labels);
    expect(anchored?.spec).toEqual({ ...(plain?.spec as object), dashboardId: "d-anchored" });
    expect(anchored?.position).toEqual({ file: "anchored.yaml", line: 3, col: 1 });
    expect(plain?.position).toEqual({ file: "plain.yaml", line: 3, col: 1 });
    expect(plain && positionOf(plain, ["spec", "tiles", 0, "w"])).toEqual({
      file: "plain.yaml",
      line: 16,
      col: 10,
    });
    expect(anchored && positionOf(anchored, ["spec", "tiles", 0, "w"])).toEqual({
      file: "anchored.yaml",
      line: 16,
      col: 10,
    });
  });
});
