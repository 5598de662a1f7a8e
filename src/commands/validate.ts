import type { Config } from "../config.js";
import { secretProblems } from "../manifests/check-secrets.js";
import { manifestId } from "../manifests/identity.js";
import { loadSettled } from "../manifests/load.js";
import type { Manifest } from "../manifests/manifest.js";
import { formatProblem, type Problem, sortProblems } from "../manifests/problem.js";
import type { Contract } from "../platform/routes.js";
import type { Io, OutputFormat } from "./io.js";

/**
 * `driftless validate [DIR]`: every manifest parsed and checked offline, each problem printed as
 * `file:line:col  Kind/name  message`. With resolveSecrets, every secret reference must also resolve;
 * with contract `full`, every manifest must also meet the platform's published contract.
 * Returns 0 when valid, 1 otherwise; throws ConfigError when the folder cannot be read, and
 * SupersededError when it changed under three reads in a row (never a report of two revisions).
 */
export async function validateCommand(
  config: Config,
  options: { output: OutputFormat; resolveSecrets: boolean; contract?: Contract },
  io: Io,
): Promise<number> {
  const set = await loadSettled(config.manifests);

  let problems: Problem[] = set.problems;
  // The minimal contract's rules are the manifests' own schemas; the published one adds its documents'
  // (imported only then: its validator library costs a start about 25 ms of CPU).
  if (options.contract === "full") {
    const { contractProblems } = await import("../reconcile/contract-problems.js");
    problems = sortProblems([...problems, ...(await contractProblems(set, "full"))]);
  }
  if (options.resolveSecrets) {
    const unresolved = await secretProblems(set.manifests, { env: io.env, secretsDir: config.secretsDir });
    problems = sortProblems([...problems, ...unresolved]);
  }
  const valid = problems.length === 0;

  if (options.output === "json") {
    io.out(
      JSON.stringify(
        {
          valid,
          root: set.root,
          ...(set.revision ? { revision: set.revision } : {}),
          manifests: set.manifests.map((m) => ({ kind: m.kind, name: m.name, ...m.position })),
          problems,
        },
        null,
        2,
      ),
    );
    return valid ? 0 : 1;
  }

  for (const problem of problems) io.out(formatProblem(problem));
  io.out(summary(set.manifests, problems));
  return valid ? 0 : 1;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/**
 * `12 valid manifests, no problems`, or `3 problems in 2 manifests; 10 of 12 manifests valid`: a
 * manifest that parsed but has a problem (an unresolved secret, a contract rule) is not valid, and a
 * problem too early to name its manifest (YAML syntax) is counted by file.
 */
function summary(manifests: readonly Manifest[], problems: readonly Problem[]): string {
  if (problems.length === 0) return `${plural(manifests.length, "valid manifest")}, no problems`;
  const invalid = new Set(problems.flatMap((p) => (p.resource ? [p.resource] : [])));
  const unnamed = new Set(problems.flatMap((p) => (p.resource ? [] : [p.file])));
  const valid = manifests.filter((m) => !invalid.has(manifestId(m))).length;
  const where = [
    ...(invalid.size > 0 ? [plural(invalid.size, "manifest")] : []),
    ...(unnamed.size > 0 ? [plural(unnamed.size, "file")] : []),
  ].join(" and ");
  return `${plural(problems.length, "problem")} in ${where}; ${valid} of ${plural(valid + invalid.size, "manifest")} valid`;
}
