import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { driftless, repo } from "./helpers/cli.js";

/**
 * The documentation as a reader follows it: every relative link (and #anchor) in README.md,
 * CHANGELOG.md and docs/ leads somewhere, and every `driftless ...` command in a fenced code block is
 * one the built CLI accepts (command and flags, checked against its --help). The read-only commands
 * that can run offline (validate, schema, plan against the built-in simulator) are run on examples/
 * and must exit as documented. Needs dist/ built (npm test builds first).
 */

function markdownFiles(dir: string): string[] {
  return readdirSync(join(repo, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith(".md") ? [path] : [];
  });
}

const pages = ["README.md", "CHANGELOG.md", ...markdownFiles("docs")];
const text = (page: string) => readFileSync(join(repo, page), "utf8");

type Block = { page: string; line: number; lines: string[] };

/** The page split into prose (fenced blocks blanked, so line numbers stay) and its fenced blocks. */
function split(page: string): { prose: string[]; blocks: Block[] } {
  const prose: string[] = [];
  const blocks: Block[] = [];
  let open: Block | undefined;
  text(page)
    .split("\n")
    .forEach((line, index) => {
      if (/^\s*(```|~~~)/.test(line)) {
        if (open) {
          blocks.push(open);
          open = undefined;
        } else open = { page, line: index + 1, lines: [] };
        prose.push("");
        return;
      }
      if (open) open.lines.push(line);
      prose.push(open ? "" : line);
    });
  return { prose, blocks };
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as '-', repeats numbered. */
function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const line of split(page).prose) {
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = heading
      .replace(/`/g, "")
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

type Link = { page: string; line: number; target: string };

function links(page: string): Link[] {
  return split(page).prose.flatMap((line, index) =>
    [...line.replace(/`[^`]*`/g, "").matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => ({
      page,
      line: index + 1,
      target: match[1] ?? "",
    })),
  );
}

/** Why a relative link leads nowhere, or undefined when it resolves. */
function brokenBecause({ page, target }: Link): string | undefined {
  const [path = "", anchor] = target.split("#");
  const file = path === "" ? page : relative(repo, join(repo, dirname(page), decodeURI(path)));
  if (file.startsWith("..")) return "leads outside the repository";
  if (!existsSync(join(repo, file))) return `${file} does not exist`;
  if (anchor === undefined) return undefined;
  if (!file.endsWith(".md") || statSync(join(repo, file)).isDirectory()) return `#${anchor} on a non-page`;
  return anchors(file).has(anchor) ? undefined : `${file} has no heading #${anchor}`;
}

type Example = { page: string; line: number; command: string; args: string[] };

/** Shell words of a command line, up to a pipe, redirection, `&&` or comment; quotes removed. */
function words(line: string): string[] {
  const result: string[] = [];
  for (const match of line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) {
    const word = match[3];
    if (word !== undefined && (/^(\||>|2>|&&|;|#)/.test(word) || word === "&")) break;
    result.push(match[1] ?? match[2] ?? word ?? "");
  }
  return result;
}

/** Every `driftless ...` (or `node dist/cli.js ...`) line in the fenced blocks, continuations joined. */
function examples(page: string): Example[] {
  return split(page).blocks.flatMap((block) => {
    const joined = block.lines.join("\n").replace(/\\\n\s*/g, " ");
    return joined.split("\n").flatMap((raw, index) => {
      const match = /^\s*(?:\$\s+)?(?:[A-Z_]+=\S*\s+)*(?:driftless|node\s+dist\/cli\.js)\s+(.*)$/.exec(raw);
      if (!match) return [];
      const [command = "", ...args] = words(match[1] ?? "").map((word) => word.replace(/^\[|\]$/g, ""));
      return [{ page, line: block.line + 1 + index, command, args }];
    });
  });
}

const helps = new Map<string, string>();
/** `--help` of a command (and of the program, for the global flags). */
function help(command: string): string {
  let known = helps.get(command);
  if (known === undefined) {
    known = driftless(command === "" ? ["--help"] : [command, "--help"]).stdout;
    helps.set(command, known);
  }
  return known;
}

const commands = () => [...help("").matchAll(/^ {2}([a-z][a-z-]*) /gm)].map((match) => match[1]);

/** The flags a command's --help lists: whether each takes a value. */
function flagsOf(command: string): Map<string, boolean> {
  const flags = new Map<string, boolean>();
  for (const source of [help(""), help(command)]) {
    for (const match of source.matchAll(/^ {2}((?:-\w, )?--[\w-]+)( [<[])?/gm)) {
      for (const flag of (match[1] ?? "").split(", ")) flags.set(flag, match[2] !== undefined);
    }
  }
  return flags;
}

/** What is wrong with an example as an invocation, and its positional arguments. */
function check(example: Example): { problems: string[]; positional: string[] } {
  // An option of driftless itself in place of a command (`driftless --version`).
  if (example.command.startsWith("-")) {
    const known = help("").includes(`  ${example.command} `) || help("").includes(`, ${example.command} `);
    return { problems: known ? [] : [`unknown option "${example.command}"`], positional: [] };
  }
  if (!commands().includes(example.command)) {
    return { problems: [`unknown command "${example.command}"`], positional: [] };
  }
  const flags = flagsOf(example.command);
  const problems: string[] = [];
  const positional: string[] = [];
  for (let i = 0; i < example.args.length; i++) {
    const arg = example.args[i] ?? "";
    if (!arg.startsWith("-")) {
      positional.push(arg);
      continue;
    }
    const [name = "", inline] = arg.split("=");
    const takesValue = flags.get(name);
    if (takesValue === undefined) problems.push(`${example.command} has no flag ${name}`);
    else if (takesValue && inline === undefined) i++;
  }
  return { problems, positional };
}

const readOnly: Record<string, (code: number | null) => boolean> = {
  validate: (code) => code === 0,
  schema: (code) => code === 0,
  plan: (code) => code === 0 || code === 2,
};

/** An example that can run offline: a read-only command whose arguments are all real paths or values. */
function runnable(example: Example, positional: string[]): boolean {
  if (!(example.command in readOnly)) return false;
  const placeholders = example.args.some((arg) => /[<>]|^[A-Z_]+$/.test(arg));
  return !placeholders && positional.every((path) => existsSync(join(repo, path)));
}

const work = mkdtempSync(join(tmpdir(), "driftless-docs-"));
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe("the documentation", () => {
  it("links only to files and headings that exist", () => {
    const all = pages.flatMap(links).filter((link) => !/^[a-z][a-z+.-]*:/i.test(link.target));

    const broken = all
      .map((link) => ({ link, why: brokenBecause(link) }))
      .filter((found) => found.why !== undefined)
      .map(({ link, why }) => `${link.page}:${link.line} ${link.target}: ${why}`);

    expect(all.length).toBeGreaterThan(30);
    expect(broken).toEqual([]);
  });

  it("shows only driftless commands and flags that the CLI accepts", () => {
    const all = pages.flatMap(examples);

    const problems = all.flatMap((example) =>
      check(example).problems.map((problem) => `${example.page}:${example.line} ${problem}`),
    );

    expect(all.length).toBeGreaterThan(10);
    expect(new Set(all.map((example) => example.command))).toEqual(
      new Set([
        "validate",
        "schema",
        "plan",
        "apply",
        "run",
        "simulator",
        "completion",
        "forget",
        "import",
        "copy-state",
        "status",
        "suspend",
        "resume",
        "reconcile",
        "--version",
      ]),
    );
    expect(problems).toEqual([]);
  });

  it("shows read-only commands that run on examples/ and exit as documented", () => {
    const runs = pages
      .flatMap(examples)
      .filter((example) => runnable(example, check(example).positional))
      .map((example, index) => {
        const env = {
          DRIFTLESS_STATE_DIR: join(work, `state-${index}`),
          DRIFTLESS_SECRETS_DIR: join(repo, "examples/secrets"),
          EXAMPLE_KAFKA_PASSWORD: "demo-kafka-password",
        };
        const { code, stderr } = driftless([example.command, ...example.args], env);
        return { where: `${example.page}:${example.line} driftless ${example.command}`, code, stderr };
      });

    const wrong = runs
      .filter((run) => !readOnly[run.where.split(" ").at(-1) ?? ""]?.(run.code))
      .map((run) => `${run.where} exited ${run.code}: ${run.stderr.slice(0, 300)}`);

    expect(runs.map((run) => run.where.split(" ").at(-1))).toEqual(
      expect.arrayContaining(["validate", "schema", "plan"]),
    );
    expect(wrong).toEqual([]);
  });
});
