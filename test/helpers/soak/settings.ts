import type { SoakReport } from "./run.js";

/**
 * What a soak test file runs, from the environment (docs/development.md, "The fault soak"): SOAK_SEED
 * alone when set, else the fixed seed and SOAK_RANDOM_SEEDS random ones (default 0: `npm test` soaks
 * the fixed seed, the same steps every run; random seeds explore on request); SOAK_SECONDS of
 * faults each (default 10); SOAK_STEPS, exactly that many steps instead (a replay).
 */

/** The seed every run of the suite soaks, beside the random ones. */
export const FIXED_SEED = 20;

export function soakSeeds(): number[] {
  const given = process.env.SOAK_SEED;
  if (given) return [Number(given)];
  const random = Number(process.env.SOAK_RANDOM_SEEDS ?? 0);
  return [FIXED_SEED, ...Array.from({ length: random }, () => 1 + Math.floor(Math.random() * 999_999))];
}

export const soakSeconds = (): number => Number(process.env.SOAK_SECONDS ?? 10);

export const soakSteps = (): number | undefined =>
  process.env.SOAK_STEPS ? Number(process.env.SOAK_STEPS) : undefined;

/** The test's time-out: the faults, then up to the quiet phase's limits and a daemon's starts. */
export function soakTimeoutMs(): number {
  const steps = soakSteps();
  return (steps === undefined ? soakSeconds() * 1000 : steps * 5_000) + 420_000;
}

/** The report as a few lines; the whole step list too when SOAK_PRINT_STEPS=1. */
export function summary(report: SoakReport): string {
  const faults = Object.entries(report.faults)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, n]) => `${kind} ×${n}`)
    .join(", ");
  return [
    `fault soak: seed ${report.seed}, ${report.store} store, ${report.contract} contract: ${report.steps} steps in ${report.faultSeconds} s of faults (${report.totalSeconds} s in all)`,
    `  ${report.kills} kills and ${report.starts} starts of the daemon, ${report.edits} edits (${report.renames} renames), ${report.passes} passes`,
    `  faults: ${faults || "none"}`,
    `  operator: ${report.operator.join(" | ") || "never needed"}; Unknown without a create on the wire: ${report.unknownWithoutCreate}`,
    ...(process.env.SOAK_PRINT_STEPS === "1" ? report.stepList : []),
  ].join("\n");
}
