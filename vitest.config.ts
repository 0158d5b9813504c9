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
    // files wait on processes, queues and timers about as much as they compute, so two side by
    // side finish the suite sooner (measured here: 277 s with one, 238 s with two).
    maxWorkers: 2,
  },
});
