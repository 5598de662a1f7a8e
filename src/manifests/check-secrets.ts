import { isDriftlessError, messageOf } from "../errors.js";
import { resourceId } from "../resources.js";
import { formatPath, type Manifest, positionOf } from "./manifest.js";
import type { Problem } from "./problem.js";
import { resolveSecret, type SecretSources, secretFields } from "./secrets.js";

/**
 * A problem for every secret reference that cannot be resolved now (unset variable, missing file, a
 * link out of the secrets folder). The values themselves are read and dropped, never returned.
 */
export async function secretProblems(
  manifests: readonly Manifest[],
  sources: SecretSources,
): Promise<Problem[]> {
  const problems: Problem[] = [];
  for (const manifest of manifests) {
    for (const { path, ref } of secretFields(manifest.spec)) {
      try {
        await resolveSecret(ref, sources);
      } catch (error) {
        if (!isDriftlessError(error)) throw error;
        problems.push({
          ...positionOf(manifest, path),
          resource: resourceId(manifest),
          field: formatPath(path),
          message: messageOf(error),
        });
      }
    }
  }
  return problems;
}
