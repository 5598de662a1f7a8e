import type { Config } from "../config.js";
import { secretProblems } from "../manifests/check-secrets.js";
import { loadSettled } from "../manifests/load.js";
import { formatProblem, type Problem, sortProblems } from "../manifests/problem.js";
import { contractProblems } from "../plan/contract-problems.js";
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
  // The minimal contract's rules are the manifests' own schemas; the published one adds its documents'.
  if (options.contract === "full")
    problems = sortProblems([...problems, ...contractProblems(set.manifests, "full")]);
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
  const count = `${set.manifests.length} valid manifest${set.manifests.length === 1 ? "" : "s"}`;
  io.out(
    valid
      ? `${count}, no problems`
      : `${problems.length} problem${problems.length === 1 ? "" : "s"}; ${count}`,
  );
  return valid ? 0 : 1;
}
