import { describe, expect, it } from "vitest";
import { credentialOf, pickRound, type Readable, readCapsOf } from "../../src/daemon/drift-schedule.js";

/** Which resources a read round reads: round-robin per credential, a capped share per round. */

const key = (name: string, organization = "org-a"): Readable => ({ kind: "ApiKey", name, organization });
const board = (name: string): Readable => ({ kind: "Dashboard", name });
const names = (picked: Readable[]) => picked.map((r) => r.name);
const caps = { management: 2, observability: 1 };

describe("pickRound", () => {
  it("rule: a small estate is read whole in every round", () => {
    const all = [key("a"), key("b"), board("d")];
    const first = pickRound(all, new Map(), { management: 25, observability: 40 });
    const second = pickRound(all, first.cursors, { management: 25, observability: 40 });
    expect(names(first.picked).sort()).toEqual(["a", "b", "d"]);
    expect(names(second.picked).sort()).toEqual(["a", "b", "d"]);
  });

  it("rule: a large estate is read round-robin, at most the cap per credential, each at most once a round", () => {
    const all = [key("e"), key("a"), key("c"), key("b"), key("d")];
    let cursors = new Map<string, string>();
    const rounds: string[][] = [];
    for (let round = 0; round < 3; round++) {
      const next = pickRound(all, cursors, caps);
      rounds.push(names(next.picked));
      cursors = next.cursors;
    }
    expect(rounds).toEqual([
      ["a", "b"],
      ["c", "d"],
      ["e", "a"],
    ]);
  });

  it("rule: each credential has its own cap and cursor (one organization's key, the observability token)", () => {
    const all = [key("a"), key("b"), key("c"), key("x", "org-b"), board("d1"), board("d2")];
    const { picked } = pickRound(all, new Map(), caps);
    expect(names(picked)).toEqual(["a", "b", "x", "d1"]);
    expect(credentialOf(board("d1"))).toBe("observability");
    expect(credentialOf(key("x", "org-b"))).toBe("management:org-b");
  });

  it("rule: organizations that share one management key share its cap", () => {
    const all = [key("a"), key("b"), key("x", "org-b"), key("y", "org-b")];
    const oneKey = (organization: string) => (organization === "org-c" ? "its own key" : "the single key");

    const shared = pickRound(all, new Map(), caps, oneKey);
    const apart = pickRound(all, new Map(), caps);

    expect(names(shared.picked)).toEqual(["a", "b"]);
    expect(names(apart.picked)).toEqual(["a", "b", "x", "y"]);
    expect(credentialOf(key("x", "org-b"), oneKey)).toBe("management:the single key");
  });

  it("rule: a round holds what the budget grants reads over the spread part of the poll period, fewer as it shrinks", () => {
    expect(readCapsOf(60_000)).toEqual({ management: 14, observability: 24 });
    expect(readCapsOf(10_000)).toEqual({ management: 2, observability: 4 });
    expect(readCapsOf(1_000)).toEqual({ management: 1, observability: 1 });
  });

  it("rule: a resource removed from git does not stop the cursor; a new one takes its place in order", () => {
    const first = pickRound([key("a"), key("b"), key("c")], new Map(), caps);
    const next = pickRound([key("a"), key("bb"), key("c")], first.cursors, caps);
    expect(names(next.picked)).toEqual(["bb", "c"]);
  });
});
