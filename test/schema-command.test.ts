import { spawnSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { schemaCommand } from "../src/commands/schema.js";

const repo = join(import.meta.dirname, "..");

/** `driftless schema` in-process: its exit code and the document it printed. */
async function schema() {
  const out: string[] = [];
  const code = await schemaCommand({ out: (t) => out.push(t), err: (t) => out.push(t), env: {} });
  return { code, text: out.join("") };
}

describe("driftless schema", () => {
  it("prints a JSON Schema with one branch per kind, told apart by kind", async () => {
    const { code, text } = await schema();

    const document = JSON.parse(text);
    expect(code).toBe(0);
    expect(document.$schema).toBe("http://json-schema.org/draft-07/schema#");
    expect(
      document.oneOf.map(
        (branch: { properties: { kind: { const: string } } }) => branch.properties.kind.const,
      ),
    ).toEqual([
      "Organization",
      "ApiKey",
      "DataPipe",
      "ReversePrivateEndpoint",
      "Dashboard",
      "Alert",
      "AlertWatch",
      "BackupWatch",
    ]);
    expect(document.oneOf[2].properties.spec.additionalProperties).toBe(false);
  });

  it("matches examples/schema.json, the file the examples point editors at", async () => {
    const { text } = await schema();

    const committed = await readFile(join(repo, "examples", "schema.json"), "utf8");

    // When this fails: node dist/cli.js schema > examples/schema.json
    expect(committed).toBe(text);
  });

  it("is what the built CLI prints, with exit code 0", () => {
    const result = spawnSync(process.execPath, [join(repo, "dist", "cli.js"), "schema"], {
      encoding: "utf8",
    });

    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout).title).toBe("driftless manifest");
  });
});
