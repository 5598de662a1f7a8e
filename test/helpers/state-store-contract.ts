import { afterEach, describe, expect, it } from "vitest";
import type { ResourceRecord, State, StateStore } from "../../src/state/store.js";

/**
 * The behaviour every StateStore must have, whatever holds the state (a folder, a Kubernetes Secret).
 * A store's own test file calls `describeStateStore("file store", makeFixture)`; each test makes a new
 * fixture, i.e. a new empty backing place.
 */

export type StoreFixture = {
  /** A new store over this fixture's backing place: what a restarted process would open. */
  open(): StateStore | Promise<StateStore>;
  /** Removes the backing place; called after the test has closed every store it opened. */
  cleanup?(): Promise<void>;
};

/** A record using every field of ResourceRecord, with values that JSON must carry faithfully. */
export function sampleRecord(name = "orders-from-kafka"): ResourceRecord {
  return {
    kind: "DataPipe",
    name,
    applied: {
      name: "orders",
      source: { kafka: { credentials: { password: { hash: "sha256:abc" } } } },
      settings: { engine_max_threads: 4, object_storage_use_cluster_function: false },
      note: 'ünïcødé ✓ "quoted" \n newline',
    },
    appliedAt: "2026-01-02T03:04:05.678Z",
    observed: { id: "1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b", state: "Running", empty: null, list: [] },
    serverId: "3b4c5d6e-7f8a-4b9c-8d1e-2f3a4b5c6d7e",
    tileIds: { lag: "65f1a2b3c4d5e6f708192a41" },
    intent: { action: "create", startedAt: "2026-01-02T03:04:00.000Z" },
    owned: { privateEndpoints: ["vpce-1", "vpce-2"] },
  };
}

export function describeStateStore(
  name: string,
  makeFixture: () => StoreFixture | Promise<StoreFixture>,
): void {
  describe(`${name}: the StateStore contract`, () => {
    const opened: StateStore[] = [];
    const fixtures: StoreFixture[] = [];

    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
      for (const fixture of fixtures.splice(0)) await fixture.cleanup?.();
    });

    async function fixture() {
      const made = await makeFixture();
      fixtures.push(made);
      return {
        open: async () => {
          const store = await made.open();
          opened.push(store);
          return store;
        },
      };
    }

    const withRecords = (state: State, ...records: ResourceRecord[]): State => ({
      ...state,
      resources: Object.fromEntries(records.map((record) => [`${record.kind}/${record.name}`, record])),
    });

    it("loads a new, empty state of version 1 with a salt", async () => {
      const store = await (await fixture()).open();

      const state = await store.load();

      expect(state.version).toBe(1);
      expect(state.resources).toEqual({});
      expect(state.salt).toMatch(/.{16,}/);
    });

    it("keeps the salt of a new state from one load to the next", async () => {
      const store = await (await fixture()).open();

      const first = await store.load();
      const second = await store.load();

      expect(second.salt).toBe(first.salt);
    });

    it("gives two new stores different salts", async () => {
      const one = await (await fixture()).open();
      const two = await (await fixture()).open();

      const [a, b] = await Promise.all([one.load(), two.load()]);

      expect(a.salt).not.toBe(b.salt);
    });

    it("loads what was saved, every field intact", async () => {
      const store = await (await fixture()).open();
      const state = withRecords(await store.load(), sampleRecord());

      await store.save(state);

      expect(await store.load()).toEqual(state);
    });

    it("keeps the state across a restart: close, open again, load", async () => {
      const place = await fixture();
      const first = await place.open();
      const state = withRecords(await first.load(), sampleRecord("a"), sampleRecord("b"));
      await first.save(state);
      await first.close();

      const second = await place.open();

      expect(await second.load()).toEqual(state);
    });

    it("replaces the whole state on save", async () => {
      const store = await (await fixture()).open();
      const initial = await store.load();
      await store.save(withRecords(initial, sampleRecord("a"), sampleRecord("b")));

      await store.save(withRecords(initial, sampleRecord("b")));

      expect(Object.keys((await store.load()).resources)).toEqual(["DataPipe/b"]);
    });

    it("does not save changes made to a loaded state until save() is called", async () => {
      const store = await (await fixture()).open();
      const state = withRecords(await store.load(), sampleRecord("a"));
      await store.save(state);

      const loaded = await store.load();
      loaded.resources["DataPipe/a"] = {
        ...(loaded.resources["DataPipe/a"] as ResourceRecord),
        serverId: "changed in memory",
      };

      expect((await store.load()).resources["DataPipe/a"]?.serverId).toBe(sampleRecord("a").serverId);
    });

    it("hands out records that cannot be changed in place (a save would not see it), only replaced", async () => {
      const store = await (await fixture()).open();
      await store.save(withRecords(await store.load(), sampleRecord("a")));

      const loaded = await store.load();
      const record = loaded.resources["DataPipe/a"] as ResourceRecord;
      expect(() => {
        record.serverId = "changed in place";
      }).toThrow(TypeError);
      expect(() => {
        (record.applied as Record<string, unknown>).name = "changed in place";
      }).toThrow(TypeError);
      loaded.resources["DataPipe/a"] = { ...record, serverId: "replaced" };
      await store.save(loaded);

      expect((await store.load()).resources["DataPipe/a"]?.serverId).toBe("replaced");
    });

    it("lets a store that may write say so: ensureWritable() resolves", async () => {
      const store = await (await fixture()).open();
      await store.load();

      await expect(store.ensureWritable()).resolves.toBeUndefined();
    });

    it("lets close() be called twice", async () => {
      const store = await (await fixture()).open();
      await store.load();

      await store.close();

      await expect(store.close()).resolves.toBeUndefined();
    });

    it("keeps top-level fields and record fields it does not know (added by another driftless)", async () => {
      const place = await fixture();
      const first = await place.open();
      const record = { ...sampleRecord("a"), addedLater: { by: "a newer driftless" } } as ResourceRecord;
      const state = { ...withRecords(await first.load(), record), addedLater: true } as State;
      await first.save(state);
      await first.close();

      expect(await (await place.open()).load()).toEqual(state);
    });

    it("loads, after a restart, what a run of saves changing, adding and deleting a few records left", async () => {
      const place = await fixture();
      const first = await place.open();
      const state = withRecords(
        await first.load(),
        ...Array.from({ length: 50 }, (_, i) => sampleRecord(`p${i}`)),
      );
      await first.save(state);
      for (let round = 0; round < 20; round++) {
        state.resources[`DataPipe/p${round}`] = {
          ...(state.resources[`DataPipe/p${round}`] as ResourceRecord),
          serverId: `round ${round}`,
        };
        delete state.resources[`DataPipe/p${49 - round}`];
        state.resources[`DataPipe/new-${round}`] = sampleRecord(`new-${round}`);
        await first.save(state);
      }
      await first.close();

      expect(await (await place.open()).load()).toEqual(state);
    });

    it("round-trips 100,000 resources", async () => {
      const place = await fixture();
      const first = await place.open();
      const state = await first.load();
      for (let i = 0; i < 100_000; i++) {
        state.resources[`ApiKey/key-${i}`] = {
          kind: "ApiKey",
          name: `key-${i}`,
          appliedAt: "2026-11-23T04:00:00.000Z",
        };
      }
      await first.save(state);
      state.resources["ApiKey/key-77"] = {
        ...(state.resources["ApiKey/key-77"] as ResourceRecord),
        serverId: "changed after",
      };
      await first.save(state);
      await first.close();

      expect(await (await place.open()).load()).toEqual(state);
    }, 60_000);
  });
}
