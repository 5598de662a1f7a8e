import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { driftless } from "./helpers/cli.js";

/**
 * Ids that become steps of a request's URL path are printed in every plan: `validate` refuses one with
 * a control character or a lone surrogate, so it can neither forge a line of a plan nor reach a URL.
 */

const watch = (alertId: string) => `apiVersion: driftless/v1
kind: AlertWatch
metadata:
  name: lag
spec:
  alertId: "${alertId}"
`;

describe("validate refuses path ids with control characters or lone surrogates", () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "driftless-ids-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ["a newline", String.raw`a51\n~ forged`],
    ["an ANSI sequence", String.raw`a51\e[31m`],
    ["a C1 control", String.raw`a51\u009b`],
    ["a lone surrogate", String.raw`a51\ud800`],
  ])("refuses an alertId with %s, naming file, line and field", async (_what, id) => {
    await writeFile(join(dir, "watch.yaml"), watch(id));

    const result = driftless(["validate", dir]);

    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^watch\.yaml:6:\d+ {2}AlertWatch\/lag {2}spec\.alertId: must not hold control characters or lone surrogates/m,
    );
  });

  it("still accepts an ordinary id", async () => {
    await writeFile(join(dir, "watch.yaml"), watch("65f1a2b3c4d5e6f708192a51"));

    const result = driftless(["validate", dir]);

    expect(result.stdout).toBe("1 valid manifest, no problems\n");
    expect(result.code).toBe(0);
  });
});
