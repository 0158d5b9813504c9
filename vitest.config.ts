import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // One DynamoDB Local for the whole run; each test file gets its own table.
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Vitest's default is one worker fewer than the cores: one, on a 2-core machine. The end-to-end
    // files wait on processes, queues and timers about as much as they compute, so more files side
    // by side finish the suite sooner. Measured here (2 cores): 277 s with one worker, 233 – 250 s
    // with two, 208 s with three (the run then used 173 % of the two cores).
    maxWorkers: 3,
  },
});
