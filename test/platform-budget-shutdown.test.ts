import { describe, expect, it } from "vitest";
import { KEY_ROUTE, statusOf, useDaemonRun } from "./helpers/daemon-run.js";
import { until } from "./helpers/wait.js";

/**
 * A SIGTERM while requests wait for the rate budget (held by a 429's Retry-After) ends `driftless run`
 * at once with code 0: the aborted waiters leave no budget timer behind to keep the process alive past
 * the pod's grace period. Needs dist/ built.
 */

const run = useDaemonRun();

describe("driftless run, stopped while the platform asks it to wait", () => {
  it("exits 0 on SIGTERM while polls and retries wait out a long Retry-After", async () => {
    // The pass's PATCH meets the 429, whatever polls ran first: its retry then waits for the hold (a
    // poll meeting it first could end the pass before, and a poll fails rather than wait past its
    // deadline, leaving nothing to wait).
    run.simulator.inject({
      api: "management",
      method: "PATCH",
      route: KEY_ROUTE,
      kind: "status",
      status: 429,
      // Shorter than a request's 120 s deadline, so that requests wait for it (a longer hold fails them).
      headers: { "retry-after": "60" },
      count: Number.POSITIVE_INFINITY,
    });
    const daemon = await run.start();
    // The 429 holds the budget for 60 s: the PATCH's retry and the polls, every second, wait for it.
    await until(() => run.simulator.requests.some((r) => r.status === 429));
    const waiting = await until(async () => {
      const { budget } = await statusOf(daemon);
      return budget.find((b) => b.api === "management" && b.waiting > 0)?.waiting;
    });

    const code = await daemon.stop("SIGTERM");

    expect(waiting).toBeGreaterThan(0);
    expect(code, daemon.stderr().slice(-2000)).toBe(0);
    expect(run.simulator.requests.some((r) => r.status === 429)).toBe(true);
  });
});
