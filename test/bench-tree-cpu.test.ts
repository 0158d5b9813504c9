/**
 * `bench:compare --test-cpu`'s figure counts the whole process tree: a grandchild re-parented to
 * init (its parent exited first, so nothing of the tree waits for it) is counted by the cpuacct
 * group, and missed by what a parent learns from waiting. Where no cpuacct group can be made
 * (not root, or no cgroup v1 cpuacct hierarchy), the figure says it is the waited-for one.
 */
import { existsSync } from "node:fs";
import { expect, test } from "vitest";
import { runMeasured } from "../bench/tree-cpu.ts";

// Spins until it has used 0.4 s of CPU by its own count, then exits.
const SPIN = "const u=()=>{const c=process.cpuUsage();return (c.user+c.system)/1e6};while(u()<0.4){}";

test("a busy grandchild left to init is in the whole tree's figure, not in the waited-for one", async () => {
  // The shell starts the spinner in the background and exits at once: the spinner is re-parented.
  const run = runMeasured(
    `cairn-test-tree-cpu-${process.pid}`,
    "/bin/sh",
    ["-c", '"$0" -e "$1" & exit 0', process.execPath, SPIN],
    { stdio: "ignore" },
  );
  const { code, cpu } = await run.done;
  expect(code).toBe(0);
  // The spinner ran after the shell was waited for: none of its time reached this process.
  expect(cpu.waitedSeconds).toBeLessThan(0.4);
  if (cpu.whole) {
    expect(cpu.seconds).toBeGreaterThanOrEqual(0.4);
    expect(existsSync(`/sys/fs/cgroup/cpuacct/cairn-test-tree-cpu-${process.pid}`)).toBe(false);
  } else {
    expect(cpu.seconds).toBe(cpu.waitedSeconds);
  }
});
