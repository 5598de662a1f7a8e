import { describe, expect, it } from "vitest";
import { cutDeep, cutNote, digestOf, jsonPreview, shownValue } from "../../src/bounded-values.js";

/** The bounds on values from outside (bounded-values.ts): one rule per test. */

const nested = (levels: number): unknown => JSON.parse(`${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`);

describe("bounded values", () => {
  it("rule: a value deeper than the bound is cut there, with a note, whatever its depth", () => {
    const cut = cutDeep(nested(200_000), 3) as { a: { a: { a: unknown } } };

    expect(cut).toEqual({ a: { a: { a: cutNote(3) } } });
  });

  it("rule: a value within the bound is the same object, not a copy", () => {
    const value = { a: [{ b: 1 }] };

    expect(cutDeep(value, 3)).toBe(value);
  });

  it("rule: a member named __proto__ stays a member of the cut copy, never its prototype", () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "deep": [[[[1]]]]}');

    const cut = cutDeep(value, 2) as Record<string, unknown>;

    expect(Object.getPrototypeOf(cut)).toBe(Object.prototype);
    expect(Object.hasOwn(cut, "__proto__")).toBe(true);
    expect((cut as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it("rule: a preview is cut in length and depth, and says so and how large the value was", () => {
    const list = Array.from({ length: 20_000 }, (_, i) => ({ source: `s${i}` }));

    expect(jsonPreview(list, 30)).toBe(
      '[{"source":"s0"},{"source":"s1… (cut at 30 characters; a list of 20000 entries)',
    );
    expect(jsonPreview(nested(100_000))).toMatch(/^(\{"a":){12}\{…\}\}{12} \(cut below 12 levels\)$/);
    expect(shownValue({ small: [1, 2] })).toEqual({ small: [1, 2] });
    expect(JSON.stringify(shownValue(list, 30))).toBe(JSON.stringify(jsonPreview(list, 30)));
  });

  it("rule: a digest is the same for the same value in any member order, and differs otherwise", () => {
    const a = [{ path: "x", have: { b: 1, c: [1, { d: 2, e: 3 }] } }];
    const b = [{ have: { c: [1, { e: 3, d: 2 }], b: 1 }, path: "x" }];

    expect(digestOf(a)).toBe(digestOf(b));
    expect(digestOf(a)).not.toBe(digestOf([{ path: "x", have: { b: 1, c: [{ d: 2, e: 3 }, 1] } }]));
    expect(digestOf("1")).not.toBe(digestOf(1));
    expect(() => digestOf(nested(100_000))).not.toThrow();
  });
});
