import { createOf, kindOf } from "../kinds/index.js";
import { isNone } from "../kinds/kind.js";
import { DRIFTLESS_ANNOTATIONS } from "../manifests/fields.js";
import { apiObjectOf, manifestId, manifestObject } from "../manifests/identity.js";
import type { Manifest } from "../manifests/manifest.js";
import { objectIdOf, type ResourceStatus, resourceId, resultOf } from "../resources.js";
import type { ResourceRecord } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import type { Pass } from "./types.js";

/**
 * Renames and removals, before a pass applies anything. The state stays keyed by `Kind/name`; a
 * manifest without a record takes over the record of a manifest that is gone when both address the
 * same API object (or when it names the old one in `driftless/previous-name`), so a rename keeps tile
 * ids, owned list entries and an endpoint's id. A record whose manifest is gone is kept, sends nothing,
 * and shows as Unmanaged until the retention has passed, then it is dropped.
 */

/** How long the record of a deleted manifest is kept, unless DRIFTLESS_UNMANAGED_RETENTION says. */
export const DEFAULT_UNMANAGED_RETENTION_MS = 30 * 86_400_000;

export type RecordChanges = {
  /** The records kept without a manifest, as statuses (Unmanaged). */
  unmanaged: ResourceStatus[];
  /** Records this pass first found without a manifest and orphaned (left their object as it is). */
  orphaned: string[];
  /**
   * Records without a manifest whose deletion policy deletes their object (deletes.ts sends it, and
   * drops the record once it is gone).
   */
  deletions: string[];
  /** The records dropped because their manifest has been gone longer than the retention. */
  dropped: ResourceStatus[];
  /** Ids of the records this changed (to be saved). */
  changed: string[];
};

export type FollowOptions = {
  retentionMs: number;
  now: Date;
  log: Logger;
  /** false (DRIFTLESS_PRUNE=off): every object whose manifest left git is orphaned, none deleted. */
  prune: boolean;
};

/** Follows renames, keeps each record's API object, and keeps or drops the records without a manifest. */
export function followManifests(pass: Pass, options: FollowOptions): RecordChanges {
  const changed = [...followRenames(pass, options.log), ...stampObjects(pass)];
  const gone = keepOrDrop(pass, options);
  return { ...gone, changed: [...changed, ...gone.changed] };
}

/** Whether a record's manifest is in this revision (valid, or invalid: then it is only not applied). */
const hasManifest = (pass: Pass, id: string): boolean => pass.valid.has(id) || pass.invalid.has(id);

/** Moves the record of a gone manifest to the manifest that renamed it; the ids moved (old and new). */
function followRenames(pass: Pass, log: Logger): string[] {
  const { resources } = pass.state;
  const orphans = new Map<string, string>();
  for (const id in resources) {
    const object = resources[id]?.object;
    if (object && !hasManifest(pass, id)) orphans.set(object, id);
  }
  const moved: string[] = [];
  for (const manifest of pass.set.manifests) {
    const id = manifestId(manifest);
    if (resources[id]) continue;
    const from = previousOf(pass, manifest) ?? orphanOf(orphans, manifest);
    const record = from ? resources[from] : undefined;
    if (!from || !record) continue;
    if (record.object) orphans.delete(record.object);
    const { unmanagedSince: _back, ...kept } = record;
    resources[id] = { ...kept, kind: manifest.kind, name: manifest.name };
    delete resources[from];
    moved.push(from, id);
    log.info({ resource: id, from }, "record follows the renamed manifest");
  }
  return moved;
}

/** The id of the record `driftless/previous-name` names, when its manifest is gone. */
function previousOf(pass: Pass, manifest: Manifest): string | undefined {
  const previous = manifest.annotations[DRIFTLESS_ANNOTATIONS.previousName];
  if (!previous) return undefined;
  const id = resourceId({ kind: manifest.kind, name: previous });
  return pass.state.resources[id] && !hasManifest(pass, id) ? id : undefined;
}

function orphanOf(orphans: ReadonlyMap<string, string>, manifest: Manifest): string | undefined {
  const object = manifestObject(manifest);
  return object ? orphans.get(object) : undefined;
}

/** The API object a managed record is of: the manifest's ids, or the server id of an object driftless created. */
function objectOfRecord(manifest: Manifest, record: ResourceRecord): string | undefined {
  const create = createOf(manifest.kind);
  if (isNone(create) || !record.serverId) return manifestObject(manifest);
  return apiObjectOf(manifest.kind, { ...manifest.spec, [create.idField]: record.serverId });
}

/**
 * What happens to a manifest's object once the manifest leaves git: its `driftless/deletion-policy`,
 * else `delete` for an object driftless creates (the manifest names no id) and `orphan` for one it
 * adopted by id. A kind that is never deleted (an organization, a watch) has none.
 */
export function deletionPolicyOf(manifest: Manifest): ResourceRecord["deletionPolicy"] {
  const module = kindOf(manifest.kind);
  if (isNone(module.delete)) return undefined;
  const stated = manifest.annotations[DRIFTLESS_ANNOTATIONS.deletionPolicy];
  if (stated === "delete" || stated === "orphan") return stated;
  return !isNone(module.create) && module.create.idOf(manifest.spec) === undefined ? "delete" : "orphan";
}

/**
 * The record of `manifest` with what it tells of its object written (its API object, its address, its
 * deletion policy) and without an Unmanaged mark.
 */
export function managedRecord(manifest: Manifest, record: ResourceRecord): ResourceRecord {
  const object = objectOfRecord(manifest, record);
  const address = kindOf(manifest.kind).address(manifest.spec, record);
  const deletionPolicy = deletionPolicyOf(manifest);
  if (
    record.object === object &&
    record.unmanagedSince === undefined &&
    record.deletionPolicy === deletionPolicy &&
    sameAddress(record.address, address)
  )
    return record;
  const { unmanagedSince: _back, object: _old, address: _a, deletionPolicy: _p, ...rest } = record;
  return {
    ...rest,
    ...(object ? { object } : {}),
    ...(address ? { address } : {}),
    ...(deletionPolicy ? { deletionPolicy } : {}),
  };
}

/** Whether two addresses (flat path parameters) are equal: runs for every record of every pass. */
function sameAddress(
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

/** Writes each managed record's API object (records of an older driftless have none), and takes back the Unmanaged mark of a re-added one. */
function stampObjects(pass: Pass): string[] {
  const stamped: string[] = [];
  for (const manifest of pass.set.manifests) {
    const id = manifestId(manifest);
    const record = pass.state.resources[id];
    if (!record) continue;
    const managed = managedRecord(manifest, record);
    if (managed === record) continue;
    pass.state.resources[id] = managed;
    stamped.push(id);
  }
  return stamped;
}

/**
 * The records without a manifest: those whose deletion policy deletes their object are handed to the
 * deletes (unless pruning is off); the others are orphaned: marked Unmanaged (from now), and dropped
 * past the retention.
 */
function keepOrDrop(pass: Pass, { retentionMs, now, log, prune }: FollowOptions): RecordChanges {
  const kept: RecordChanges = { unmanaged: [], orphaned: [], deletions: [], dropped: [], changed: [] };
  // A file that could not be read as far as its kind and name may hold any of these manifests: then no
  // record starts to count as deleted, and none is dropped, until the revision reads whole again.
  const unsure = pass.set.problems.some((problem) => problem.resource === undefined);
  for (const id in pass.state.resources) {
    const record = pass.state.resources[id];
    if (!record || hasManifest(pass, id)) continue;
    if (prune && record.deletionPolicy === "delete" && record.unmanagedSince === undefined) {
      kept.deletions.push(id);
      continue;
    }
    if (unsure && record.unmanagedSince === undefined) continue;
    const since = record.unmanagedSince ?? now.toISOString();
    if (record.unmanagedSince === undefined) {
      pass.state.resources[id] = { ...record, unmanagedSince: since };
      kept.changed.push(id);
      kept.orphaned.push(id);
    }
    const until = new Date(Date.parse(since) + retentionMs);
    if (!unsure && until.getTime() <= now.getTime()) {
      delete pass.state.resources[id];
      kept.changed.push(id);
      kept.dropped.push(statusOf(record, `dropped: its manifest has been gone since ${since}`));
      log.info({ resource: id, unmanagedSince: since }, "record dropped: its manifest is gone for good");
      continue;
    }
    kept.unmanaged.push(
      statusOf(
        record,
        `its manifest is gone since ${since}${orphanedBecause(record, prune)}: nothing is sent, and the record is kept until ${until.toISOString()} so that re-adding the manifest loses nothing (driftless forget ${id} drops it now)`,
      ),
    );
  }
  return kept;
}

/** Why the object of a record without a manifest is left as it is, when a setting or its policy says so. */
function orphanedBecause(record: ResourceRecord, prune: boolean): string {
  if (record.deletionPolicy === "orphan")
    return " and its deletion policy is orphan (its object is left as it is)";
  if (record.deletionPolicy === "delete" && !prune)
    return " and DRIFTLESS_PRUNE=off leaves its object as it is";
  return "";
}

function statusOf(record: ResourceRecord, message: string): ResourceStatus {
  return resultOf(record, "unmanaged", { id: objectIdOf(record), message, lastAppliedAt: record.appliedAt });
}
