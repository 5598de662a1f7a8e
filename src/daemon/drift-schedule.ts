import {
  type BudgetOptions,
  DAEMON_READ_HEADROOM,
  MANAGEMENT_BUDGET,
  OBSERVABILITY_BUDGET,
} from "../platform/budget.js";
import { resourceId } from "../resources.js";

/**
 * Which resources a read round reads: round-robin per credential, at most a share of each credential's
 * rate budget per round, so that a large estate is read over several rounds and writes never starve.
 * Pure: the round keeps the cursors.
 */

export type ReadCaps = { management: number; observability: number };

/** The part of the poll period a round's reads are spread over (the daemon's spreadMs). */
export const READ_SPREAD = 0.8;

/**
 * Reads per round per credential for a poll period: what the daemon's budget lets reads take (its
 * requests less its read headroom, per window) over the part of the period a round is spread over, so
 * that the rounds fit what the budget will grant them: 14 per management key and 24 on the
 * observability token at the default one-minute period; fewer as the period shrinks, at least one.
 */
export function readCapsOf(pollPeriodMs: number): ReadCaps {
  const share = ({ requests, windowMs }: BudgetOptions, headroom: number) =>
    Math.max(1, Math.floor(((requests - headroom) * READ_SPREAD * pollPeriodMs) / windowMs));
  return {
    management: share(MANAGEMENT_BUDGET, DAEMON_READ_HEADROOM.management),
    observability: share(OBSERVABILITY_BUDGET, DAEMON_READ_HEADROOM.observability),
  };
}

/** The caps of the default poll period, one minute. */
export const DEFAULT_READ_CAPS: ReadCaps = readCapsOf(60_000);

/** A resource a round may read: its kind, name, and the organization whose key reads it (if any). */
export type Readable = { kind: string; name: string; organization?: string | undefined };

/**
 * Which management key an organization's requests go with (its source: several organizations may
 * share one key, and then one budget); by default each organization its own.
 */
export type KeyOf = (organizationId: string) => string;

/** The credential a read goes with: an organization's key, or the observability token. */
export const credentialOf = (resource: Readable, keyOf: KeyOf = (id) => id): string =>
  resource.kind === "Dashboard" ? "observability" : `management:${keyOf(resource.organization ?? "")}`;

/**
 * The resources of this round, and the cursors of the next: per credential, up to its cap, from where
 * the last round stopped (resources in id order, so a new manifest takes its place and the cursor
 * moves on over the same order).
 */
export function pickRound<R extends Readable>(
  resources: readonly R[],
  cursors: ReadonlyMap<string, string>,
  caps: ReadCaps,
  keyOf?: KeyOf,
): { picked: R[]; cursors: Map<string, string> } {
  const groups = new Map<string, R[]>();
  for (const resource of resources) {
    const credential = credentialOf(resource, keyOf);
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
