import { describe, expect, it } from "vitest";
import { processCpuSeconds, threadCpuSeconds } from "../bench/process-cpu.ts";

describe("bench CPU figures from /proc", () => {
  it("sums the CPU of the threads whose name matches, and only those", () => {
    const all = threadCpuSeconds(process.pid, /./);
    expect(all).toBeGreaterThan(0);
    // Every live thread's time is at most the process's (exited threads count only in the latter).
    expect(all).toBeLessThanOrEqual(processCpuSeconds(process.pid) + 0.01);
    expect(threadCpuSeconds(process.pid, /^no thread is called this$/)).toBe(0);
  });

  it("reads 0 for a process that does not exist", () => {
    expect(processCpuSeconds(2 ** 22 + 1)).toBe(0);
    expect(threadCpuSeconds(2 ** 22 + 1, /./)).toBe(0);
  });
});
