import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const root = fileURLToPath(new URL(".", import.meta.url));

/**
 * The test files that replace a module with vi.mock: each needs a module graph of its own. Every other
 * file shares its worker's, so the code under test is imported once per worker rather than once per
 * file, which was about a third of the suite's CPU time.
 */
const mocking = readdirSync(`${root}test`, { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".test.ts"))
  .map((file) => `test/${file}`)
  .filter((file) => readFileSync(`${root}${file}`, "utf8").includes("vi.mock("));

export default defineConfig({
  test: {
    // Time-outs bound how long a broken test hangs, never how fast the code must be: on two cores
    // shared with other work a test of processes runs several times slower than on an idle machine.
    testTimeout: 90_000,
    hookTimeout: 90_000,
    pool: "forks",
    // Most tests wait on servers, timers and child processes rather than on a CPU: four workers on two
    // cores halve the suite's time (one worker per spare core, vitest's default, leaves them idle).
    maxWorkers: 4,
    projects: [
      {
        extends: true,
        test: {
          name: "shared",
          include: ["test/**/*.test.ts", "src/**/*.test.ts"],
          exclude: mocking,
          isolate: false,
          setupFiles: ["test/setup/real-timers.ts"],
        },
      },
      { extends: true, test: { name: "isolated", include: mocking, isolate: true } },
    ],
  },
});
