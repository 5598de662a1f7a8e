import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { validateCommand } from "../src/commands/validate.js";
import { Config } from "../src/config.js";

const corpus = join(import.meta.dirname, "fixtures", "bad");

/** Runs `driftless validate DIR` in-process; returns the exit code and the lines printed. */
async function validate(dir: string, output: "text" | "json" = "text") {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t), env: {} };
  const code = await validateCommand(Config.parse({ manifests: dir }), { output, resolveSecrets: false }, io);
  return { code, lines: out.join("\n").split("\n"), err };
}

/** Every case of test/fixtures/bad and the exact lines a user sees, before the summary line. */
const expected: Record<string, string[]> = {
  "alias-bomb": [
    "bomb.yaml:1:1  BackupWatch/backups  too many aliases (more than 100): Excessive alias count indicates a resource exhaustion attack",
  ],
  "alert-tile": [
    "alerts.yaml:7:9  Alert/checkout-errors  spec.tile: Dashboard/checkout has no tile with key errors",
    "alerts.yaml:19:9  Alert/slowest  spec.tile: tile slowest of Dashboard/checkout is a table tile: the platform puts alerts on line, stacked_bar and number tiles only",
    "alerts.yaml:30:3  Alert/volume-band  spec.thresholdMax: is required with thresholdType between",
    "alerts.yaml:35:12  Alert/volume-band  spec.groupBy: is for saved-search alerts only (the platform clears it on a tile alert)",
    "alerts.yaml:36:26  Alert/volume-band  spec.scheduleOffsetMinutes: must be less than the interval (5 minutes)",
    "alerts.yaml:37:12  Alert/volume-band  spec.channel: must be the first of channels when both are given",
    "dashboard.yaml:8:5  Dashboard/checkout  spec.tiles: has no tile with key errors, which Alert/checkout-errors (alerts.yaml:1) watches: the platform deletes an alert with its tile; keep the tile, or move or remove the alert",
  ],
  "bad-annotation": [
    "key.yaml:6:23  ApiKey/ci  metadata.annotations.driftless/suspnd: unknown driftless annotation; did you mean driftless/suspend? (known: driftless/suspend, driftless/previous-name, driftless/drift, driftless/deletion-policy)",
    'key.yaml:18:24  ApiKey/deployer  metadata.annotations.driftless/suspend: must be "true" or "false"',
  ],
  "bad-cidr": [
    "key.yaml:12:15  ApiKey/ci  spec.ipAccessList[1].source: must be an IP address or CIDR block, like 203.0.113.7 or 10.0.0.0/8",
  ],
  "bad-endpoint-type": [
    "endpoint.yaml:9:9  ReversePrivateEndpoint/events  spec.type: must be one of VPC_ENDPOINT_SERVICE, VPC_RESOURCE, MSK_MULTI_VPC, GCP_PSC_SERVICE_ATTACHMENT",
    "endpoint.yaml:21:3  ReversePrivateEndpoint/events-two  spec.mskClusterArn: unknown field (not in the API's request body)",
  ],
  "bad-enum": ["key.yaml:9:22  ApiKey/ci  spec.roles[1]: must be one of admin, developer, query_endpoints"],
  "bad-label-key": [
    "watch.yaml:7:5  BackupWatch/backups  metadata.labels.Cost Center: label keys are an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
  ],
  "bad-settings": [
    "pipe.yaml:12:25  DataPipe/events  spec.source.objectStorage.connectionString: is a secret: write {fromEnv: NAME} or {fromFile: PATH} (relative to DRIFTLESS_SECRETS_DIR), never the value",
    "pipe.yaml:14:33  DataPipe/events  spec.settings.object_storage_concurrency: must be an integer >= 0",
    "pipe.yaml:15:25  DataPipe/events  spec.settings.engine_max_threads: must be an integer >= 0",
    "pipe.yaml:16:42  DataPipe/events  spec.settings.object_storage_use_cluster_function: must be true or false",
    "pipe.yaml:17:5  DataPipe/events  spec.settings.max_threads: unknown field (not in the API's request body)",
  ],
  "bad-timestamp": [
    'key.yaml:10:13  ApiKey/ci  spec.expireAt: must be an ISO-8601 date-time with a zone, like 2027-01-31T00:00:00Z, or null/"" for never',
  ],
  "bad-where": [
    "dashboard.yaml:16:67  Dashboard/overview  spec.tiles[0].series[0].where: must have the form <field>:<value>, like level:error",
  ],
  "binary-file": ["blob.yaml:1:1  -  binary file (it holds NUL bytes): not YAML text"],
  "deep-nesting": [
    "deep.yaml:6:41  BackupWatch/backups  nested deeper than 32 levels: not a manifest",
    "deeper.yaml:6:1011  -  the YAML is nested too deeply or too large to parse",
  ],
  "description-too-long": [
    "endpoint.yaml:8:16  ReversePrivateEndpoint/events  spec.description: must be at most 255 characters",
  ],
  "dot-path-id": [
    "board.yaml:6:16  Dashboard/overview  spec.dashboardId: must be an id, not . or .. (it becomes a step of the request's URL path)",
    "board.yaml:15:12  AlertWatch/lag  spec.alertId: must be an id, not . or .. (it becomes a step of the request's URL path)",
  ],
  "duplicate-api-object": [
    "b.yaml:8:15  DataPipe/clicks-again  spec.dataPipeId: addresses the same API object as DataPipe/clicks (a.yaml:1)",
  ],
  "duplicate-api-object-case": [
    "keys.yaml:17:10  ApiKey/ci-upper  spec.keyId: addresses the same API object as ApiKey/ci (keys.yaml:2)",
  ],
  "duplicate-name": ["b.yaml:4:9  DataPipe/clicks  metadata.name: the name is already used by a.yaml:1"],
  "duplicate-tile-key": [
    "dashboard.yaml:10:13  Dashboard/overview  spec.tiles[1].key: tile key errors is used twice in this dashboard",
  ],
  "empty-roles": ["key.yaml:9:10  ApiKey/ci  spec.roles: must hold at least one role"],
  "endpoint-other-service": [
    "all.yaml:24:33  DataPipe/orders  spec.source.kafka.reversePrivateEndpoints[0]: ReversePrivateEndpoint/orders-msk belongs to another organization or service than this pipe",
  ],
  "fromenv-driftless": [
    "pipe.yaml:14:29  DataPipe/customers  spec.source.postgres.credentials.password.fromEnv: may not read DRIFTLESS_* variables: those are driftless's own credentials",
  ],
  "fromfile-dotdot": [
    "pipe.yaml:14:30  DataPipe/customers  spec.source.postgres.credentials.password.fromFile: may not contain '..': secrets are read only inside DRIFTLESS_SECRETS_DIR",
  ],
  "invalid-yaml": [
    "broken.yaml:8:3  BackupWatch/backups  invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]",
  ],
  "key-state": ["key.yaml:9:10  ApiKey/ci  spec.state: must be enabled or disabled"],
  "missing-conditional-field": [
    "endpoint.yaml:6:3  ReversePrivateEndpoint/customers-db  spec.vpcResourceShareArn: is required",
  ],
  "mixed-documents": [
    "watches.yaml:17:3  BackupWatch/broken  invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]",
    "watches.yaml:22:9  BackupWatch/Not_A_Name  metadata.name: must be lower-case letters, digits, '-' or '.', starting and ending with a letter or digit",
    "watches.yaml:24:19  BackupWatch/Not_A_Name  spec.organizationId: must be a UUID, like 2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7",
    "watches.yaml:26:11  BackupWatch/Not_A_Name  spec.maxAge: must be a duration like 90m, 26h or 2d (a positive whole number and s, m, h or d)",
  ],
  "non-integer": [
    "dashboard.yaml:13:10  Dashboard/overview  spec.tiles[0].w: must be an integer between 1 and 1000",
  ],
  "plain-text-secret": [
    "pipe.yaml:14:19  DataPipe/customers  spec.source.postgres.credentials.password: is a secret: write {fromEnv: NAME} or {fromFile: PATH} (relative to DRIFTLESS_SECRETS_DIR), never the value",
  ],
  "secret-two-sources": [
    "pipe.yaml:14:19  DataPipe/customers  spec.source.postgres.credentials.password: must be either {fromEnv: NAME} or {fromFile: PATH}, not both and nothing else",
  ],
  "source-kinds": [
    "pipes.yaml:11:5  DataPipe/two-sources  spec.source: names at most one of kafka, objectStorage, kinesis, postgres (the pipe's own), not kinesis and postgres",
  ],
  "unknown-dashboard-or-tile": [
    "watches.yaml:7:14  AlertWatch/lag  spec.dashboard: no Dashboard named overveiw",
    "watches.yaml:17:9  AlertWatch/errors  spec.tile: Dashboard/overview has no tile with key error",
  ],
  "unknown-endpoint-reference": [
    "pipe.yaml:12:33  DataPipe/orders  spec.source.kafka.reversePrivateEndpoints[0]: no ReversePrivateEndpoint named orders-msk",
  ],
  "unknown-field": [
    "pipe.yaml:12:7  DataPipe/orders  spec.source.kafka.bootstrapServers: unknown field (not in the API's request body)",
  ],
  "unknown-kind": [
    "things.yaml:2:7  Pipeline/orders  kind: must be one of Organization, ApiKey, DataPipe, ReversePrivateEndpoint, Dashboard, Alert, AlertWatch, BackupWatch",
    "things.yaml:7:1  -  a manifest is a mapping with apiVersion, kind, metadata and spec",
  ],
  "wrong-api-version": ["watch.yaml:1:13  AlertWatch/lag  apiVersion: must be driftless/v1"],
  "wrong-type": ["key.yaml:9:10  ApiKey/ci  spec.roles: must be a list of roles"],
};

describe("validate on the broken-manifest corpus", () => {
  it.each(Object.entries(expected))(
    "%s: exits 1 and prints each problem at its line",
    async (name, lines) => {
      const result = await validate(join(corpus, name));

      expect(result.code).toBe(1);
      expect(result.lines.slice(0, -1)).toEqual(lines);
      expect(result.lines.at(-1)).toMatch(
        new RegExp(
          `^${lines.length} problems? in \\d+ (manifest|file)s?( and \\d+ files?)?; \\d+ of \\d+ manifests? valid$`,
        ),
      );
    },
  );

  it("has a case for every folder of the corpus", async () => {
    const { readdir } = await import("node:fs/promises");

    const folders = (await readdir(corpus)).sort();

    expect(folders).toEqual(Object.keys(expected).sort());
  });

  it("keeps loading the valid documents around a broken one", async () => {
    const result = await validate(join(corpus, "mixed-documents"), "json");

    const report = JSON.parse(result.lines.join("\n"));
    expect(result.code).toBe(1);
    expect(report.valid).toBe(false);
    expect(report.manifests.map((m: { kind: string; name: string }) => `${m.kind}/${m.name}`)).toEqual([
      "BackupWatch/first",
      "AlertWatch/last",
    ]);
    expect(report.problems[0]).toMatchObject({
      file: "watches.yaml",
      line: 17,
      col: 3,
      resource: "BackupWatch/broken",
    });
  });
});

describe("validate on hostile folders", () => {
  let dir: string;
  const watch = (name: string) =>
    `apiVersion: driftless/v1\nkind: AlertWatch\nmetadata:\n  name: ${name}\nspec:\n  alertId: a-${name}\n`;

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function folder() {
    dir = await mkdtemp(join(tmpdir(), "driftless-hostile-"));
    const root = join(dir, "manifests");
    await mkdir(root);
    await writeFile(join(root, "ok.yaml"), watch("ok"));
    return root;
  }

  it("refuses an oversized file unread, and still loads the rest", async () => {
    const root = await folder();
    await writeFile(join(root, "huge.yaml"), `# ${"x".repeat(2 * 1024 * 1024)}\n`);

    const result = await validate(root);

    expect(result.code).toBe(1);
    expect(result.lines).toEqual([
      "huge.yaml:1:1  -  file is 2097155 bytes, over the 1048576-byte limit: not read",
      "1 problem in 1 file; 1 of 1 manifest valid",
    ]);
  });

  it("reports a symlink loop and does not hang", async () => {
    const root = await folder();
    await symlink("loop-b.yaml", join(root, "loop-a.yaml"));
    await symlink("loop-a.yaml", join(root, "loop-b.yaml"));
    await mkdir(join(root, "nested"));
    await symlink("..", join(root, "nested", "parent"));

    const result = await validate(root);

    expect(result.code).toBe(1);
    expect(result.lines).toEqual([
      "loop-a.yaml:1:1  -  symlink loop: the link never reaches a file or folder",
      "loop-b.yaml:1:1  -  symlink loop: the link never reaches a file or folder",
      "2 problems in 2 files; 1 of 1 manifest valid",
    ]);
  });

  it("refuses a megabyte of nesting at its place, before yaml builds it (about a gigabyte of memory)", async () => {
    const root = await folder();
    await writeFile(join(root, "flow.yaml"), "[".repeat(1_000_000));
    await writeFile(join(root, "maps.yaml"), "{a: ".repeat(200_000));
    await writeFile(join(root, "block.yaml"), "- ".repeat(500_000));

    const result = await validate(root);

    expect(result.lines).toEqual([
      "block.yaml:1:1  -  the YAML is nested too deeply or too large to parse",
      "flow.yaml:1:1001  -  the YAML is nested too deeply or too large to parse",
      "maps.yaml:1:4001  -  the YAML is nested too deeply or too large to parse",
      "3 problems in 3 files; 1 of 1 manifest valid",
    ]);
  });

  it("finds a repeated key among 50,000 in one mapping without comparing each pair", async () => {
    const root = await folder();
    const keys = Array.from({ length: 50_000 }, (_, i) => `    k${i}: v`);
    await writeFile(join(root, "keys.yaml"), `spec:\n  labels:\n${keys.join("\n")}\n    k7: again\n`);

    const result = await validate(root);

    expect(result.lines).toEqual([
      "keys.yaml:50003:5  -  spec.labels.k7: invalid YAML: Map keys must be unique",
      "1 problem in 1 manifest; 1 of 2 manifests valid",
    ]);
  }, 20_000);

  it("reports a file of 150,000 broken documents instead of crashing", async () => {
    const root = await folder();
    await writeFile(join(root, "many.yaml"), "--- a\n".repeat(150_000));

    const result = await validate(root);

    expect(result.code).toBe(1);
    expect(result.lines).toHaveLength(150_001);
    expect(result.lines[0]).toBe(
      "many.yaml:1:5  -  a manifest is a mapping with apiVersion, kind, metadata and spec",
    );
    expect(result.lines.at(-1)).toBe("150000 problems in 150000 manifests; 1 of 150001 manifests valid");
  });

  it("does not hang on a FIFO, named or linked as a manifest", async () => {
    const root = await folder();
    execFileSync("mkfifo", [join(root, "pipe.yaml")]);
    await symlink("pipe.yaml", join(root, "linked.yaml"));

    const result = await validate(root);

    expect(result.code).toBe(1);
    expect(result.lines).toEqual([
      "linked.yaml:1:1  -  not a regular file: not read",
      "pipe.yaml:1:1  -  not a regular file: not read",
      "2 problems in 2 files; 1 of 1 manifest valid",
    ]);
  });

  it("never reads a link that leaves the folder", async () => {
    const root = await folder();
    await writeFile(join(dir, "outside.yaml"), watch("outside"));
    await mkdir(join(dir, "outside-dir"));
    await writeFile(join(dir, "outside-dir", "more.yaml"), watch("more"));
    await symlink(join(dir, "outside.yaml"), join(root, "stolen.yaml"));
    await symlink(join(dir, "outside-dir"), join(root, "stolen-dir"));

    const result = await validate(root);

    expect(result.code).toBe(1);
    expect(result.lines).toEqual([
      "stolen-dir:1:1  -  symlink leads outside the manifests folder: not read",
      "stolen.yaml:1:1  -  symlink leads outside the manifests folder: not read",
      "2 problems in 2 files; 1 of 1 manifest valid",
    ]);
  });

  it("skips hidden folders and files that are not YAML", async () => {
    const root = await folder();
    await mkdir(join(root, ".git"));
    await writeFile(join(root, ".git", "broken.yaml"), "kind: [");
    await writeFile(join(root, "README.md"), "# not a manifest: [");

    const result = await validate(root);

    expect(result.code).toBe(0);
    expect(result.lines).toEqual(["1 valid manifest, no problems"]);
  });
});
