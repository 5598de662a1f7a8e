import { resourceId } from "../resources.js";

/**
 * Which resources a read round reads: round-robin per credential, at most a share of each credential's
 * rate budget per round, so that a large estate is read over several rounds and writes never starve.
 * Pure: the round keeps the cursors.
 */

/**
 * Reads per round on one management key: the key's budget is 9 requests per 10 s (54 a minute, the
 * default poll period); half of it is left to writes, retries and the alert and backup polls.
 */
export const MANAGEMENT_READS_PER_ROUND = 25;
/** Reads per round on the observability token: its budget is 90 a minute; half is left to the rest. */
export const OBSERVABILITY_READS_PER_ROUND = 40;

export type ReadCaps = { management: number; observability: number };

export const DEFAULT_READ_CAPS: ReadCaps = {
  management: MANAGEMENT_READS_PER_ROUND,
  observability: OBSERVABILITY_READS_PER_ROUND,
};

/** A resource a round may read: its kind, name, and the organization whose key reads it (if any). */
export type Readable = { kind: string; name: string; organization?: string | undefined };

/** The credential a read goes with: an organization's key, or the observability token. */
export const credentialOf = (resource: Readable): string =>
  resource.kind === "Dashboard" ? "observability" : `management:${resource.organization ?? ""}`;

/**
 * The resources of this round, and the cursors of the next: per credential, up to its cap, from where
 * the last round stopped (resources in id order, so a new manifest takes its place and the cursor
 * moves on over the same order).
 */
export function pickRound<R extends Readable>(
  resources: readonly R[],
  cursors: ReadonlyMap<string, string>,
  caps: ReadCaps,
): { picked: R[]; cursors: Map<string, string> } {
  const groups = new Map<string, R[]>();
  for (const resource of resources) {
    const credential = credentialOf(resource);
    const group = groups.get(credential) ?? [];
    group.push(resource);
    groups.set(credential, group);
  }
  const picked: R[] = [];
  const next = new Map<string, string>();
  for (const [credential, group] of groups) {
    group.sort((a, b) => (resourceId(a) < resourceId(b) ? -1 : 1));
    const cap = credential === "observability" ? caps.observability : caps.management;
    const after = cursors.get(credential);
    // Start after the last one read: the first id greater than it (or the start, past the end).
    const found = after === undefined ? 0 : group.findIndex((r) => resourceId(r) > after);
    const start = found < 0 ? 0 : found;
    const count = Math.min(cap, group.length);
    for (let i = 0; i < count; i++) picked.push(group[(start + i) % group.length] as R);
    const last = group[(start + count - 1) % group.length];
    if (last) next.set(credential, resourceId(last));
  }
  return { picked, cursors: next };
}
