import { execFileSync } from "node:child_process";
import { cp, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { driftless, repo } from "./helpers/cli.js";

/**
 * `driftless plan --base` as a pull request's CI job runs it: the built CLI, a temporary git repository
 * whose HEAD is the base and whose working tree is the change, and an environment with nothing but
 * PATH and HOME (no state, URL, credential or secret).
 */

const CANARY = "base-canary-9d8c7b6a";
// Any C0/C1 control character, DEL, or a lone surrogate: none may reach any output raw.
const RAW_CONTROL = new RegExp(
  [
    "[\\u0000-\\u0009\\u000b-\\u001f\\u007f-\\u009f]",
    "[\\ud800-\\udbff](?![\\udc00-\\udfff])",
    "(?<![\\ud800-\\udbff])[\\udc00-\\udfff]",
  ].join("|"),
);

let root: string;
let dir: string;

const git = (...args: string[]) =>
  execFileSync("git", ["-c", "user.email=ci@example.com", "-c", "user.name=ci", ...args], {
    cwd: root,
    encoding: "utf8",
  });

/** plan --base HEAD of the working tree, in an environment with only PATH and HOME (and `env`). */
function plan(args: string[] = [], env: Record<string, string> = {}) {
  return driftless(["plan", "--base", "HEAD", dir, ...args], { HOME: root, ...env });
}

async function edit(file: string, change: (text: string) => string) {
  const path = join(dir, file);
  await writeFile(path, change(await readFile(path, "utf8")));
}

function expectClean(output: string) {
  expect(output).not.toMatch(RAW_CONTROL);
  expect(output).not.toContain(CANARY);
}

const ENDPOINT = `---
apiVersion: driftless/v1
kind: ReversePrivateEndpoint
metadata:
  name: billing-msk
spec:
  organizationId: 9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f
  serviceId: 2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7
  description: MSK cluster of the billing team
  type: MSK_MULTI_VPC
  mskClusterArn: arn:aws:kafka:eu-west-1:111122223333:cluster/billing/5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d-9
  mskAuthentication: SASL_SCRAM
`;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-base-"));
  dir = join(root, "manifests");
  await cp(join(repo, "examples"), dir, { recursive: true });
  await rm(join(dir, "secrets"), { recursive: true });
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-qm", "base");
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("driftless plan --base (built CLI, temporary git repository)", () => {
  it("plans nothing for equal trees: exit 0, and a Markdown comment with an empty table", () => {
    const text = plan();
    const markdown = plan(["-o", "markdown"]);

    expect(text.stderr).toBe("");
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^Plan: 0 to send, 0 to adopt, 13 in sync, .*0 manifest problem\(s\)\.$/m);
    expect(markdown.code).toBe(0);
    expect(markdown.stdout).toContain("| outcome | resources |\n|---|---:|\n\n");
    expect(markdown.stdout).not.toContain("<details>");
    expect(markdown.stdout).toContain("no changes; 13 in sync");
  });

  it("reads no secret, state or setting: runs with only PATH and HOME while secrets are referenced", () => {
    const result = plan(["-o", "json"], { EXAMPLE_KAFKA_PASSWORD: CANARY });

    expect(result.code).toBe(0);
    const doc = JSON.parse(result.stdout);
    expect(doc).toMatchObject({ formatVersion: 1, mode: "base", secrets: "reference", exitCode: 0 });
    expect(doc.base.revision).toBe(git("rev-parse", "HEAD").trim());
    expect(doc.notices.join(" ")).toContain("secrets are compared by reference");
    expectClean(result.stdout + result.stderr);
  });

  it("shows a changed secret reference as (reference changed) and sends only that credential object", async () => {
    await edit("data-pipes/orders-from-kafka.yaml", (t) =>
      t.replace("EXAMPLE_KAFKA_PASSWORD", "KAFKA_PASSWORD_V2"),
    );

    const result = plan([], { EXAMPLE_KAFKA_PASSWORD: CANARY, KAFKA_PASSWORD_V2: CANARY });
    const json = JSON.parse(plan(["-o", "json"]).stdout);

    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      "~ DataPipe/orders-from-kafka: PATCH /v1/organizations/9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f/services/2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7/datapipes/1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b\n      source.kafka.credentials.password: (reference changed)\n",
    );
    const sent = json.resources.find((r: { name: string }) => r.name === "orders-from-kafka");
    expect(sent.request.body).toEqual({
      source: { kafka: { credentials: { username: "driftless-orders", password: "(reference changed)" } } },
    });
    expectClean(result.stdout + JSON.stringify(json));
  });

  it("plans nothing for a comment-only change, reordered keys and a renamed file", async () => {
    await edit("api-keys.yaml", (t) =>
      t
        .replace("# The key CI deploys with", "# The key that CI deploys with (reworded)")
        .replace(
          "  name: ci-deployer\n  roles: [developer]\n",
          "  roles: [developer]\n  name: ci-deployer\n",
        ),
    );
    git("mv", "manifests/watches.yaml", "manifests/observability-watches.yaml");

    const result = plan();

    expect(result.stdout).toContain("Plan: 0 to send, 0 to adopt, 13 in sync");
    expect(result.code).toBe(0);
  });

  it("shows a renamed key as a rename whose record follows it (nothing to send), and its old name not as removed", async () => {
    await edit("api-keys.yaml", (t) =>
      t.replace("metadata:\n  name: ci-deployer\n", "metadata:\n  name: deployer\n"),
    );

    const result = plan();
    const json = JSON.parse(plan(["-o", "json"]).stdout);
    const renamed = json.resources.find((r: { name: string }) => r.name === "deployer");

    expect(result.code).toBe(0);
    expect(renamed).toMatchObject({ renamedFrom: "ci-deployer", outcome: "none" });
    expect(renamed.notes).toContain(
      "renamed from ApiKey/ci-deployer: its record (server ids, tile ids, the list entries driftless added) follows it to ApiKey/deployer",
    );
    expect(json.resources.some((r: { outcome: string }) => r.outcome === "unmanaged")).toBe(false);
  });

  it("says a renamed dashboard keeps its record, tile ids included", async () => {
    await edit("dashboards/platform-overview.yaml", (t) =>
      t.replace("name: platform-overview", "name: overview"),
    );

    const json = JSON.parse(plan(["-o", "json"]).stdout);
    const renamed = json.resources.find((r: { kind: string; name: string }) => r.name === "overview");

    expect(renamed).toMatchObject({ kind: "Dashboard", renamedFrom: "platform-overview", outcome: "none" });
    expect(JSON.stringify(renamed.notes)).not.toContain("NOT kept");
  });

  it("creates a new endpoint with a POST marked +, then sends the pipe that names it its id, as apply does in one pass", async () => {
    await edit("reverse-private-endpoints.yaml", (t) => t + ENDPOINT);
    await edit("data-pipes/orders-from-kafka.yaml", (t) =>
      t.replace(
        "reversePrivateEndpoints: [orders-msk]",
        "reversePrivateEndpoints: [orders-msk, billing-msk]",
      ),
    );

    const result = plan();

    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      "+ ReversePrivateEndpoint/billing-msk: POST /v1/organizations/9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f/services/2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7/datapipesReversePrivateEndpoints\n",
    );
    expect(result.stdout).toContain(
      '      source.kafka.reversePrivateEndpointIds: ["<id of ReversePrivateEndpoint/orders-msk>"] -> ["<id of ReversePrivateEndpoint/orders-msk>","<id of ReversePrivateEndpoint/billing-msk>"]\n',
    );
  });

  it("refuses a changed endpoint as apply would: exit 1", async () => {
    await edit("reverse-private-endpoints.yaml", (t) =>
      t.replace("description: MSK cluster of the orders team", "description: MSK cluster (moved)"),
    );

    const result = plan();

    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^! ReversePrivateEndpoint\/orders-msk: error: description changed, but a reverse private endpoint cannot be updated/m,
    );
  });

  it("lists a removed manifest as no longer managed: nothing sent, exit 2, outcome unmanaged in JSON", async () => {
    await rm(join(dir, "watches.yaml"));

    const result = plan();
    const json = JSON.parse(plan(["-o", "json"]).stdout);

    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      "- AlertWatch/ingest-lag: no longer managed: its manifest was removed: nothing is sent",
    );
    expect(json.resources.filter((r: { outcome: string }) => r.outcome === "unmanaged")).toHaveLength(2);
    expect(json.summary).toMatchObject({ toSend: 0, unmanaged: 2 });
  });

  it("reports an invalid head manifest with its file, line and field: exit 1, not a removal", async () => {
    await edit("api-keys.yaml", (t) => t.replace("roles: [developer]", "roles: developer"));

    const result = plan();

    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^x api-keys\.yaml:\d+:\d+ {2}ApiKey\/ci-deployer {2}spec\.roles: /m);
    expect(result.stdout).not.toContain("no longer managed");
  });

  it("blames a new manifest addressing a key the base manages, not the base's own, even when read first", async () => {
    const base = await readFile(join(dir, "api-keys.yaml"), "utf8");
    // a-… is read before api-keys.yaml.
    await writeFile(
      join(dir, "a-copy.yaml"),
      base.replace("name: ci-deployer\n  labels", "name: ci-copy\n  labels"),
    );

    const result = plan();

    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^x a-copy\.yaml:\d+:\d+ {2}ApiKey\/ci-copy {2}spec\.keyId: addresses the same API object as ApiKey\/ci-deployer \(api-keys\.yaml:\d+\)/m,
    );
    expect(result.stdout).not.toMatch(/^x api-keys\.yaml/m);
  });

  it("plans the change of a hostile value on one escaped line in every output", async () => {
    const hostile = String.raw`evil\n~ ApiKey/forged: PATCH /v1/x\e[31m | <details> \u0060\u0060\u0060 \ud800 \u009b2J`;
    await edit("api-keys.yaml", (t) =>
      t.replace("  name: ci-deployer\n  roles", `  name: "${hostile}"\n  roles`),
    );

    const outputs = ["text", "json", "markdown"].map((format) => plan(["-o", format]));

    for (const output of outputs) {
      expect(output.code).toBe(2);
      expectClean(output.stdout);
    }
    const [text, , markdown] = outputs.map((o) => o.stdout);
    expect(text).not.toMatch(/^\s*~ ApiKey\/forged/m);
    expect(text).toContain(
      String.raw`  name: "ci-deployer" -> "evil\n~ ApiKey/forged: PATCH /v1/x\u001b[31m | <details> `,
    );
    expect(markdown?.match(/^<details>/gm)).toHaveLength(1);
    expect(markdown).not.toMatch(/^~ ApiKey\/forged/m);
  });

  it("keeps the Markdown of a 5,000-resource change under GitHub's comment limit, with a truncation note", async () => {
    const keys = (suffix: string) =>
      Array.from(
        { length: 5_000 },
        (_, i) =>
          `apiVersion: driftless/v1\nkind: ApiKey\nmetadata:\n  name: k-${i}\nspec:\n  organizationId: 9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f\n  keyId: 0a0b0c0d-0000-4000-8000-${String(i).padStart(12, "0")}\n  name: key-${i}${suffix}\n`,
      ).join("---\n");
    await writeFile(join(dir, "many-keys.yaml"), keys(""));
    git("add", ".");
    git("commit", "-qm", "5,000 keys");
    await writeFile(join(dir, "many-keys.yaml"), keys("-renamed"));

    const result = plan(["-o", "markdown"]);

    expect(result.code).toBe(2);
    expect(result.stdout.length).toBeLessThan(65_536);
    expect(result.stdout).toContain("| to send | 5000 |");
    expect(result.stdout).toMatch(
      /\*\*\d+ more block\(s\) not shown\*\*: a comment is limited to 65536 characters/,
    );
  });

  it("takes another folder as the base", async () => {
    const other = join(root, "base-folder");
    await cp(dir, other, { recursive: true });
    await edit("organization.yaml", (t) => t.replace("name: Acme Analytics", "name: Acme"));

    const result = driftless(["plan", "--base", other, dir], { HOME: root });

    expect(result.code).toBe(2);
    expect(result.stdout).toContain('      name: "Acme Analytics" -> "Acme"\n');
  });

  it("reads a bare --base as a git revision even where a folder of that name exists", async () => {
    const sha = git("rev-parse", "HEAD").trim();
    await edit("organization.yaml", (t) => t.replace("name: Acme Analytics", "name: Acme"));
    // A change that also adds, at the root of its checkout, a folder named after its base commit,
    // holding its own manifests: read as the base, it would plan "no changes".
    await cp(dir, join(root, sha), { recursive: true });

    const result = driftless(["plan", "--base", sha, "manifests"], { HOME: root }, root);

    expect(result.stderr).toBe("");
    expect(result.stdout).toContain('      name: "Acme Analytics" -> "Acme"\n');
    expect(result.code).toBe(2);
  });

  it("takes a folder only when it is written as a path, and says so for a bare name", async () => {
    await cp(dir, join(root, "base-folder"), { recursive: true });
    await edit("organization.yaml", (t) => t.replace("name: Acme Analytics", "name: Acme"));

    const bare = driftless(["plan", "--base", "base-folder", "manifests"], { HOME: root }, root);
    const path = driftless(["plan", "--base", "./base-folder", "manifests"], { HOME: root }, root);
    const missing = driftless(["plan", "--base", "./no-such-folder", "manifests"], { HOME: root }, root);

    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain("plan --base base-folder: no such commit in ");
    expect(bare.stderr).toContain(
      "; a folder of that name exists: to plan against it, write it as a path (--base ./base-folder)\n",
    );
    expect(path.code).toBe(2);
    expect(path.stdout).toContain('      name: "Acme Analytics" -> "Acme"\n');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("plan --base ./no-such-folder: no such folder");
  });

  it("says what to do when the base revision does not exist", () => {
    const result = plan(["--base", "no-such-branch"]);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain("plan --base no-such-branch: no such commit");
  });

  it("plans the base's relative folder when the repository holds other folders", async () => {
    await rename(join(dir, "api-keys.yaml"), join(root, "api-keys.yaml"));
    git("add", "-A");
    git("commit", "-qm", "move the key out of the manifests");
    await rename(join(root, "api-keys.yaml"), join(dir, "api-keys.yaml"));

    const result = plan();

    expect(result.stdout).toContain("~ ApiKey/ci-deployer: PATCH ");
    expect(result.stdout).toContain("Plan: 1 to send, 0 to adopt, 12 in sync");
    expect(result.code).toBe(2);
  });
});
