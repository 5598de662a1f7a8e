import { afterEach, describe, expect, it } from "vitest";
import { Backoff } from "../src/daemon/backoff.js";
import { PassLoop } from "../src/daemon/pass-loop.js";
import { soleLeader } from "../src/leader/leadership.js";
import type { PassOptions, PassResult, ResourceStatus } from "../src/reconcile/types.js";
import { resultOf } from "../src/resources.js";
import { createLogger } from "../src/telemetry/logger.js";
import { manualClock } from "./helpers/manual-clock.js";

/**
 * Per-resource backoff: a retry pass retries only the resources whose own backoff is due. The loop's
 * time is a manual clock, so each retry comes due exactly when the test lets the time pass.
 */

const failed = (name: string): ResourceStatus =>
  resultOf({ kind: "ApiKey", name }, "platform-error", { message: "503" });
const synced = (name: string): ResourceStatus => resultOf({ kind: "ApiKey", name }, "in-sync");

const loops: PassLoop[] = [];
afterEach(async () => {
  await Promise.all(loops.splice(0).map((l) => l.stop(1_000)));
});

function loopOf(script: ResourceStatus[][]) {
  const passes: PassOptions[] = [];
  const clock = manualClock();
  const loop = new PassLoop({
    reconciler: {
      async pass(options): Promise<PassResult> {
        passes.push(options);
        const statuses = (script[passes.length - 1] ?? [synced("a"), synced("b")]).map(
          (s) => options.hold?.(`${s.kind}/${s.name}`) ?? s,
        );
        const now = new Date().toISOString();
        return { startedAt: now, finishedAt: now, statuses, manifestErrors: 0, ok: false };
      },
    },
    leadership: soleLeader(),
    logger: createLogger("silent"),
    currentRevision: async () => undefined,
    onPass: () => {},
    isSuperseded: () => false,
    onPassError: () => {},
    backoff: new Backoff({ baseMs: 300, random: () => 0.5 }),
    clock,
  });
  loops.push(loop);
  return { loop, passes, clock };
}

describe("a retry pass", () => {
  it("leaves alone a resource whose backoff is not due, and retries the one that is", async () => {
    // a fails twice in a row (next retry after 600 ms), b once (after 300 ms).
    const { loop, passes, clock } = loopOf([
      [failed("a"), synced("b")],
      [failed("a"), failed("b")],
    ]);
    loop.request({ trigger: "start", immediate: true });
    await loop.idle();
    loop.request({ trigger: "webhook", immediate: true });
    await loop.idle();

    clock.advance(299);
    await loop.idle();
    const beforeDue = passes.length;
    clock.advance(1);
    await loop.idle();

    expect(beforeDue).toBe(2);
    expect(passes).toHaveLength(3);
    const retry = passes[2];
    expect(retry?.trigger).toBe("retry");
    expect(retry?.hold?.("ApiKey/a")).toMatchObject({ status: "Failed", message: "503" });
    expect(retry?.hold?.("ApiKey/b")).toBeUndefined();
  });

  it("is not the only pass that retries: a pass from git tries every resource", async () => {
    const { loop, passes } = loopOf([[failed("a"), synced("b")]]);
    loop.request({ trigger: "start", immediate: true });
    await loop.idle();

    loop.request({ trigger: "webhook", immediate: true });
    await loop.idle();

    expect(passes[1]?.trigger).toBe("webhook");
    expect(passes[1]?.hold).toBeUndefined();
  });

  it("does not hold back a change from git that arrives while the retry waits to start", async () => {
    const { loop, passes } = loopOf([[failed("a"), synced("b")]]);
    loop.request({ trigger: "start", immediate: true });
    await loop.idle();

    // A commit lands (its burst still settling) just as a retry comes due: they make one pass.
    loop.request({ trigger: "watch" });
    loop.request({ trigger: "retry", immediate: true });
    await loop.idle();

    expect(passes).toHaveLength(2);
    expect(passes[1]?.trigger).toBe("watch");
    expect(passes[1]?.hold).toBeUndefined();
  });
});

describe("terminal failures", () => {
  it("schedules no retry for a resource the platform refused for good", () => {
    const backoff = new Backoff({ baseMs: 1_000, random: () => 0.5 });
    const refused = resultOf({ kind: "ApiKey", name: "a" }, "refused-by-platform", { message: "403" });

    const due = backoff.record([refused, failed("b")], 0);

    expect(backoff.failuresOf("ApiKey/a")).toBe(0);
    expect(backoff.failuresOf("ApiKey/b")).toBe(1);
    expect(due).toBe(1_000);
  });
});
