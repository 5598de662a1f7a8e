import { execFileSync, spawnSync } from "node:child_process";
import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { repo } from "./helpers/cli.js";

/**
 * The CI recipes of docs/ci run as written: their commands are taken from the YAML (not copied
 * here) and run by bash in a temporary git repository with two commits. Their install step installs
 * the tarball `npm pack` made of this build, at the path the recipe names (so the recipe's name for it
 * is the one npm gives it): `npm` is a fake that lays the package out as `npm install --global` does,
 * linking its dependencies to the repository's own (tests reach no registry; test/install-package
 * packs a fresh clone). `gh` and `curl` are fakes that record what they were asked, so no CI service
 * is contacted.
 */

type Run = { code: number | null; stdout: string; stderr: string };

let root: string;
let bin: string;
let baseSha: string;
/** The tarball of this build, packed once for the file (dist/ is built by then). */
let tarball: string;
let packs: string;

beforeAll(async () => {
  packs = await mkdtemp(join(tmpdir(), "driftless-ci-pack-"));
  const out = execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", packs], {
    cwd: repo,
    encoding: "utf8",
  });
  tarball = join(packs, (JSON.parse(out) as Array<{ filename: string }>)[0]?.filename ?? "");
});

afterAll(async () => {
  await rm(packs, { recursive: true, force: true });
});

const git = (...args: string[]) =>
  execFileSync("git", ["-c", "user.email=ci@example.com", "-c", "user.name=ci", ...args], {
    cwd: root,
    encoding: "utf8",
  });

function bash(script: string, env: Record<string, string>): Run {
  const result = spawnSync("bash", ["--noprofile", "--norc", "-eo", "pipefail", "-c", script], {
    cwd: root,
    encoding: "utf8",
    env: { PATH: `${bin}:${process.env.PATH ?? ""}`, HOME: root, ...env },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A fake command: logs its arguments, one call a line, and runs `body`. */
async function fake(name: string, body: string) {
  const path = join(bin, name);
  await writeFile(path, `#!/bin/bash\necho "$*" >> "${join(root, `${name}.log`)}"\n${body}\n`);
  await chmod(path, 0o755);
}

const calls = async (name: string) =>
  (await readFile(join(root, `${name}.log`), "utf8").catch(() => "")).split("\n").filter(Boolean);

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-ci-"));
  bin = join(root, ".bin");
  await mkdir(bin);
  // npm install --global TARBALL: the package under lib/node_modules, its program linked into bin/.
  const home = join(root, ".global", "driftless");
  await fake(
    "npm",
    `[ "$1 $2" = "install --global" ] || exit 2
rm -rf "${home}" && mkdir -p "${home}" && tar -xzf "$3" -C "${home}" --strip-components=1
ln -s "${join(repo, "node_modules")}" "${home}/node_modules"
chmod +x "${home}/dist/cli.js" && ln -sf "${home}/dist/cli.js" "${join(bin, "driftless")}"`,
  );
  await mkdir(join(root, "tools"));
  await cp(tarball, join(root, "tools", basename(tarball)));
  // gh: lists the comment made by an earlier POST, if any.
  await fake(
    "gh",
    `if [[ "$*" == *--paginate* ]]; then cat "${join(root, "comment-id")}" 2>/dev/null || true; fi
if [[ "$*" == *"--method POST"* ]]; then echo 101 > "${join(root, "comment-id")}"; fi
if [[ "$*" == *body=@plan.md* ]]; then cp plan.md "${join(root, "posted.md")}"; fi`,
  );
  // curl: lists the note made by an earlier POST, if any.
  await fake(
    "curl",
    `if [[ "$*" != *--request* ]]; then
  if [ -f "${join(root, "note-id")}" ]; then echo '[{"id": 55, "body": "<!-- driftless-plan -->\\nold"}]'; else echo '[]'; fi
fi
if [[ "$*" == *"--request POST"* ]]; then touch "${join(root, "note-id")}"; fi
if [[ "$*" == *body@plan.md* ]]; then cp plan.md "${join(root, "posted.md")}"; fi`,
  );
  await cp(join(repo, "examples"), join(root, "manifests"), { recursive: true });
  await rm(join(root, "manifests", "secrets"), { recursive: true });
  await writeFile(
    join(root, ".gitignore"),
    ".bin/\n.global/\ntools/\n*.log\nplan.md\nposted.md\ncomment-id\nnote-id\n",
  );
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-qm", "base");
  baseSha = git("rev-parse", "HEAD").trim();
  git("checkout", "-qb", "change");
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function commitChange(from: string, to: string) {
  const file = join(root, "manifests", "organization.yaml");
  await writeFile(file, (await readFile(file, "utf8")).replace(from, to));
  git("commit", "-qam", "change");
}

/**
 * A change that tries to hide itself from the plan: beside its edit, it commits a copy of its own
 * manifests in a folder named after the base commit, at the root of the checkout, where the recipes run.
 */
async function hideBehindBaseFolder() {
  const file = join(root, "manifests", "organization.yaml");
  await writeFile(file, (await readFile(file, "utf8")).replace("name: Acme Analytics", "name: Acme"));
  await cp(join(root, "manifests"), join(root, baseSha), { recursive: true });
  git("add", "-A");
  git("commit", "-qm", "change, hidden");
}

describe("docs/ci/github-actions.yaml", () => {
  type Step = { name?: string; run?: string; env?: Record<string, string> };

  async function workflow() {
    const doc = parse(await readFile(join(repo, "docs", "ci", "github-actions.yaml"), "utf8"));
    const job = doc.jobs.plan as { env: Record<string, string>; steps: Step[] };
    return { env: job.env, steps: job.steps.filter((s) => s.run) };
  }

  /** Runs every `run` step in order, as the runner does, with `${{ }}` expressions filled in. */
  async function runJob(): Promise<Record<string, Run>> {
    const { env, steps } = await workflow();
    const outputFile = join(root, "github-output");
    await writeFile(outputFile, "");
    const results: Record<string, Run> = {};
    for (const step of steps) {
      const outputs = Object.fromEntries(
        (await readFile(outputFile, "utf8")).split("\n").flatMap((line) => {
          const [key, value] = line.split("=");
          return key && value !== undefined ? [[key, value]] : [];
        }),
      );
      const values: Record<string, string> = {
        "github.event.pull_request.base.sha": baseSha,
        "github.event.pull_request.number": "7",
        "github.token": "fake-token",
        "steps.plan.outputs.code": outputs.code ?? "",
      };
      const fill = (text: string) =>
        text.replace(/\$\{\{\s*(.+?)\s*\}\}/g, (_, expression: string) => {
          const value = values[expression];
          if (value === undefined) throw new Error(`the test does not know \${{ ${expression} }}`);
          return value;
        });
      const stepEnv = Object.fromEntries(
        Object.entries({ ...env, ...step.env }).map(([key, value]) => [key, fill(String(value))]),
      );
      results[step.name ?? "?"] = bash(step.run ?? "", {
        ...stepEnv,
        GITHUB_OUTPUT: outputFile,
        GITHUB_REPOSITORY: "acme/platform",
      });
    }
    return results;
  }

  it("posts the plan once, updates the same comment on the next push, and passes with changes", async () => {
    await commitChange("name: Acme Analytics", "name: Acme");

    const first = await runJob();
    const posted = await readFile(join(root, "posted.md"), "utf8");
    await commitChange("name: Acme", "name: Acme Inc");
    const second = await runJob();

    expect(first["Install driftless"]?.code, first["Install driftless"]?.stderr).toBe(0);
    expect(first.Validate?.code).toBe(0);
    expect(first["Plan against the base"]?.stdout).toContain('      name: "Acme Analytics" -> "Acme"');
    expect(posted).toMatch(/^<!-- driftless-plan -->\n\*\*driftless plan\*\*: 1 to send; 12 in sync\./);
    expect(posted).toContain("Organization/acme-analytics: PATCH /v1/organizations/");
    expect(first["Fail on plan errors"]?.code).toBe(0);
    expect(second["Fail on plan errors"]?.code).toBe(0);
    const gh = (await calls("gh")).filter((call) => call.includes("--method"));
    expect(gh).toEqual([
      "api --method POST repos/acme/platform/issues/7/comments --field body=@plan.md",
      "api --method PATCH repos/acme/platform/issues/comments/101 --field body=@plan.md",
    ]);
  });

  it("shows the change of a pull request that adds a folder named after its base commit", async () => {
    await hideBehindBaseFolder();

    const result = await runJob();

    expect(result["Plan against the base"]?.stdout).toContain('      name: "Acme Analytics" -> "Acme"');
    expect(await readFile(join(root, "posted.md"), "utf8")).toContain("1 to send");
  });

  it("fails the job on an invalid manifest, after posting the plan that shows it", async () => {
    await commitChange("name: Acme Analytics", "name: [not, text]");

    const result = await runJob();

    expect(result.Validate?.code).toBe(1);
    expect(await readFile(join(root, "posted.md"), "utf8")).toContain("manifest problem");
    expect(result["Fail on plan errors"]?.code).toBe(1);
    expect(result["Fail on plan errors"]?.stdout).toContain("::error::driftless plan found errors (exit 1)");
  });
});

describe("docs/ci/gitlab-ci.yaml", () => {
  async function runJob(): Promise<Run> {
    const doc = parse(await readFile(join(repo, "docs", "ci", "gitlab-ci.yaml"), "utf8"));
    const job = doc["driftless-plan"] as {
      variables: Record<string, string>;
      before_script: string[];
      script: string[];
    };
    return bash([...job.before_script, ...job.script].join("\n"), {
      ...job.variables,
      CI_MERGE_REQUEST_DIFF_BASE_SHA: baseSha,
      CI_API_V4_URL: "https://gitlab.invalid/api/v4",
      CI_PROJECT_ID: "3",
      CI_MERGE_REQUEST_IID: "7",
      PLAN_NOTE_TOKEN: "fake-token",
    });
  }

  it("posts one note, updates it on the next push, and passes with changes", async () => {
    await commitChange("name: Acme Analytics", "name: Acme");

    const first = await runJob();
    await commitChange("name: Acme", "name: Acme Inc");
    const second = await runJob();

    expect(first.code).toBe(0);
    expect(first.stdout).toContain('      name: "Acme Analytics" -> "Acme"');
    expect(second.code).toBe(0);
    expect(await readFile(join(root, "posted.md"), "utf8")).toContain('name: "Acme Analytics" -> "Acme Inc"');
    const writes = (await calls("curl")).filter((call) => call.includes("--request"));
    expect(writes).toHaveLength(2);
    expect(writes[0]).toContain("--request POST");
    expect(writes[0]).toContain("https://gitlab.invalid/api/v4/projects/3/merge_requests/7/notes");
    expect(writes[1]).toContain("--request PUT");
    expect(writes[1]).toContain("https://gitlab.invalid/api/v4/projects/3/merge_requests/7/notes/55");
  });

  it("shows the change of a merge request that adds a folder named after its base commit", async () => {
    await hideBehindBaseFolder();

    const result = await runJob();

    expect(result.stdout).toContain('      name: "Acme Analytics" -> "Acme"');
    expect(await readFile(join(root, "posted.md"), "utf8")).toContain("1 to send");
  });

  it("fails on an invalid manifest", async () => {
    await commitChange("name: Acme Analytics", "name: [not, text]");

    const result = await runJob();

    expect(result.code).toBe(1);
  });
});
