import { setTimeout as wait } from "node:timers/promises";
import { digestOf, jsonPreview, shownValue } from "../bounded-values.js";
import type { DriftField } from "../drift/index.js";
import { messageOf } from "../errors.js";
import { observeOf } from "../kinds/index.js";
import { isNone, type PlanContext } from "../kinds/kind.js";
import { DRIFTLESS_ANNOTATIONS } from "../manifests/fields.js";
import type { Manifest } from "../manifests/manifest.js";
import { mapLimited } from "../map-limited.js";
import { createRead, type PlatformClient } from "../platform/client.js";
import { type Compared, contextOfRecords, readAndCompare } from "../reconcile/plan-drift.js";
import { resourceId } from "../resources.js";
import type { Records } from "../state/saved-records.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import { DEFAULT_READ_CAPS, type KeyOf, pickRound, type ReadCaps } from "./drift-schedule.js";

/**
 * The daemon's read rounds (DRIFTLESS_READS=on): on the poll schedule, each managed resource that the
 * last pass left Synced is read (round-robin within the budget, drift-schedule.ts), compared with its
 * manifest (drift/compare.ts), and what was found is kept for /status: when a read last found it
 * equal, or how it drifted. A drift found is counted and told once (onDrift), and put back by the next
 * write unless the manifest says `driftless/drift: report`. A read that fails is that resource's
 * transient problem: logged and tried again next round, never a crash.
 */

/** What to do about a drift: the next write puts it back, or it is only reported. */
export type DriftAction = "correct" | "report";

/** A drift a read found. */
export type Drift = {
  kind: string;
  name: string;
  organization?: string;
  /**
   * The fields that differ as they are shown: each value cut when long or deep (shownValue), the
   * first SHOWN_FIELDS of them, then one that says how many more differ.
   */
  fields: DriftField[];
  /** How many fields differ in all. */
  fieldCount: number;
  action: DriftAction;
  /** Why it is only reported, when it is. */
  reportedBecause?: string;
  foundAt: string;
  requestId?: string;
};

/** What the reads know of one resource. */
export type Verification = {
  /** When a read last found the live object equal to the manifest. */
  verifiedAt?: string;
  drift?: Drift;
  /** Why the last read failed, when it did. */
  readError?: string;
  /**
   * The digest of the whole fields of `drift` (digestOf): a drift is the same as the one before when
   * its fields are, by value, whatever the order of their members.
   */
  driftDigest?: string;
};

export type ReadRoundsDeps = {
  /**
   * The records as last loaded or saved (SavedRecords): a read needs a resource's own (a dashboard's tile
   * ids, an endpoint's server id) and those of the resources it names (a pipe's endpoints).
   */
  records: () => Promise<Records>;
  platform: PlatformClient;
  metrics: Metrics;
  logger: Logger;
  /** A new drift was found (not one already told): notify, and ask for a write when it is corrected. */
  onDrift?: (drift: Drift) => void;
  /** A drift that was told is gone (put back by a write, or by someone else). */
  onDriftGone?: (drift: Drift) => void;
  /** Reads per round per credential; default DEFAULT_READ_CAPS (a one-minute poll period's). */
  caps?: ReadCaps;
  /** The management key an organization's reads go with: organizations that share a key share its caps. */
  keyOf?: KeyOf;
  /** Reads in flight at once; the budget still decides when each is sent. Default 4. */
  concurrency?: number;
  /**
   * The time a round's reads are spread over, evenly (default 0: all at once, four at a time). The
   * daemon spreads them over most of the poll period, so that the reads never fill the rate budget's
   * window ahead of a change from git: priority orders the requests that wait, not the slots already
   * taken.
   */
  spreadMs?: number;
  /** Waits `ms` (or until `signal` aborts); default a timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Milliseconds on a clock that never steps back; default performance.now. */
  monotonic?: () => number;
  now?: () => Date;
};

/** A resource the last pass left Synced: its manifest, and when it was last applied. */
export type SyncedResource = { manifest: Manifest; lastAppliedAt: string | undefined };

/** Whether a kind is read for drift: the kinds driftless writes. */
const readable = (manifest: Manifest): boolean => !isNone(observeOf(manifest.kind));

export class ReadRounds {
  private cursors = new Map<string, string>();
  private found = new Map<string, Verification>();

  constructor(private readonly deps: ReadRoundsDeps) {}

  /** What the reads know of resource `id` (`Kind/name`). */
  verification(id: string): Verification | undefined {
    return this.found.get(id);
  }

  /** Forgets everything (leadership lost: the next leader reads for itself). */
  forget(): void {
    this.found = new Map();
    this.cursors = new Map();
  }

  /**
   * A write re-sent resource `id` and the platform took it: its drift is put back. The next read
   * verifies it.
   */
  corrected(id: string): void {
    const known = this.found.get(id);
    if (!known?.drift) return;
    this.deps.logger.info({ resource: id, fields: known.drift.fields.map((f) => f.path) }, "drift corrected");
    this.deps.onDriftGone?.(known.drift);
    const { drift: _gone, ...rest } = known;
    this.found.set(id, rest);
  }

  /**
   * One round: reads this round's share of `synced`, compares, records; returns the resources whose
   * drift is to be corrected (the drifts to correct found in this round, and those still not put back).
   * `stillApplied(id, at)` tells
   * whether the resource is still as applied at `at` when its answer is in: a pass that applied a new
   * revision meanwhile makes the comparison moot (it would show git's own change as drift).
   */
  async round(
    synced: readonly SyncedResource[],
    stillApplied: (id: string, lastAppliedAt: string | undefined) => boolean,
    signal?: AbortSignal,
  ): Promise<string[]> {
    const candidates = synced
      .filter(({ manifest }) => readable(manifest))
      .map((resource) => ({
        ...resource,
        kind: resource.manifest.kind,
        name: resource.manifest.name,
        organization: organizationOf(resource.manifest),
      }));
    const live = new Set(candidates.map((r) => resourceId(r)));
    for (const id of [...this.found.keys()])
      if (!live.has(id) && !this.found.get(id)?.drift) this.found.delete(id);
    const caps = this.deps.caps ?? DEFAULT_READ_CAPS;
    const { picked, cursors } = pickRound(candidates, this.cursors, caps, this.deps.keyOf);
    this.cursors = cursors;
    const spacing = picked.length > 0 ? (this.deps.spreadMs ?? 0) / picked.length : 0;
    // An abort ends the wait; the read after it sees the signal and is not sent.
    const sleep =
      this.deps.sleep ??
      ((ms: number, signal?: AbortSignal) => wait(ms, undefined, { signal }).catch(() => {}));
    const monotonic = this.deps.monotonic ?? (() => performance.now());
    const started = monotonic();
    let index = 0;
    const records = picked.length > 0 ? await this.deps.records() : {};
    // How a resource sees those it names (an alert its dashboard's tiles): by the round's manifests.
    const named = synced.map(({ manifest }) => manifest);
    const context = contextOfRecords(records, this.deps.now?.() ?? new Date(), named);
    await mapLimited(picked, this.deps.concurrency ?? 4, async ({ manifest, lastAppliedAt }) => {
      const startAt = index++ * spacing;
      if (spacing > 0) await sleep(Math.max(0, startAt - (monotonic() - started)), signal);
      if (signal?.aborted) return;
      await this.readOne(manifest, records, context, signal, (id) => stillApplied(id, lastAppliedAt));
    });
    const heal: string[] = [];
    for (const { manifest } of picked) {
      const id = resourceId(manifest);
      if (this.found.get(id)?.drift?.action === "correct") heal.push(id);
    }
    return heal;
  }

  private async readOne(
    manifest: Manifest,
    records: Records,
    context: PlanContext,
    signal: AbortSignal | undefined,
    stillApplied: (id: string) => boolean,
  ): Promise<void> {
    const id = resourceId(manifest);
    const { metrics, logger } = this.deps;
    const { kind } = manifest;
    let found: Compared | undefined;
    try {
      const read = createRead(this.deps.platform);
      found = await readAndCompare(read, manifest, records[id], context, signal ? { signal } : {});
    } catch (error) {
      if (signal?.aborted) return;
      metrics.readTotal.inc({ kind, result: "error" });
      logger.warn({ resource: id, reason: messageOf(error) }, "read failed: tried again next round");
      this.found.set(id, { ...this.found.get(id), readError: messageOf(error) });
      return;
    }
    // Nothing to read yet (an endpoint not created), or a pass applied a new revision meanwhile.
    if (!found || !stillApplied(id)) return;
    const at = (this.deps.now?.() ?? new Date()).toISOString();
    if (found.live === undefined) {
      metrics.readTotal.inc({ kind, result: "missing" });
      const fields = [{ path: "(object)", want: "(exists)", have: null }];
      return this.drifted(
        manifest,
        fields,
        at,
        found.requestId,
        "the platform no longer has it, and a write cannot create it again: recreate it, or remove its manifest",
      );
    }
    if (found.fields.length === 0) {
      metrics.readTotal.inc({ kind, result: "equal" });
      const before = this.found.get(id);
      if (before?.drift) {
        logger.info({ resource: id }, "drift gone: the live object is equal to the manifest again");
        this.deps.onDriftGone?.(before.drift);
      }
      this.found.set(id, { verifiedAt: at });
      return;
    }
    metrics.readTotal.inc({ kind, result: "drifted" });
    this.drifted(manifest, found.fields, at, found.requestId, found.fixed);
  }

  /** Records a drift; a new one (other fields or values than the one known) is counted, logged and told. */
  private drifted(
    manifest: Manifest,
    fields: DriftField[],
    at: string,
    requestId: string | undefined,
    cannotCorrect?: string,
  ): void {
    const id = resourceId(manifest);
    const before = this.found.get(id);
    const reportOnly = manifest.annotations[DRIFTLESS_ANNOTATIONS.drift] === "report";
    const reportedBecause =
      cannotCorrect ?? (reportOnly ? `its manifest says ${DRIFTLESS_ANNOTATIONS.drift}: report` : undefined);
    const organization = organizationOf(manifest);
    const driftDigest = digestOf(fields);
    const same = before?.drift !== undefined && before.driftDigest === driftDigest;
    const drift: Drift = {
      kind: manifest.kind,
      name: manifest.name,
      ...(organization ? { organization } : {}),
      fields: shownFields(fields),
      fieldCount: fields.length,
      action: reportedBecause ? "report" : "correct",
      ...(reportedBecause ? { reportedBecause } : {}),
      foundAt: same && before?.drift ? before.drift.foundAt : at,
      ...(requestId ? { requestId } : {}),
    };
    const verifiedAt = before?.verifiedAt;
    this.found.set(id, { ...(verifiedAt ? { verifiedAt } : {}), drift, driftDigest });
    if (same) return;
    this.deps.metrics.driftTotal.inc({ kind: manifest.kind });
    this.deps.logger.warn(
      { resource: id, action: drift.action, fields: drift.fields, requestId },
      drift.action === "correct"
        ? "drift found: the live object was changed outside git; the next write puts it back"
        : `drift found: the live object was changed outside git; reported, not corrected (${reportedBecause})`,
    );
    this.deps.onDrift?.(drift);
  }
}

const organizationOf = (manifest: Manifest): string | undefined =>
  "organizationId" in manifest.spec ? manifest.spec.organizationId : undefined;

/** A drift field as /status, logs and notifications show it: a long or deep value cut (shownValue). */
const shown = (field: DriftField): DriftField => ({
  path: field.path,
  want: shownValue(field.want),
  have: shownValue(field.have),
});

/** Fields a drift keeps to show (in /status, a log line, a notification); the others are counted. */
const SHOWN_FIELDS = 50;

/** The fields as shown: each value cut (shown), at most SHOWN_FIELDS, then one saying how many more differ. */
function shownFields(fields: readonly DriftField[]): DriftField[] {
  const kept = fields.slice(0, SHOWN_FIELDS).map(shown);
  const more = fields.length - kept.length;
  return more > 0 ? [...kept, { path: "…", want: null, have: `(${more} more fields differ)` }] : kept;
}

/** Fields a status message names; the others are counted (a dashboard may differ in many tiles). */
const DESCRIBED_FIELDS = 10;

/** Characters of each value a status message shows. */
const DESCRIBED_CHARS = 200;

/** One line naming the fields and both values, for status messages and the page. */
export function describeDrift(drift: Drift): string {
  const value = (v: unknown) => (v === undefined ? "undefined" : jsonPreview(v, DESCRIBED_CHARS));
  const named = drift.fields
    .slice(0, Math.min(DESCRIBED_FIELDS, drift.fieldCount))
    .map((f) => `${f.path}: git ${value(f.want)}, live ${value(f.have)}`);
  const more = drift.fieldCount - named.length;
  const fields = [...named, ...(more > 0 ? [`and ${more} more field(s)`] : [])].join("; ");
  const next =
    drift.action === "correct"
      ? "the next write puts it back"
      : `reported, not corrected: ${drift.reportedBecause ?? "report only"}`;
  return `changed outside git (found ${drift.foundAt}): ${fields}; ${next}`;
}
