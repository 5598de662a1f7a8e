import { describe, expect, it } from "vitest";
import { StateError } from "../../src/errors.js";
import type { ShardRecords } from "../../src/state/shard-codec.js";
import {
  differs,
  emptyKnown,
  type Known,
  legacyKnown,
  noVersions,
  orphanedShards,
  planSave,
  planShard,
  type SaveStep,
  ShardLedger,
  staleSecret,
  unchangedShard,
  type Versions,
} from "../../src/state/shard-ledger.js";
import { knownRecords, newState, topLevelText } from "../../src/state/state-format.js";
import type { ResourceRecord, State } from "../../src/state/store.js";

/**
 * The Kubernetes store's bookkeeping between its codec and its writer, on four shards: which shards a
 * save writes and in which order, when a state is too old to save, what a load may take from memory.
 */

const COUNT = 4;

/** A record of `name` at `generation`: two generations of one name have different texts. */
const record = (name: string, generation = 1): ResourceRecord => ({
  kind: "ApiKey",
  name,
  appliedAt: `2026-01-0${generation}T00:00:00.000Z`,
});

/** A shard holding records `name@generation` ("a", "b@2"), with their texts. */
function shard(...names: string[]): ShardRecords {
  const state = newState();
  for (const entry of names) {
    const [name = "", generation = "1"] = entry.split("@");
    state.resources[`ApiKey/${name}`] = record(name, Number(generation));
  }
  return knownRecords(state);
}

/** Knowledge of four shards, each as given (undefined: not known). */
function known(shards: Array<ShardRecords | undefined>, top = "top", legacy = false): Known {
  return { shards, top, legacy };
}

const versions = (...shards: string[]): Versions => ({ meta: "m1", shards });

/** The steps of a plan as names: "meta", or the shards written with their record ids. */
function names(steps: SaveStep[]): Array<string | Record<number, string[]>> {
  return steps.map((step) =>
    "meta" in step
      ? "meta"
      : Object.fromEntries(step.shards.map(({ index, records }) => [index, [...records.keys()]])),
  );
}

describe("which shards a save writes", () => {
  it("rule: a shard whose records have the same texts is not written", () => {
    expect(differs(shard("a", "b"), shard("a", "b"), "7")).toBe(false);
  });

  it("rule: a shard with a record added, removed or changed is written", () => {
    expect(differs(shard("a"), shard("a", "b"), "7")).toBe(true);
    expect(differs(shard("a", "b"), shard("a"), "7")).toBe(true);
    expect(differs(shard("a"), shard("a@2"), "7")).toBe(true);
  });

  it("rule: a shard not known (single-Secret form) is written when it has records or exists", () => {
    expect(differs(undefined, shard("a"), "")).toBe(true);
    expect(differs(undefined, shard(), "7")).toBe(true);
    expect(differs(undefined, shard(), "")).toBe(false);
  });
});

describe("the write order of a save", () => {
  it("rule: a shard that only gains or changes records is written among the first", () => {
    expect(planShard(shard("a"), shard("a@2", "b"))).toEqual({ first: shard("a@2", "b") });
  });

  it("rule: a shard that only loses records is written among the last", () => {
    expect(planShard(shard("a", "b"), shard("a"))).toEqual({ last: shard("a") });
  });

  it("rule: a shard that gains and loses is written twice: first keeping what it loses, last without it", () => {
    const plan = planShard(shard("a", "b"), shard("a@2"));

    expect([...(plan.first?.keys() ?? [])].sort()).toEqual(["ApiKey/a", "ApiKey/b"]);
    expect(plan.first?.get("ApiKey/a")?.record).toEqual(record("a", 2));
    expect(plan.last).toEqual(shard("a@2"));
  });

  it("rule: a shard not known is written among the first, with nothing kept", () => {
    expect(planShard(undefined, shard("a"))).toEqual({ first: shard("a") });
  });

  it("rule: every shard that gains or changes records is written before any shard that loses them", () => {
    // A rename: b moves from shard 1 to shard 3 (as b2); shard 0 changes a record; shard 2 loses c.
    const before = known([shard("a"), shard("b"), shard("c"), shard()]);
    const after = [shard("a@2"), shard(), shard(), shard("b2")];

    const { steps, shards } = planSave(before, after, versions("1", "2", "3", ""), "top");

    expect(shards).toBe(4);
    expect(names(steps)).toEqual([
      { 0: ["ApiKey/a"], 3: ["ApiKey/b2"] },
      { 1: [], 2: [] },
    ]);
  });

  it("rule: the meta Secret is written first, before any shard names a record it does not", () => {
    const { steps } = planSave(
      known([shard(), shard("a"), shard(), shard()]),
      [shard(), shard("a@2"), shard(), shard()],
      versions(),
      "new top",
    );

    expect(names(steps)).toEqual(["meta", { 1: ["ApiKey/a"] }]);
    expect(steps[0]).toEqual({ meta: "new top" });
  });

  it("rule: when migrating from the single-Secret form, the meta Secret is written last", () => {
    const { steps } = planSave(
      legacyKnown(COUNT),
      [shard("a"), shard(), shard(), shard()],
      noVersions(COUNT),
      "top",
    );

    expect(names(steps)).toEqual([{ 0: ["ApiKey/a"] }, "meta"]);
  });

  it("rule: a save that changes nothing has no step", () => {
    const same = [shard("a"), shard(), shard(), shard()];

    expect(planSave(known(same, "top"), same, versions("1", "", "", ""), "top")).toEqual({
      steps: [],
      shards: 0,
    });
  });
});

describe("a state too old to save", () => {
  it("rule: the versions the store last read or wrote themselves are never stale", () => {
    const latest = versions("1", "2");

    expect(staleSecret(latest, latest)).toBeUndefined();
    expect(staleSecret(versions("1", "2"), versions("1", "2"))).toBeUndefined();
  });

  it("rule: a state read before the meta Secret changed is stale on the meta Secret", () => {
    expect(staleSecret({ meta: "m1", shards: ["1"] }, { meta: "m2", shards: ["9"] })).toEqual({
      version: "m1",
    });
  });

  it("rule: a state read before a shard changed is stale on the first such shard, at the version it read", () => {
    expect(staleSecret(versions("1", "2", "3"), versions("1", "5", "6"))).toEqual({ shard: 1, version: "2" });
  });
});

describe("what a load takes from memory", () => {
  it("rule: a shard still at the version the store knows is not decoded again", () => {
    expect(unchangedShard(shard("a"), "7", "7")).toEqual({ "ApiKey/a": record("a") });
  });

  it("rule: a shard at another version, of no version, or not known is decoded", () => {
    expect(unchangedShard(shard("a"), "7", "8")).toBeUndefined();
    expect(unchangedShard(shard("a"), "", "")).toBeUndefined();
    expect(unchangedShard(undefined, "7", "7")).toBeUndefined();
  });
});

describe("a meta Secret that holds no state", () => {
  const where = { namespace: "ns", name: "driftless-state" };

  it("rule: with every shard empty it is a new state", () => {
    expect(orphanedShards(where, false, [0, 0, 0])).toBeUndefined();
  });

  it("rule: while shards hold records it is refused, counting them, and saying what to do", () => {
    const gone = orphanedShards(where, false, [0, 2, 1]);
    const emptied = orphanedShards(where, true, [1, 0, 0]);

    expect(gone).toBeInstanceOf(StateError);
    expect(gone?.message).toMatch(
      /^the state Secret ns\/driftless-state holds no state: it is gone, while 2 shard Secrets hold 3 records \(driftless-state-N\)\. It was left as it is, and nothing is sent: restore its meta\.json from a backup/,
    );
    expect(emptied?.message).toContain(
      "it has no key meta.json (it was emptied or replaced), while 1 shard Secret holds 1 record (",
    );
  });
});

describe("the ledger between loads and saves", () => {
  const state = (resources: State["resources"]): State => ({ ...newState(), salt: "s", resources });
  const conflict = (shard: number | undefined, version: string) =>
    new StateError(`conflict on ${shard ?? "meta"} at ${version}`);

  it("rule: a load adopts what it read only when no save or other load changed the knowledge meanwhile", async () => {
    const ledger = new ShardLedger(COUNT);
    const began = ledger.generation;
    // A save lands shard 0 while the load reads.
    await ledger.saving(async () => {
      const { base } = ledger.begin(state({ "ApiKey/a": record("a") }), conflict);
      ledger.shardWritten(0, shard("a"), "5", base);
    });

    const readAt = { meta: "", shards: ["1", "", "", ""] };
    const read = ledger.adopt(state({}), readAt, emptyKnown(COUNT), began, new Map());

    expect(ledger.unchanged(0, "5")).toEqual({ "ApiKey/a": record("a") });
    expect(() => ledger.begin(read, conflict)).toThrow("conflict on 0 at 1");
  });

  it("rule: a save builds on the versions its own state was read at, not on a later load's", () => {
    const ledger = new ShardLedger(COUNT);
    const pass = ledger.adopt(
      state({}),
      versions("1", "", "", ""),
      emptyKnown(COUNT),
      ledger.generation,
      new Map(),
    );
    // A reader loads again after another writer changed shard 0.
    ledger.adopt(state({}), versions("2", "", "", ""), emptyKnown(COUNT), ledger.generation, new Map());

    expect(() => ledger.begin(pass, conflict)).toThrow("conflict on 0 at 1");
  });

  it("rule: each write that lands moves the versions of its state and the store's alike", () => {
    const ledger = new ShardLedger(COUNT);
    const loaded = ledger.adopt(
      state({}),
      versions("1", "", "", ""),
      emptyKnown(COUNT),
      ledger.generation,
      new Map(),
    );
    const { base } = ledger.begin(loaded, conflict);

    ledger.shardWritten(0, shard("a"), "5", base);
    ledger.metaWritten(topLevelText(loaded), "m9", base);

    expect(base).toEqual({ meta: "m9", shards: ["5", "", "", ""] });
    expect(ledger.unchanged(0, "5")).toEqual({ "ApiKey/a": record("a") });
    expect(() => ledger.begin(state({}), conflict)).not.toThrow();
    expect(ledger.plan([shard("a"), shard(), shard(), shard()], base, topLevelText(loaded)).steps).toEqual(
      [],
    );
  });
});
