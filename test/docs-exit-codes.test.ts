import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { driftless, repo } from "./helpers/cli.js";

/**
 * The exit codes each command's help states (`driftless --help` lists every command with its
 * description) are the ones the overview of docs/cli.md gives, word for word: a change of behaviour
 * that updates one of them and not the other fails here. The behaviour itself is held by each
 * command's own tests.
 */

/** Each command of the overview table, with its exit-codes cell. */
function documented(): Array<[string, string]> {
  const page = readFileSync(join(repo, "docs/cli.md"), "utf8");
  const start = page.indexOf("\n## Overview\n");
  const section = page.slice(start, page.indexOf("\n## ", start + 1));
  return section
    .split("\n")
    .filter((line) => line.startsWith("| `driftless "))
    .flatMap((line) => {
      const cells = line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim());
      const codes = cells.at(-1) ?? "";
      return [...(cells[0] ?? "").matchAll(/`driftless ([a-z]+)/g)].map(
        (m) => [m[1] ?? "", codes] as [string, string],
      );
    });
}

/** Each command of `driftless --help` with its description, its wrapped lines joined. */
function described(): Map<string, string> {
  const help = driftless(["--help"]).stdout;
  const commands = help.slice(help.indexOf("\nCommands:\n"));
  const found = new Map<string, string>();
  let current: string | undefined;
  for (const line of commands.split("\n").slice(2)) {
    const head = /^ {2}([a-z]+)\b.*? {2,}(\S.*)$/.exec(line);
    if (head) {
      current = head[1];
      found.set(current ?? "", head[2] ?? "");
    } else if (current && line.trim()) found.set(current, `${found.get(current)} ${line.trim()}`);
  }
  return found;
}

describe("the exit codes of each command", () => {
  const help = described();

  it.each(documented())("of %s are the same in its help and in docs/cli.md", (command, codes) => {
    expect(help.get(command), `driftless --help lists ${command}`).toBeDefined();
    expect(help.get(command)).toMatch(
      new RegExp(`\\(exit ${codes.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\)$`),
    );
  });
});
