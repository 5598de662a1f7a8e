import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseFast } from "../src/manifests/fast-parse.js";
import { parseCarefully, parseManifestFile } from "../src/manifests/parse.js";

/**
 * validate reads most files with js-yaml, for speed, and files with problems with the yaml library,
 * whose reading decides. The fast reader must never accept a file that the careful one reads
 * differently or rejects: else a file's meaning would depend on which reader got it.
 */

const pipe = (lines: { labels?: string; name?: string; port?: string; extra?: string; head?: string }) =>
  [
    lines.head ?? "",
    "apiVersion: driftless/v1",
    "kind: DataPipe",
    "metadata:",
    "  name: customers",
    `  labels: ${lines.labels ?? "{team: data}"}`,
    "spec:",
    "  organizationId: 9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f",
    "  serviceId: 2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7",
    "  dataPipeId: 4c5d6e7f-8a9b-4c0d-9e2f-3a4b5c6d7e8f",
    `  name: ${lines.name ?? "customers"}`,
    "  source:",
    "    postgres:",
    "      host: db.internal",
    `      port: ${lines.port ?? "5432"}`,
    lines.extra ?? "",
    "",
  ].join("\n");

/** Files where js-yaml's own reading differs from the yaml library's, each as a user could write it. */
const tricky: Record<string, string> = {
  "binary integer": pipe({ port: "0b1010" }),
  "float with a sign and no leading digit": pipe({ name: "+.5" }),
  "a YAML 1.1 directive": pipe({ head: "%YAML 1.1\n---", name: "yes", port: "010" }),
  "an unknown directive": pipe({ head: "%FOO bar\n---" }),
  "a !!binary tag": pipe({ name: "!!binary Y3VzdG9tZXJz" }),
  "a !!timestamp tag": pipe({ name: "!!timestamp 2027-01-31" }),
  "a custom tag": pipe({ name: "!secret customers" }),
  "a !!float tag on an integer": pipe({ port: "!!float 5432" }),
  "a comment glued to a closing quote": pipe({ name: '"customers"#note' }),
  "a comment glued to a closing bracket": pipe({ labels: "{team: data}#note" }),
  "content on the --- line": `--- ${pipe({}).trimStart()}`,
  "a lone carriage return": pipe({}).replace("host: db.internal\n", "host: db.internal\r"),
  "a flow mapping under-indented on its next line": pipe({ labels: "{team: data,\n  tier: gold}" }),
  "a null label key": pipe({ labels: "{~: data}" }),
  "an empty label key": pipe({ labels: "{: data}" }),
  "a flow sequence as a label key": pipe({ labels: "\n    [team]: data" }),
  "an explicit label key": pipe({ labels: "\n    ? team\n    : data" }),
  "a label key over 1024 characters": pipe({ labels: `{${"k".repeat(1100)}: data}` }),
  "an integer and a string label key that read the same": pipe({ labels: '{1: a, "1": b}' }),
  "a mapping as a key": pipe({ labels: "\n    {team: data}: gold" }),
};

describe("the fast and the careful YAML reader", () => {
  it.each(Object.entries(tricky))("agree on %s", (_, text) => {
    const careful = parseCarefully("pipe.yaml", text);

    const either = parseManifestFile("pipe.yaml", text);

    expect(either).toEqual(careful);
  });

  it("read YAML 1.2 only: a %YAML 1.1 directive does not make yes a boolean or 010 octal", () => {
    const result = parseManifestFile(
      "pipe.yaml",
      pipe({ head: "%YAML 1.1\n---", extra: "    validateSamples: yes" }),
    );

    expect(result.problems.map((p) => `${p.line}:${p.col} ${p.field}: ${p.message}`)).toEqual([
      "17:22 spec.source.validateSamples: must be true or false",
    ]);
  });

  it("refuse tags that turn a value into something else, at the value", () => {
    const result = parseManifestFile("pipe.yaml", pipe({ name: "!!binary Y3VzdG9tZXJz" }));

    expect(result.manifests).toEqual([]);
    expect(result.problems).toEqual([
      {
        file: "pipe.yaml",
        line: 11,
        col: 18,
        resource: "DataPipe/customers",
        field: "spec.name",
        message:
          "the YAML tag !!binary is not supported: write the plain value (binary data, timestamps and sets have no place in a manifest)",
      },
    ]);
  });

  it("report two keys that read the same as a duplicate, not keep the last", () => {
    const result = parseManifestFile("pipe.yaml", pipe({ labels: '{1: a, "1": b}' }));

    expect(result.manifests).toEqual([]);
    expect(result.problems[0]).toMatchObject({
      line: 6,
      col: 18,
      message: "invalid YAML: Map keys must be unique",
    });
  });

  it("refuse a list or a mapping as a key, without yaml's process warning", () => {
    const result = parseManifestFile("pipe.yaml", pipe({ labels: "\n    ? [team, tier]\n    : data" }));

    expect(result.problems.map((p) => `${p.line}:${p.col} ${p.message}`)).toEqual([
      "7:7 a key must be plain text, not a list or a mapping",
    ]);
  });

  it("leave ordinary files to the fast reader: every example file, with the careful reading", () => {
    const examples = join(import.meta.dirname, "..", "examples");
    const files = readdirSync(examples, { recursive: true, encoding: "utf8" }).filter((f) =>
      f.endsWith(".yaml"),
    );

    for (const file of files) {
      const text = readFileSync(join(examples, file), "utf8");

      expect(parseFast(text), file).toEqual(parseCarefully(file, text).manifests);
    }
  });

  it("agree on thousands of small edits of the examples", () => {
    const examples = join(import.meta.dirname, "..", "examples");
    const files = readdirSync(examples, { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".yaml"))
      .sort()
      .map((f) => readFileSync(join(examples, f), "utf8"));
    // Characters that mean something to YAML, and spellings that scalars resolve from.
    const pieces = [
      ..."[]{}:,#-?|>'\"\n \t~*%@`.+0x",
      "0b1",
      "0o7",
      ".5",
      "null",
      "yes",
      "1e3",
      "- ",
      ": ",
      "\n  ",
    ];
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let fastAccepted = 0;

    for (let round = 0; round < 3000; round++) {
      let text = files[random(files.length)] as string;
      for (let edits = 1 + random(2); edits > 0; edits--) {
        const at = random(text.length);
        const piece = pieces[random(pieces.length)] as string;
        text =
          random(3) === 0
            ? text.slice(0, at) + text.slice(at + 1)
            : text.slice(0, at) + piece + text.slice(at);
      }

      const either = parseManifestFile("edited.yaml", text);

      if (either.problems.length > 0) continue;
      fastAccepted++;
      expect(either, text).toEqual(parseCarefully("edited.yaml", text));
    }
    // The edits must leave enough files valid for the comparison to mean something.
    expect(fastAccepted).toBeGreaterThan(500);
  });
});
