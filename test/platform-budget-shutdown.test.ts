import { describe, expect, it } from "vitest";
import { useDaemonRun } from "./helpers/daemon-run.js";

/**
 * A SIGTERM while requests wait for the rate budget (held by a 429's Retry-After) ends `driftless run`
 * at once with code 0: the aborted waiters leave no budget timer behind to keep the process alive past
 * the pod's grace period. Needs dist/ built.
 */

const run = useDaemonRun();

describe("driftless run, stopped while the platform asks it to wait", () => {
  it("exits 0 on SIGTERM while polls and retries wait out a long Retry-After", async () => {
    run.simulator.inject({
      api: "management",
      kind: "status",
      status: 429,
      headers: { "retry-after": "3600" },
      count: Number.POSITIVE_INFINITY,
    });
    const daemon = await run.start();
    await daemon.waitForLog((line) => line.msg === "pass finished");
    // Polls run every second and the failed key is retried after ~2 s: by now they wait for the budget.
    await new Promise((resolve) => setTimeout(resolve, 2_500));

    const code = await daemon.stop("SIGTERM", 10_000);

    expect(code, daemon.stderr().slice(-2000)).toBe(0);
    expect(run.simulator.requests.some((r) => r.status === 429)).toBe(true);
  });
});
