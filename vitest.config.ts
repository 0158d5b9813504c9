import { defineConfig } from "vitest/config";

/**
 * Files that run the product end to end, each in a process of its own: they start the embedded
 * runtime, agents, the CLI or a browser, and some stop processes or change the environment on
 * the way. Every other file runs in a worker that keeps its modules from one file to the next
 * (`isolate: false`): the AWS SDK, the AWS CDK and cdk-nag, CDK's template validator (a
 * WebAssembly engine, about 3.5 s of CPU to start) load once per worker instead of once per file.
 * Measured on 2 cores, 116 of these files: 288 s of CPU isolated, 163 s shared (docs/performance.md).
 */
const OWN_PROCESS = [
  "test/e2e-*.test.ts",
  "test/cli-*e2e.test.ts",
  "test/local-runtime.test.ts",
  "test/local-ecs-runtime.test.ts",
  "test/dashboard-browser.test.ts",
  "test/agent-containment.test.ts",
  "test/agent-replica-health.test.ts",
  "test/bench-placement.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Vitest's default is one worker fewer than the cores: one, on a 2-core machine. The end-to-end
    // files wait on processes, queues and timers about as much as they compute, so more files side
    // by side finish the suite sooner. Measured here (2 cores): 277 s with one worker, 233 – 250 s
    // with two, 208 s with three (the run then used 173 % of the two cores).
    maxWorkers: 3,
    // `CAIRN_TEST_CPU_LOG=FILE npm test` logs each file's CPU (docs/performance.md).
    setupFiles: process.env["CAIRN_TEST_CPU_LOG"] ? ["test/support/cpu-per-file.ts"] : [],
    projects: [
      {
        extends: true,
        test: {
          name: "shared",
          include: ["test/**/*.test.ts"],
          exclude: OWN_PROCESS,
          isolate: false,
          // One DynamoDB Local for the run, shared by both projects; each test file gets its own table.
          globalSetup: ["test/support/global-setup.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "isolated",
          include: OWN_PROCESS,
          globalSetup: ["test/support/global-setup.ts"],
        },
      },
    ],
  },
});
