import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Most tests wait on servers, timers and child processes rather than on a CPU: four workers on two
    // cores halve the suite's time (one worker per spare core, vitest's default, leaves them idle).
    maxWorkers: 4,
  },
});
