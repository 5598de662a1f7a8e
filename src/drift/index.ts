/**
 * Drift: reading a live object and comparing it with what its manifest states. read.ts sends the
 * read, compare.ts is the pure comparison; the daemon's drift round (daemon/drift-round.ts) and
 * `plan` use both.
 */

export { type Comparable, type CompareContext, compare, type DriftField } from "./compare.js";
export {
  type LiveAnswer,
  listEndpoints,
  READ_KINDS,
  type ReadOptions,
  type ReadTarget,
  readLive,
  readRoute,
} from "./read.js";
