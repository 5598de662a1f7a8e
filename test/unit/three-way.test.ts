import { describe, expect, it } from "vitest";
import { liveAfter, ownedAfter, threeWay } from "../../src/plan/three-way.js";

/**
 * Three-way lists: the manifest's desired list, the live list, and the keys driftless added itself.
 * Each test names the rule it checks.
 */

type Entry = { source: string; description?: string };
const keyOf = (entry: Entry) => entry.source;
const e = (source: string, description?: string): Entry => ({
  source,
  ...(description === undefined ? {} : { description }),
});

describe("threeWay: what to add and what to remove", () => {
  it("rule: a desired entry missing from the live list is added", () => {
    const sets = threeWay([e("a"), e("b")], [e("a")], [], keyOf, "ipAccessList");

    expect(sets.add).toEqual([e("b")]);
    expect(sets.remove).toEqual([]);
    expect(sets.changes).toEqual([{ path: "ipAccessList", op: "add", to: e("b") }]);
  });

  it("rule: a desired entry whose live twin lacks a stated field is sent again, with the live one as `from`", () => {
    const sets = threeWay([e("a", "office")], [e("a", "old")], [], keyOf, "list");

    expect(sets.add).toEqual([e("a", "office")]);
    expect(sets.changes).toEqual([{ path: "list", op: "add", from: e("a", "old"), to: e("a", "office") }]);
  });

  it("rule: fields the manifest leaves out are the platform's and never cause a change", () => {
    const sets = threeWay([e("a")], [e("a", "set in the console")], [], keyOf, "list");

    expect(sets.add).toEqual([]);
    expect(sets.changes).toEqual([]);
  });

  it("rule: only an owned entry that left the manifest is removed", () => {
    const live = [e("mine"), e("console")];

    const sets = threeWay([], live, ["mine"], keyOf, "list");

    expect(sets.remove).toEqual([e("mine")]);
    expect(sets.changes).toEqual([{ path: "list", op: "remove", from: e("mine") }]);
  });

  it("rule: an entry added by someone else survives any manifest", () => {
    const sets = threeWay([e("a")], [e("a"), e("console")], [], keyOf, "list");

    expect(sets.remove).toEqual([]);
  });

  it("rule: an owned entry already gone from the live list is not removed again", () => {
    const sets = threeWay([], [], ["gone"], keyOf, "list");

    expect(sets.remove).toEqual([]);
    expect(sets.changes).toEqual([]);
  });

  it("rule: an owned entry still desired is kept", () => {
    const sets = threeWay([e("mine")], [e("mine")], ["mine"], keyOf, "list");

    expect(sets).toEqual({ add: [], remove: [], changes: [] });
  });
});

describe("ownedAfter: the keys driftless owns once the sets were sent", () => {
  it("rule: an entry driftless added while it was not live becomes owned", () => {
    expect(ownedAfter([e("new")], [], [], [e("new")], keyOf)).toEqual(["new"]);
  });

  it("rule: an entry that was already live is never claimed, even when the manifest lists it", () => {
    expect(ownedAfter([e("a", "x")], [e("a")], [], [e("a", "x")], keyOf)).toEqual([]);
  });

  it("rule: an owned key no longer desired stops being owned", () => {
    expect(ownedAfter([e("b")], [e("a"), e("b")], ["a", "b"], [], keyOf)).toEqual(["b"]);
  });

  it("rule: the owned keys come out sorted, so the state does not churn", () => {
    expect(ownedAfter([e("c"), e("a"), e("b")], [], ["c"], [e("b"), e("a")], keyOf)).toEqual(["a", "b", "c"]);
  });
});

describe("liveAfter: the live list assumed when the answer leaves it out", () => {
  it("rule: removed entries go, added entries replace their live twin and come last", () => {
    const live = [e("a", "old"), e("b"), e("c")];

    const after = liveAfter(live, [e("a", "new"), e("d")], [e("b")], keyOf);

    expect(after).toEqual([e("c"), e("a", "new"), e("d")]);
  });
});
