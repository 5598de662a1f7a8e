import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { validateCommand } from "../src/commands/validate.js";
import { Config } from "../src/config.js";
import { loadManifests } from "../src/manifests/load.js";
import { KINDS, type ManifestOf, positionOf } from "../src/manifests/manifest.js";

const examples = join(import.meta.dirname, "..", "examples");

describe("examples/", () => {
  it("is valid, secrets included, as npm start runs it", async () => {
    const out: string[] = [];
    const io = {
      out: (t: string) => out.push(t),
      err: (t: string) => out.push(t),
      env: { EXAMPLE_KAFKA_PASSWORD: "demo-kafka-password" },
    };
    const config = Config.parse({ manifests: examples, secretsDir: join(examples, "secrets") });

    const code = await validateCommand(config, { output: "text", resolveSecrets: true }, io);

    expect(out).toEqual(["13 valid manifests, no problems"]);
    expect(code).toBe(0);
  });

  it("shows every kind, every pipe source and every endpoint type", async () => {
    const set = await loadManifests(examples);

    const pipes = set.manifests.filter((m): m is ManifestOf<"DataPipe"> => m.kind === "DataPipe");
    const endpoints = set.manifests.filter(
      (m): m is ManifestOf<"ReversePrivateEndpoint"> => m.kind === "ReversePrivateEndpoint",
    );
    const dashboard = set.manifests.find((m): m is ManifestOf<"Dashboard"> => m.kind === "Dashboard");
    expect(set.problems).toEqual([]);
    expect(new Set(set.manifests.map((m) => m.kind))).toEqual(new Set(KINDS));
    expect(
      pipes.flatMap((p) => Object.keys(p.spec.source ?? {}).filter((k) => k !== "validateSamples")).sort(),
    ).toEqual(["kafka", "kinesis", "objectStorage", "postgres"]);
    expect(
      pipes.find((p) => p.spec.source?.postgres)?.spec.source?.postgres?.tableMappings?.length,
    ).toBeGreaterThan(0);
    expect(endpoints.map((e) => e.spec.type).sort()).toEqual([
      "MSK_MULTI_VPC",
      "VPC_ENDPOINT_SERVICE",
      "VPC_RESOURCE",
    ]);
    expect(
      pipes.find((p) => p.name === "orders-from-kafka")?.spec.source?.kafka?.reversePrivateEndpoints,
    ).toEqual(["orders-msk"]);
    expect(dashboard?.spec.tiles.map((t) => t.id)).toEqual([
      "65f1a2b3c4d5e6f708192a41",
      "65f1a2b3c4d5e6f708192a42",
      "65f1a2b3c4d5e6f708192a43",
      undefined,
    ]);
  });

  it("uses the shared identifiers of the simulator's fixture", async () => {
    const set = await loadManifests(examples);

    const ids = Object.fromEntries(
      set.manifests.map((m) => [`${m.kind}/${m.name}`, JSON.stringify(m.spec).match(/[0-9a-f-]{24,36}/g)]),
    );
    expect(ids["ApiKey/ci-deployer"]).toContain("6d1f3b85-2a4c-4e7d-b9f0-1c2d3e4f5a6c");
    expect(ids["DataPipe/orders-from-kafka"]).toContain("1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b");
    expect(ids["DataPipe/events-from-s3"]).toContain("2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d");
    expect(ids["DataPipe/clicks-from-kinesis"]).toContain("3b4c5d6e-7f8a-4b9c-8d1e-2f3a4b5c6d7e");
    expect(ids["DataPipe/customers-from-postgres"]).toContain("4c5d6e7f-8a9b-4c0d-9e2f-3a4b5c6d7e8f");
    expect(ids["Dashboard/platform-overview"]).toContain("65f1a2b3c4d5e6f708192a3b");
    expect(ids["AlertWatch/ingest-lag"]).toContain("65f1a2b3c4d5e6f708192a51");
    expect(ids["Alert/errors-by-service"]).toContain("65f1a2b3c4d5e6f708192a61");
    expect(ids["Organization/acme-analytics"]).toContain("9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f");
  });

  it("points editors at the schema from every file", async () => {
    const files = (await readdir(examples, { recursive: true })).filter((f) => f.endsWith(".yaml"));

    for (const file of files) {
      const first = (await readFile(join(examples, file), "utf8")).split("\n")[0];
      const schema = relative(join(examples, file, ".."), join(examples, "schema.json")) || "schema.json";
      expect(first, file).toBe(
        `# yaml-language-server: $schema=${schema.startsWith(".") ? schema : `./${schema}`}`,
      );
    }
    expect(files.length).toBeGreaterThanOrEqual(8);
  });

  it("tells where a field is, for errors found later (secrets, references)", async () => {
    const set = await loadManifests(examples);
    const pipe = set.manifests.find((m) => m.name === "orders-from-kafka");

    const password = pipe && positionOf(pipe, ["spec", "source", "kafka", "credentials", "password"]);
    const key = pipe && positionOf(pipe, ["spec", "source", "kafka", "credentials"], { key: true });

    expect(password).toEqual({ file: "data-pipes/orders-from-kafka.yaml", line: 18, col: 19 });
    expect(key).toEqual({ file: "data-pipes/orders-from-kafka.yaml", line: 16, col: 7 });
  });
});
