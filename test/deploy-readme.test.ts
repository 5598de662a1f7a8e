import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

/**
 * docs/kubernetes.md and docs/operations.md as a user follows them: the files they name exist, their
 * manifests validate, and the commands that make files produce what the deployment needs. The
 * validate check needs the built CLI (`npm run build`).
 */

const repo = fileURLToPath(new URL("..", import.meta.url));

/** The text of a page of docs/. */
function page(name: string): string {
  return readFileSync(join(repo, "docs", name), "utf8");
}

const steps = `${page("kubernetes.md")}\n${page("operations.md")}`;

describe("the Kubernetes and operations docs' steps", () => {
  const work = mkdtempSync(join(tmpdir(), "driftless-docs-steps-"));

  afterAll(() => {
    rmSync(work, { recursive: true, force: true });
  });

  it("name only files of the repository that exist", () => {
    // `deploy/driftless` in a kubectl command is the Deployment, not a folder.
    const paths = [...steps.matchAll(/\b(?:deploy|examples)\/[\w./-]*\w|\bDockerfile\b/g)]
      .map((match) => match[0])
      .filter((path) => path !== "deploy/driftless");

    expect(paths.length).toBeGreaterThan(5);
    expect([...new Set(paths)].filter((path) => !existsSync(join(repo, path)))).toEqual([]);
  });

  it("show manifests that `driftless validate` accepts, once their placeholders are filled", () => {
    const manifests = [...page("operations.md").matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) =>
      (match[1] ?? "").replace(/<[^>]*\bid>/g, "0d3c1b2a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"),
    );
    mkdirSync(join(work, "manifests"));
    manifests.forEach((text, index) => {
      writeFileSync(join(work, "manifests", `docs-${index}.yaml`), text);
    });

    const validate = spawnSync(
      process.execPath,
      [join(repo, "dist/cli.js"), "validate", join(work, "manifests")],
      {
        encoding: "utf8",
      },
    );

    expect(manifests.length).toBeGreaterThan(0);
    expect(validate.stdout + validate.stderr).toMatch(
      new RegExp(`^${manifests.length} valid manifests?, no problems`, "m"),
    );
    expect(validate.status).toBe(0);
  });

  it("create a webhook token that git-sync can put in its webhook URL as it is", () => {
    // Kubernetes expands the Secret's value into git-sync's --webhook-url byte for byte, and Go
    // refuses a URL with a control character, such as a trailing newline, so no webhook would arrive.
    const command = /^\s*(.*>\s*webhook-token)\s*$/m.exec(steps)?.[1] ?? "";

    const run = spawnSync("sh", ["-c", command], { cwd: work, encoding: "utf8" });

    expect(command).not.toBe("");
    expect(run.status).toBe(0);
    expect(readFileSync(join(work, "webhook-token"), "utf8")).toMatch(/^[A-Za-z0-9_~.-]{32,}$/);
  });
});
