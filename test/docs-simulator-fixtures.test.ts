import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Fixture } from "../src/simulator/model.js";
import { repo } from "./helpers/cli.js";

/**
 * docs/simulator-fixtures.md against the simulator's Fixture schema: a section per collection, and in
 * it one row per field of the collection's objects, saying whether the field is required as the schema
 * says. A field added to the schema without its row (or a row left behind) fails here.
 */

type ObjectSchema = { type?: string; properties?: Record<string, unknown>; required?: string[] };
const schema = z.toJSONSchema(Fixture, { io: "input" }) as {
  properties: Record<string, { items?: ObjectSchema }>;
};
const collections = Object.entries(schema.properties).map(([name, list]) => ({
  name,
  fields: Object.keys(list.items?.properties ?? {}),
  required: new Set(list.items?.required ?? []),
}));

const page = readFileSync(join(repo, "docs/simulator-fixtures.md"), "utf8");

/** The rows of the table under `## \`name\``: field → its "required" cell. */
function rowsOf(name: string): Map<string, string> | undefined {
  const start = page.indexOf(`\n## \`${name}\`\n`);
  if (start === -1) return undefined;
  const end = page.indexOf("\n## ", start + 1);
  const section = page.slice(start, end === -1 ? undefined : end);
  const rows = section
    .split("\n")
    .filter((line) => /^\| `\w+` \|/.test(line))
    .map((line) => line.split(/(?<!\\)\|/).map((cell) => cell.trim()));
  return new Map(rows.map((cells) => [(cells[1] ?? "").replace(/`/g, ""), cells[2] ?? ""]));
}

describe("docs/simulator-fixtures.md", () => {
  it("has a section for each collection of a fixture, and no other", () => {
    const sections = [...page.matchAll(/^## `(\w+)`$/gm)].map((match) => match[1]);

    expect(sections).toEqual(collections.map((collection) => collection.name));
  });

  it.each(collections.filter((collection) => collection.fields.length > 0))(
    "lists every field of $name once, required as the schema says",
    ({ name, fields, required }) => {
      const rows = rowsOf(name) ?? new Map<string, string>();

      expect([...rows.keys()]).toEqual(fields);
      for (const [field, cell] of rows) {
        expect(cell, `${name}.${field}`).toMatch(required.has(field) ? /^yes\b/ : /^no\b/);
      }
    },
  );
});
