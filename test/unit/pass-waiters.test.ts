import { describe, expect, it } from "vitest";
import { PassWaiters } from "../../src/daemon/pass-waiters.js";

/** `driftless reconcile` is answered by the first pass that starts after its request, never an older one. */
describe("PassWaiters", () => {
  it("answers a request made while pass 3 runs with pass 4's end, not pass 3's", async () => {
    const waiters = new PassWaiters();
    const answered: unknown[] = [];
    const waiting = waiters.wait(3, 60_000).then((end) => answered.push(end));

    waiters.ended(3, { ok: false, error: "older pass" });
    await Promise.resolve();
    expect(answered).toEqual([]);

    waiters.ended(4, { ok: true });
    await waiting;
    expect(answered).toEqual([{ ok: true }]);
  });

  it("answers every request still waiting with undefined when the daemon stops", async () => {
    const waiters = new PassWaiters();
    const both = Promise.all([waiters.wait(1, 60_000), waiters.wait(2, 60_000)]);

    waiters.close();

    expect(await both).toEqual([undefined, undefined]);
  });
});
