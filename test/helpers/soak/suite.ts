import { describe, expect, it } from "vitest";
import { runFaultSoak, type SoakOptions } from "./run.js";
import { soakSeconds, soakSeeds, soakSteps, soakTimeoutMs, summary } from "./settings.js";

/**
 * The fault soak of one state store, one test per seed (settings.ts): the built daemon against the
 * simulator while seeded random steps kill it, inject faults, swap the link and edit the manifests;
 * after every step no endpoint is created twice, the state loads, no tile id is lost and no secret
 * shows, and every resource ends Synced or says why. A failure prints the seed and the steps, and how
 * to replay them with `testFile`. Needs dist/ built. See docs/development.md, "The fault soak".
 */
export function soakSuite(title: string, store: SoakOptions["store"], testFile: string): void {
  describe(title, () => {
    for (const seed of soakSeeds()) {
      it(
        `keeps every invariant through random kills, faults and edits (seed ${seed})`,
        async () => {
          const report = await runFaultSoak({
            seed,
            store,
            seconds: soakSeconds(),
            steps: soakSteps(),
            testFile,
          });

          console.log(summary(report));
          expect(report.stepList.at(-1)).toMatch(/daemon stopped, exit code 0/);
        },
        soakTimeoutMs(),
      );
    }
  });
}
