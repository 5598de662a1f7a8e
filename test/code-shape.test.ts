import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

/**
 * The shape of src/ that review alone does not keep: no module imports itself round a circle (lists of
 * kinds and shared types sit at the bottom, where everyone may import them), and no answer of the
 * platform is widened back to `unknown` once its route's schema typed it. scripts/code-shape.mjs reads
 * src/ with the TypeScript compiler API; `node scripts/code-shape.mjs --list` prints every figure.
 */

type Figures = { importCycles: string[][]; widenedAnswers: string[] };

async function figures(): Promise<Figures> {
  const script = join(import.meta.dirname, "..", "scripts", "code-shape.mjs");
  const { stdout } = await promisify(execFile)(process.execPath, [script, "--json"]);
  return JSON.parse(stdout) as Figures;
}

describe("the shape of src/", () => {
  it("has no import cycle, and no answer widened to unknown", async () => {
    const { importCycles, widenedAnswers } = await figures();

    expect(importCycles).toEqual([]);
    expect(widenedAnswers).toEqual([]);
  });
});
