import { describe, expect, it } from "vitest";
import { runFaultSoak } from "./helpers/soak/run.js";
import { soakSeconds, soakSeeds, soakSteps, soakTimeoutMs, summary } from "./helpers/soak/settings.js";

/**
 * The fault soak on the file store: the built daemon against the simulator while seeded random
 * steps kill it, inject faults, swap the link and edit the manifests; after every step no endpoint is
 * created twice, the state loads, no tile id is lost and no secret shows, and every resource ends
 * Synced or says why. A failure prints the seed and the steps, and how to replay them. Needs dist/
 * built. See docs/development.md, "The fault soak".
 */

describe("the fault soak on the file store", () => {
  for (const seed of soakSeeds()) {
    it(
      `keeps every invariant through random kills, faults and edits (seed ${seed})`,
      async () => {
        const report = await runFaultSoak({
          seed,
          store: "file",
          seconds: soakSeconds(),
          steps: soakSteps(),
          testFile: "test/fault-soak-file.test.ts",
        });

        console.log(summary(report));
        expect(report.stepList.at(-1)).toMatch(/daemon stopped, exit code 0/);
      },
      soakTimeoutMs(),
    );
  }
});
