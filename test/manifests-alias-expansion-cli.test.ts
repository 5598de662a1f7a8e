import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";
import { ciDeployerKey } from "./helpers/manifests.js";
import { platformEnv } from "./helpers/platform-env.js";

/**
 * A manifest under every limit that its aliases make huge: a 400 KB Dashboard with a list of 200,000
 * numbers and 99 aliases to it (yaml's alias count lets it through) is 20 million values once
 * expanded; it killed `driftless run` under the deployment's heap limit at every start, and a 121 KB
 * one made `plan -o json` print 150 MB. Such a manifest (here a 40 KB one: 2 million values) is now a
 * problem of its own, and the others go on.
 */

const header = (name: string) => `apiVersion: driftless/v1
kind: Dashboard
metadata:
  name: ${name}
spec:
  dashboardId: ${ids.dashboardId}
  name: Big
  tiles:
    - key: t
      name: T
      x: 0
      y: 0
      w: 6
      h: 3
      series:
        - type: time
          aggFn: count
          where: "level:error"
          numberFormat:
`;

/** 20,000 numbers anchored once and aliased 99 times: 41 KB of text, 4 MB of JSON. */
const bomb = () => {
  const numbers = Array.from({ length: 20_000 }, (_, i) => i % 10).join(",");
  const aliases = Array.from({ length: 99 }, (_, i) => `            k${i}: *n`).join("\n");
  return `${header("big")}            base: &n [${numbers}]\n${aliases}\n`;
};

const endless = `${header("endless")}            base: &n [1, *n]\n`;

const key = ciDeployerKey("renamed in git");

describe("a manifest whose aliases expand it past what a manifest file may hold (built CLI)", () => {
  let sim: Simulator;
  let root: string;
  let manifests: string;

  beforeEach(async () => {
    sim = await startSimulator({ rateLimit: { management: false, observability: false } });
    root = await mkdtemp(join(tmpdir(), "driftless-aliases-"));
    manifests = join(root, "manifests");
    await mkdir(manifests);
    await writeFile(join(manifests, "big.yaml"), bomb());
    await writeFile(join(manifests, "endless.yaml"), endless);
    await writeFile(join(manifests, "key.yaml"), key);
  });
  afterEach(async () => {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  });

  it("is a problem of that manifest in validate, named at its file and line", async () => {
    const result = await driftlessAsync(["validate", manifests]);

    expect(result.code).toBe(1);
    expect(result.stdout).toBe(
      [
        "big.yaml:1:1  Dashboard/big  its aliases expand it past 1048576 characters of data, more than a manifest file may hold: write the repeated values out, or split it",
        "endless.yaml:1:1  Dashboard/endless  an alias names a value that contains the alias: the document never ends",
        "2 problems in 2 manifests; 1 of 3 manifests valid",
        "",
      ].join("\n"),
    );
  });

  it("leaves plan -o json small, with the problem listed and the other manifests planned", async () => {
    const env = {
      DRIFTLESS_MANIFESTS: manifests,
      DRIFTLESS_STATE_DIR: join(root, "state"),
      DRIFTLESS_SECRETS_DIR: root,
      ...platformEnv(sim),
    };

    const plan = await driftlessAsync(["plan", "-o", "json"], env);

    expect(plan.code, plan.stderr).toBe(1);
    expect(plan.stdout.length).toBeLessThan(20_000);
    const doc = JSON.parse(plan.stdout);
    expect(doc.problems.map((p: { resource: string }) => p.resource)).toEqual([
      "Dashboard/big",
      "Dashboard/endless",
    ]);
    expect(doc.resources.map((r: { kind: string; outcome: string }) => `${r.kind} ${r.outcome}`)).toEqual([
      "ApiKey send",
    ]);
  });
});
