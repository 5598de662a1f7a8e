import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { keyHashes } from "../../../src/platform/management.js";
import type { ApiKey, RecordedRequest, Simulator } from "../../../src/simulator/index.js";
import type { LogLine } from "../daemon-process.js";
import { CREATE_ROUTES } from "./faults.js";
import { COLLECTIONS, type Collection, type Owned } from "./world.js";

/**
 * The invariants of creates and deletes, checked against what the simulator holds and received:
 * no manifest object ever has two objects on the platform, nor more create POSTs than once plus the
 * operator's allowances plus its objects deleted since; no pass sends more deletes than the
 * mass-deletion guard of its daemon allows, a daemon with DRIFTLESS_PRUNE=off none; no object is
 * deleted that its policy keeps (adopted by id, annotated orphan, the key driftless authenticates
 * with); and every key driftless created has its id and secret in its target.
 */

type PlatformObject = { id: string; name?: string; description?: string };

/** What identifies an object of `collection` for its whole life: an endpoint's description, else its name. */
const identityOf = (collection: Collection, object: { name?: unknown; description?: unknown }) =>
  String((collection === "endpoints" ? object.description : object.name) ?? "");

/** One object the platform made while the soak ran. */
type Made = { id: string; collection: Collection; identity: string; at: number };

/**
 * Every object the platform makes while the soak runs, at the moment it is made: the simulator keeps
 * each collection in one array for its whole life, pushes a created object onto it and splices a
 * deleted one out, so a push seen here is a create taking effect, however soon the object is deleted
 * again. A push of an identity the collection still holds is a duplicate create.
 */
export class PlatformLedger {
  readonly made = new Map<string, Made>();
  /** The ids of the platform's objects before driftless ran: none is driftless's to delete. */
  readonly fixture: ReadonlySet<string>;
  readonly duplicates: string[] = [];

  constructor(private readonly sim: Simulator) {
    this.fixture = new Set(COLLECTIONS.flatMap((c) => this.objects(c).map((o) => o.id)));
    for (const collection of COLLECTIONS) this.watch(collection);
  }

  objects(collection: Collection): PlatformObject[] {
    return this.sim.state[collection] as PlatformObject[];
  }

  /** The objects of `collection` the platform holds now with `identity`. */
  held(collection: Collection, identity: string): PlatformObject[] {
    return this.objects(collection).filter((o) => identityOf(collection, o) === identity);
  }

  /** How many objects of `identity` the platform made and no longer holds (deleted since). */
  deleted(collection: Collection, identity: string): number {
    const now = new Set(this.objects(collection).map((o) => o.id));
    return [...this.made.values()].filter(
      (m) => m.collection === collection && m.identity === identity && !now.has(m.id),
    ).length;
  }

  private watch(collection: Collection): void {
    const list = this.objects(collection);
    const push = list.push.bind(list);
    // Test-only: the simulator's own array, watched in place (it is never replaced).
    Object.defineProperty(list, "push", {
      configurable: true,
      value: (...items: PlatformObject[]) => {
        for (const item of items) this.note(collection, list, item);
        return push(...items);
      },
    });
  }

  private note(collection: Collection, list: readonly PlatformObject[], item: PlatformObject): void {
    const identity = identityOf(collection, item);
    const twin = list.find((o) => identityOf(collection, o) === identity);
    if (twin) {
      this.duplicates.push(
        `the platform made ${collection} object ${item.id} "${identity}" while it still held ${twin.id} of the same manifest object`,
      );
    }
    this.made.set(item.id, { id: item.id, collection, identity, at: Date.now() });
  }
}

/**
 * No duplicate create: the platform never made a second object of a manifest object while it held one
 * (the ledger), and no manifest object's create was POSTed (answered 2xx, or, with reads off, not
 * answered) more often than once, plus the operator's allowances for it, plus once for each of its
 * objects deleted since (an empty checkout deletes, the checkout that comes back creates again). With
 * reads on, a POST left unanswered is settled by the list (docs/operations.md, "Unknown creates
 * settled by the list"): one the list does not show is POSTed again, so only the answered ones count.
 */
export function checkCreates(
  sim: Simulator,
  ledger: PlatformLedger,
  objects: readonly Owned[],
  allowances: ReadonlyMap<string, number>,
  reads: boolean,
): void {
  if (ledger.duplicates.length > 0) throw new Error(`duplicate create: ${ledger.duplicates.join("; ")}`);
  for (const o of objects) {
    const held = ledger.held(o.collection, o.identity);
    if (held.length > 1) {
      throw new Error(
        `${o.kind} "${o.identity}" (${o.names.join(" → ")}) exists ${held.length} times on the platform: ${held.map((x) => x.id).join(", ")}`,
      );
    }
    const posts = sim.requests.filter(
      (r) =>
        r.method === "POST" &&
        r.route === CREATE_ROUTES[o.collection] &&
        identityOf(o.collection, (r.body ?? {}) as PlatformObject) === o.identity &&
        ((r.status === 0 && !reads) || (r.status >= 200 && r.status < 300)),
    );
    const given = allowances.get(o.identity) ?? 0;
    const deleted = ledger.deleted(o.collection, o.identity);
    if (posts.length > 1 + given + deleted) {
      throw new Error(
        `${o.kind} "${o.identity}" was POSTed ${posts.length} times (answered ${posts.map((p) => p.status || "nothing").join(", ")}), more than once plus the ${given} allowance(s) an operator gave and the ${deleted} object(s) of it deleted since`,
      );
    }
  }
}

/**
 * One driftless that may send deletes: a daemon's life (from its start to the next one's) or an
 * operator's `apply --allow-deletes`, with the settings it ran with and the log lines that end its
 * passes.
 */
export type Life = {
  what: string;
  startedAt: number;
  /** The most deletes one of its passes may send: DRIFTLESS_MAX_DELETES, or the operator's allowance. */
  maxDeletes: number;
  /** DRIFTLESS_PRUNE: false (off) sends no delete at all. */
  prune: boolean;
  logs(): readonly LogLine[];
};

const PASS_ENDS = new Set(["pass finished", "pass failed", "pass superseded"]);

/** Where the id of a delete's object is: the last segment of its path. */
const idOfPath = (path: string) => decodeURIComponent(path.slice(path.lastIndexOf("/") + 1));

/**
 * The deletes on the wire: none of an object driftless adopted or never managed (the fixture's, among
 * them the key it authenticates with), none of an object whose state said its policy keeps it
 * (`keptSince`, by identity: from then on), none from a daemon with DRIFTLESS_PRUNE=off, and no pass
 * sends more (distinct objects) than its guard allows. A delete belongs to the last driftless started
 * before the simulator received it, and to the pass of that driftless that ended first after it (the
 * pass a kill cut short, when none did).
 */
export function checkDeletes(
  requests: readonly RecordedRequest[],
  ledger: PlatformLedger,
  lives: readonly Life[],
  keptSince: ReadonlyMap<string, number>,
): void {
  const deletes = requests.filter((r) => r.method === "DELETE");
  for (const r of deletes) {
    const id = idOfPath(r.path);
    if (ledger.fixture.has(id)) {
      throw new Error(
        `DELETE ${r.path} (answered ${r.status || "nothing"}): an object driftless adopted by id, whose deletion policy keeps it, or never managed`,
      );
    }
    const made = ledger.made.get(id);
    const since = made ? keptSince.get(made.identity) : undefined;
    if (made && since !== undefined && r.at > since) {
      throw new Error(
        `DELETE ${r.path} of "${made.identity}": its deletion policy keeps it (orphan in the state since ${new Date(since).toISOString()})`,
      );
    }
  }
  const starts = lives.map((life) => life.startedAt);
  lives.forEach((life, i) => {
    const until = starts[i + 1] ?? Number.POSITIVE_INFINITY;
    const own = deletes.filter((r) => r.at >= life.startedAt && r.at < until);
    if (own.length === 0) return;
    if (!life.prune) {
      throw new Error(
        `${life.what} ran with DRIFTLESS_PRUNE=off, yet sent ${own.map((r) => `DELETE ${r.path}`).join(", ")}`,
      );
    }
    const ends = life
      .logs()
      .filter((line) => PASS_ENDS.has(String(line.msg)))
      .map((line) => Date.parse(String(line.time)));
    const passes = new Map<number, Set<string>>();
    for (const r of own) {
      const pass = ends.findIndex((end) => end >= r.at);
      const index = pass < 0 ? ends.length : pass;
      passes.set(index, (passes.get(index) ?? new Set()).add(r.path));
    }
    for (const [index, paths] of passes) {
      if (paths.size <= life.maxDeletes) continue;
      throw new Error(
        `${life.what}, pass ${index + 1}: ${paths.size} objects deleted, more than the guard's ${life.maxDeletes}: ${[...paths].join(", ")}`,
      );
    }
  });
}

/** A key pair a secret target holds, and the file. */
export type KeyPairFile = { file: string; keyId: string; keySecret: string };

/** Every key pair the key secrets folder holds (a file being replaced, or not JSON, is skipped). */
export async function keyPairs(dir: string): Promise<KeyPairFile[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const pairs: KeyPairFile[] = [];
  for (const file of names) {
    const text = await readFile(join(dir, file), "utf8").catch(() => "");
    try {
      const { keyId, keySecret } = JSON.parse(text) as Partial<KeyPairFile>;
      if (typeof keyId === "string" && typeof keySecret === "string") pairs.push({ file, keyId, keySecret });
    } catch {
      // a temporary file of an atomic write, or a torn one: not a target
    }
  }
  return pairs;
}

/**
 * No key whose secret nobody has: each key the platform holds that was created with hashData (no
 * fixture key) has its id and secret in a secret target, the pair whose hashes it keeps.
 */
export function checkKeyTargets(keys: readonly ApiKey[], pairs: readonly KeyPairFile[]): void {
  for (const key of keys) {
    if (key.keyIdHash === undefined) continue;
    const held = pairs.some((pair) => {
      const hashes = keyHashes(pair.keyId, pair.keySecret);
      return hashes.keyIdHash === key.keyIdHash && hashes.keySecretHash === key.keySecretHash;
    });
    if (!held) {
      throw new Error(
        `the platform holds key ${key.id} "${key.name}" (suffix ${key.keySuffix}), but no secret target holds its id and secret`,
      );
    }
  }
}
