import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { driftless } from "./helpers/cli.js";

/** `driftless completion bash|zsh|fish`: scripts generated from the CLI's own commands and flags. */

const COMMANDS = ["validate", "plan", "apply", "run", "simulator", "schema", "completion"];

let root: string;
let bashScript: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-completion-"));
  bashScript = join(root, "driftless.bash");
  const result = driftless(["completion", "bash"]);
  expect(result.code).toBe(0);
  await writeFile(bashScript, result.stdout);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** What bash offers for the command line `words` (the last one being completed), through the script. */
function complete(words: string[]): string[] {
  const script = `source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1))
_driftless
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const result = spawnSync("bash", ["-c", script, "bash", bashScript, ...words], { encoding: "utf8" });
  expect(result.stderr).toBe("");
  return result.stdout.split("\n").filter(Boolean);
}

describe("driftless completion bash", () => {
  it("registers itself for driftless when sourced", () => {
    const result = spawnSync("bash", ["-c", 'source "$1" && complete -p driftless', "bash", bashScript], {
      encoding: "utf8",
    });

    expect(result.status).toBe(0);
    expect(result.stdout).toContain("-F _driftless driftless");
  });

  it("completes commands, flags, and the values a flag accepts", () => {
    expect(complete(["driftless", "pl"])).toEqual(["plan"]);
    expect(complete(["driftless", "--log-level", "debug", "ap"])).toEqual(["apply"]);
    expect(complete(["driftless", "plan", "--out"])).toEqual(["--output"]);
    expect(complete(["driftless", "plan", "--output", ""])).toEqual(["text", "json", "markdown"]);
    expect(complete(["driftless", "run", "--state-st"])).toEqual(["--state-store"]);
    expect(complete(["driftless", "completion", ""])).toEqual(["bash", "zsh", "fish"]);
  });
});

// zsh and fish are not installed where these tests were written: their scripts are checked for
// content only.
describe.each(["zsh", "fish"])("driftless completion %s", (shell) => {
  it("prints a script naming every command and their flags", () => {
    const result = driftless(["completion", shell]);

    expect(result.code).toBe(0);
    for (const command of COMMANDS) expect(result.stdout).toContain(command);
    expect(result.stdout).toContain("state-store");
    expect(result.stdout).toContain("kubernetes");
    expect(result.stdout).toContain(
      shell === "zsh" ? "compdef _driftless driftless" : "complete -c driftless",
    );
  });
});

describe("driftless completion with an unknown shell", () => {
  it("exits 1 and names the shells it knows", () => {
    const result = driftless(["completion", "tcsh"]);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain("bash, zsh, fish");
  });
});
