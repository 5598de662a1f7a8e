import { describe, expect, it } from "vitest";
import { Backoff } from "../../src/daemon/backoff.js";
import { type Cause, type ResourceStatus, resultOf } from "../../src/resources.js";

/** Per-resource backoff arithmetic, with the jitter fixed: each test names the rule it checks. */

const status = (name: string, cause: Cause): ResourceStatus => resultOf({ kind: "ApiKey", name }, cause);
const failed = (name: string) => status(name, "platform-error");

/** A backoff whose jitter is `draw` (0.5: none, 0: -20%, just below 1: +20%). */
const backoffOf = (draw = 0.5, options: { baseMs?: number; maxMs?: number } = {}) =>
  new Backoff({ baseMs: 1_000, maxMs: 60_000, random: () => draw, ...options });

describe("Backoff", () => {
  it("rule: the n-th consecutive failure waits base·2^(n-1)", () => {
    const backoff = backoffOf();

    const due = [0, 1, 2, 3].map(() => backoff.record([failed("a")], 0));

    expect(due).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(backoff.failuresOf("ApiKey/a")).toBe(4);
  });

  it("rule: the delay never passes maxMs, however many failures", () => {
    const backoff = backoffOf(0.5, { maxMs: 5_000 });

    let due: number | undefined;
    for (let n = 0; n < 100; n++) due = backoff.record([failed("a")], 0);

    expect(due).toBe(5_000);
  });

  it("rule: jitter spreads a delay by ±20%", () => {
    expect(backoffOf(0).record([failed("a")], 0)).toBe(800);
    expect(backoffOf(0.999_999).record([failed("a")], 0)).toBe(1_200);
  });

  it("rule: a wait backs off like a failure: both are to retry", () => {
    const backoff = backoffOf();

    backoff.record([status("b", "waiting")], 0);
    backoff.record([status("b", "waiting")], 0);

    expect(backoff.failuresOf("ApiKey/b")).toBe(2);
  });

  it("rule: a resource whose next step is done, a change or an operator starts over", () => {
    const causes = ["in-sync", "invalid", "create-unknown", "watch-finding", "refused-by-platform"] as const;
    for (const cause of causes) {
      const backoff = backoffOf();
      backoff.record([failed("a")], 0);

      backoff.record([status("a", cause)], 0);

      expect(backoff.failuresOf("ApiKey/a"), cause).toBe(0);
    }
  });

  it("rule: a resource gone from the pass's statuses (gone from git) starts over", () => {
    const backoff = backoffOf();
    backoff.record([failed("a"), failed("b")], 0);

    const due = backoff.record([failed("b")], 10_000);

    expect(backoff.failuresOf("ApiKey/a")).toBe(0);
    expect(due).toBe(12_000);
  });

  it("rule: a held resource (not tried in this pass) keeps its backoff as it was", () => {
    const backoff = backoffOf();
    backoff.record([failed("a")], 0);

    const due = backoff.record([failed("a")], 500, new Set(["ApiKey/a"]));

    expect(backoff.failuresOf("ApiKey/a")).toBe(1);
    expect(due).toBe(1_000);
  });

  it("rule: the next retry is due when the earliest resource's backoff ends", () => {
    const backoff = backoffOf();
    backoff.record([failed("slow")], 0);
    backoff.record([failed("slow")], 0);

    const due = backoff.record([failed("slow"), failed("fresh")], 100, new Set(["ApiKey/slow"]));

    expect(due).toBe(1_100);
    expect(backoff.isWaiting("ApiKey/slow", 1_999)).toBe(true);
    expect(backoff.isWaiting("ApiKey/slow", 2_000)).toBe(false);
  });

  it("rule: nothing failing, nothing due", () => {
    expect(backoffOf().record([status("a", "in-sync")], 0)).toBeUndefined();
  });

  it("rule: a failed pass as a whole backs off under its own key, doubling too", () => {
    const backoff = backoffOf();

    expect(backoff.recordPassFailure(0)).toBe(1_000);
    expect(backoff.recordPassFailure(0)).toBe(2_000);
    expect(backoff.failuresOf("(pass)")).toBe(2);
  });

  it("rule: the default base is 2 s and the default cap 5 minutes", () => {
    const backoff = new Backoff({ random: () => 0.5 });

    const first = backoff.record([failed("a")], 0);
    let last: number | undefined;
    for (let n = 0; n < 40; n++) last = backoff.record([failed("a")], 0);

    expect(first).toBe(2_000);
    expect(last).toBe(300_000);
  });
});
