/**
 * Drift: reading a live object and comparing it with what its manifest states. read.ts sends the
 * read its kind names, compare.ts is the generic comparison each kind's module uses; the daemon's
 * read rounds (daemon/drift-reads.ts) and `plan` / `apply` with reads on use both.
 */

export { type DriftField, type ListRule, type Rules, walk } from "./compare.js";
export { type LiveAnswer, type ReadOptions, readLive } from "./read.js";
