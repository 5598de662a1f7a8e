import { afterAll, beforeAll, expect } from "vitest";

/**
 * Test files share their worker (vitest.config.ts): a file that leaves fake timers installed (a spy on a
 * faked setTimeout restored after useRealTimers does) stops every timer of the files after it, which then
 * hang until their time-out far from the cause. Each file starts on the real timers, or fails at once
 * naming the file before it in this worker.
 */
const worker = globalThis as { lastTestFile?: string };

beforeAll(() => {
  if ("clock" in setTimeout) {
    const culprit = worker.lastTestFile ?? "an earlier test file of this worker";
    throw new Error(`${culprit} left fake timers installed: end each test on vi.useRealTimers()`);
  }
});

afterAll(() => {
  worker.lastTestFile = expect.getState().testPath;
});
