/**
 * Per-file CPU for `CAIRN_TEST_CPU_LOG=FILE npm test` (vitest.config.ts adds this setup file only
 * then): at the end of each test file, one JSON line with the file, its test process's pid and
 * that process's CPU so far (user + system, its own and its waited-for children's), from /proc.
 * A file's share is the difference from the previous line of the same process (test processes
 * that keep their modules run several files one after another);
 * `npx node bench/test-cpu-per-file.ts FILE` prints the largest. The suite's one DynamoDB Local
 * runs in vitest's main process and is in no file's share.
 */
import { appendFileSync, readFileSync } from "node:fs";
import { afterAll, expect } from "vitest";

const USER_HZ = 100;

function cpuSeconds(): { self: number; children: number } {
  const stat = readFileSync("/proc/self/stat", "utf8");
  // Fields after the command name: utime, stime, cutime, cstime are the 12th to the 15th.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return {
    self: (Number(f[11]) + Number(f[12])) / USER_HZ,
    children: (Number(f[13]) + Number(f[14])) / USER_HZ,
  };
}

const file = expect.getState().testPath ?? "unknown";
const log = process.env["CAIRN_TEST_CPU_LOG"];

// Registered first, so it runs after the file's own afterAll hooks (runtimes stopped, children reaped).
afterAll(() => {
  if (log === undefined) return;
  appendFileSync(log, `${JSON.stringify({ file, pid: process.pid, atMs: Date.now(), ...cpuSeconds() })}\n`);
});
