import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultOf, SETTINGS, type Setting, SIMULATOR_SETTINGS } from "../src/settings.js";
import { repo } from "./helpers/cli.js";

/**
 * The settings reference of docs/cli.md against the tables of src/settings.ts: every setting has
 * exactly one row, and the row shows the setting's flag, commands and default as the code has them.
 * A setting added to the code without its row (or a row left behind by a removed one) fails here.
 */

type Row = { variable: string; flag: string; commands: string; default: string; line: string };

/** The rows of the first table under "## Settings reference", keyed by their first cell's variable. */
function referenceRows(): Row[] {
  const page = readFileSync(join(repo, "docs/cli.md"), "utf8");
  const start = page.indexOf("\n## Settings reference\n");
  expect(start, "docs/cli.md has a '## Settings reference' section").toBeGreaterThan(-1);
  const end = page.indexOf("\n## ", start + 1);
  const section = page.slice(start, end === -1 ? undefined : end);
  return section
    .split("\n")
    .filter((line) => line.startsWith("| `DRIFTLESS_"))
    .map((line) => {
      // Split on the pipes that separate cells, not on an escaped \| inside one.
      const cells = line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim());
      const variable = /^`(DRIFTLESS_[A-Z_]+)`/.exec(cells[0] ?? "")?.[1] ?? "";
      return {
        variable,
        flag: cells[1] ?? "",
        commands: cells[2] ?? "",
        default: cells[3] ?? "",
        line,
      };
    });
}

const settings: Setting[] = [
  ...Object.values(SETTINGS),
  // logLevel and logFormat are shared by both tables: one row each.
  ...Object.values(SIMULATOR_SETTINGS).filter(
    (setting) => setting !== SIMULATOR_SETTINGS.logLevel && setting !== SIMULATOR_SETTINGS.logFormat,
  ),
];

const rows = referenceRows();

/** How a default appears in the table: `value`, or nothing for no default or an empty list. */
function shownDefault(setting: Setting): string | undefined {
  const value = defaultOf(setting);
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return value.length > 0 ? `\`${value.join(",")}\`` : undefined;
  return `\`${String(value)}\``;
}

describe("the settings reference of docs/cli.md", () => {
  it.each(settings.map((setting) => [setting.env, setting] as const))(
    "lists %s once, as the code has it",
    (env, setting) => {
      const matching = rows.filter((row) => row.variable === env);
      expect(matching.length, `${env}: rows in docs/cli.md#settings-reference`).toBe(1);
      const row = matching[0] as Row;
      if (setting.flag)
        expect(row.flag.replace(/\\\|/g, "|"), `${env}: flag`).toContain(`\`${setting.flag}\``);
      else expect(row.flag, `${env}: a credential has no flag`).toBe("environment only");
      if (setting.credential) expect(row.line, `${env}: its _FILE twin`).toContain("(or `_FILE`)");
      const commands = setting.commands === "program" ? ["all"] : [...setting.commands];
      expect(
        row.commands.split(",").map((command) => command.trim()),
        `${env}: commands`,
      ).toEqual(commands);
      const shown = shownDefault(setting);
      if (shown !== undefined) expect(row.default, `${env}: default`).toContain(shown);
    },
  );

  it("lists no variable the code does not have", () => {
    const known = new Set(settings.map((setting) => setting.env));
    expect(rows.map((row) => row.variable).filter((variable) => !known.has(variable))).toEqual([]);
  });
});
