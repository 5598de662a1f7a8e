import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { driftless, repo } from "./helpers/cli.js";

describe("driftless validate, the command CI runs", () => {
  it("exits 0 on examples/", () => {
    const result = driftless(["validate", "examples"]);

    expect(result.stdout).toBe("13 valid manifests, no problems\n");
    expect(result.code).toBe(0);
  });

  it("exits 1 and prints file:line:col  Kind/name  message", () => {
    const result = driftless(["validate", "test/fixtures/bad/unknown-field"]);

    expect(result.code).toBe(1);
    expect(result.stdout).toBe(
      "pipe.yaml:12:7  DataPipe/orders  spec.source.kafka.bootstrapServers: unknown field (not in the API's request body)\n" +
        "1 problem in 1 manifest; 0 of 1 manifest valid\n",
    );
  });

  it("takes the folder from DRIFTLESS_MANIFESTS and prints one JSON document with --output json", () => {
    const result = driftless(["validate", "--output", "json"], {
      DRIFTLESS_MANIFESTS: "test/fixtures/bad/empty-roles",
    });

    const report = JSON.parse(result.stdout);
    expect(result.code).toBe(1);
    expect(report.valid).toBe(false);
    expect(report.problems).toEqual([
      {
        file: "key.yaml",
        line: 9,
        col: 10,
        resource: "ApiKey/ci",
        field: "spec.roles",
        message: "must hold at least one role",
      },
    ]);
  });

  it("checks that secrets exist with --resolve-secrets, without printing them", () => {
    const args = ["validate", "examples", "--resolve-secrets", "--secrets-dir", "examples/secrets"];

    const missing = driftless(args);
    const present = driftless(args, { EXAMPLE_KAFKA_PASSWORD: "demo-kafka-password" });

    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain(
      "data-pipes/orders-from-kafka.yaml:18:19  DataPipe/orders-from-kafka  spec.source.kafka.credentials.password: secret fromEnv EXAMPLE_KAFKA_PASSWORD: the variable is not set or empty\n",
    );
    // The manifest with the problem is not counted among the valid ones.
    expect(missing.stdout).toMatch(/^1 problem in 1 manifest; 12 of 13 manifests valid$/m);
    expect(present.code).toBe(0);
    expect(present.stdout + present.stderr).not.toContain("demo-");
  });

  it("exits 1 with a clear message when the folder does not exist", () => {
    const result = driftless(["validate", "no/such/folder"]);

    expect(result.code).toBe(1);
    expect(result.stderr).toBe("driftless: manifests folder no/such/folder does not exist\n");
  });

  it("stops quietly when its reader closes the pipe early (validate | head -1)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "driftless-epipe-"));
    await Promise.all(
      Array.from({ length: 2000 }, (_, i) =>
        writeFile(join(dir, `k${i}.yaml`), `kind: ApiKey\nmetadata: {name: k${i}}\n`),
      ),
    );
    const child = spawn(process.execPath, [join(repo, "dist", "cli.js"), "validate", dir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.stdout.once("data", () => child.stdout.destroy());

    const [code] = await once(child, "exit");

    expect(stderr).not.toContain("EPIPE");
    expect(code).not.toBeNull();
  });
});
