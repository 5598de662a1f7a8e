import { describe, expect, it } from "vitest";
import { walk } from "../../src/drift/compare.js";
import { seededRandom } from "../../src/simulator/faults.js";

/**
 * Lists that compare as sets (an API key's roles and ipAccessList, a dashboard's tags, a pipe's endpoint
 * ids): matched entry by entry as walk judges two entries, keyed, so that the comparison takes time
 * linear in the lists' sizes (20,000 entries took 46 s compared every entry with every other).
 */

/** An API key's list as its kind compares it: as a set. */
const compareKey = (want: unknown[], have: unknown) =>
  walk({ ipAccessList: want }, have, { ipAccessList: { kind: "set" } });

const drifted = (want: unknown[], have: unknown[]) => compareKey(want, { ipAccessList: have }).length > 0;

/** walk's judgement of one desired entry against one live entry, written out: the reference. */
function matches(want: unknown, have: unknown): boolean {
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (want === undefined || have === undefined) return true;
  if (isObject(want) && typeof want.fromEnv === "string" && Object.keys(want).length === 1) return true;
  if (isObject(want)) {
    if (!isObject(have)) return false;
    return Object.entries(want).every(([k, v]) => k === "password" || matches(v, have[k]));
  }
  if (Array.isArray(want)) {
    return Array.isArray(have) && want.length === have.length && want.every((w, i) => matches(w, have[i]));
  }
  return want === have;
}

const sameSet = (want: unknown[], have: unknown[]) =>
  want.every((w) => have.some((h) => matches(w, h))) && have.every((h) => want.some((w) => matches(w, h)));

/** A random entry from a small pool, so that lists share entries, miss fields and differ in type. */
function entry(random: () => number): unknown {
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  const roll = random();
  if (roll < 0.1) return pick(["a", "b", 1, null, true]);
  if (roll < 0.15) return pick([["x"], ["x", "y"], []]);
  const value: Record<string, unknown> = {};
  if (random() < 0.85) value.source = pick(["10.0.0.0/8", "1", 1, null, ["10.0.0.0/8"]]);
  if (random() < 0.7) value.description = pick(["office", "ci", { note: "x" }]);
  if (random() < 0.2) value.ports = pick([[80], [80, 443], [443, 80], "80"]);
  if (random() < 0.1) value.password = pick(["s3cret", { fromEnv: "PW" }]);
  if (random() < 0.1) value.token = { fromEnv: "TOKEN" };
  if (random() < 0.15) value.extra = pick(["x", 2]);
  return value;
}

describe("compare: lists compared as sets", () => {
  it("rule: the keyed comparison gives walk's verdict, entry against entry, on 3,000 seeded pairs of lists", () => {
    const random = seededRandom(33);
    const mismatches: string[] = [];
    let drifts = 0;
    for (let i = 0; i < 3_000; i++) {
      const want = Array.from({ length: Math.floor(random() * 5) }, () => entry(random));
      // Half the time the same entries in another order, some with a field added or a credential changed.
      const alike = (w: unknown) => {
        if (typeof w !== "object" || w === null || Array.isArray(w)) return w;
        const roll = random();
        return roll < 0.3 ? { ...w, extra: 1 } : roll < 0.5 ? { ...w, password: "changed" } : w;
      };
      const have =
        random() < 0.5
          ? [...want].reverse().map(alike)
          : Array.from({ length: Math.floor(random() * 5) }, () => entry(random));
      const expected = !sameSet(want, have);
      if (expected) drifts++;
      if (drifted(want, have) !== expected) mismatches.push(JSON.stringify({ want, have, expected }));
    }

    expect(mismatches.slice(0, 5)).toEqual([]);
    // Both verdicts occur often: the cases are not all one way.
    expect(drifts).toBeGreaterThan(500);
    expect(drifts).toBeLessThan(2_500);
  });

  it("rule: 20,000 entries in another order, with fields the answer adds, are equal; one entry more is drift", () => {
    const want = Array.from({ length: 20_000 }, (_, i) => ({
      source: `10.${i >> 8}.${i & 255}.0/24`,
      description: `r${i}`,
    }));
    const have = [...want].reverse().map((w) => ({ description: w.description, source: w.source, id: 1 }));

    expect(compareKey(want, { ipAccessList: have })).toEqual([]);
    expect(drifted(want, [...have, { source: "192.0.2.0/24", description: "console" }])).toBe(true);
    expect(drifted(want, have.slice(1))).toBe(true);
  });

  it("rule: each live entry is read a bounded number of times, however long the lists (linear, not quadratic)", () => {
    let reads = 0;
    const counted = (source: string, description: string) => ({
      get source() {
        reads++;
        return source;
      },
      get description() {
        reads++;
        return description;
      },
    });
    const n = 2_000;
    const want = Array.from({ length: n }, (_, i) => ({ source: `s${i}`, description: `d${i}` }));
    const have = [...want].reverse().map((w) => counted(w.source, w.description));

    const fields = compareKey(want, { ipAccessList: have });

    expect(fields).toEqual([]);
    // Twice per entry and field would do; comparing every entry with every other reads millions.
    expect(reads).toBeLessThanOrEqual(4 * 2 * n);
  });
});
