import type { Config } from "../config.js";
import { secretProblems } from "../manifests/check-secrets.js";
import { manifestId } from "../manifests/identity.js";
import { loadRevision, type ManifestSet } from "../manifests/load.js";
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
  const set = await loadRevision(config.manifests);

  // Checks of the manifests that loaded valid: each problem they find makes its manifest invalid.
  const more: Problem[] = [];
  // The minimal contract's rules are the manifests' own schemas; the published one adds its documents'
  // (imported only then: its validator library costs a start about 25 ms of CPU).
  if (options.contract === "full") {
    const { contractProblems } = await import("../reconcile/contract-problems.js");
    more.push(...(await contractProblems(set, "full")));
  }
  if (options.resolveSecrets) {
    more.push(...(await secretProblems(set.manifests, { env: io.env, secretsDir: config.secretsDir })));
  }
  const problems = more.length > 0 ? sortProblems([...set.problems, ...more]) : set.problems;
  const named = new Set(more.map((p) => p.resource));
  const valid = set.manifests.filter((m) => !named.has(manifestId(m)));
  const counts = tally(set, valid, problems);

  if (options.output === "json") {
    io.out(
      JSON.stringify(
        {
          valid: problems.length === 0,
          root: set.root,
          ...(set.revision ? { revision: set.revision } : {}),
          manifests: valid.map((m) => ({ kind: m.kind, name: m.name, ...m.position })),
          problems,
          summary: counts,
        },
        null,
        2,
      ),
    );
    return problems.length === 0 ? 0 : 1;
  }

  for (const problem of problems) io.out(formatProblem(problem));
  io.out(summary(counts));
  return problems.length === 0 ? 0 : 1;
}

/**
 * What the summary counts, the same in text and JSON: every document read is a manifest, valid or
 * not (one that parsed but has a problem, an unresolved secret or a contract rule, is not valid); a
 * problem of a file with no document (unreadable, binary, too large, too deeply nested) is counted by
 * file.
 */
type Counts = { problems: number; manifests: number; valid: number; invalid: number; files: number };

function tally(set: ManifestSet, valid: readonly Manifest[], problems: readonly Problem[]): Counts {
  const invalid = set.invalid.length + set.manifests.length - valid.length;
  const withDocuments = new Set(set.invalid.map((d) => d.position.file));
  const kept = new Set(valid);
  for (const m of set.manifests) if (!kept.has(m)) withDocuments.add(m.position.file);
  const files = new Set(problems.map((p) => p.file).filter((file) => !withDocuments.has(file)));
  return {
    problems: problems.length,
    manifests: valid.length + invalid,
    valid: valid.length,
    invalid,
    files: files.size,
  };
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** `12 valid manifests, no problems`, or `3 problems in 2 manifests; 10 of 12 manifests valid`. */
function summary(counts: Counts): string {
  if (counts.problems === 0) return `${plural(counts.valid, "valid manifest")}, no problems`;
  const where = [
    ...(counts.invalid > 0 ? [plural(counts.invalid, "manifest")] : []),
    ...(counts.files > 0 ? [plural(counts.files, "file")] : []),
  ].join(" and ");
  return `${plural(counts.problems, "problem")} in ${where}; ${counts.valid} of ${plural(counts.manifests, "manifest")} valid`;
}
