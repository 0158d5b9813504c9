/**
 * bench/placement.ts at a tiny size, pure placement only (--no-store): it runs, prints its rows,
 * and refuses a bad flag by naming it. Figures are not checked: tests never assert timings.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const BENCH = fileURLToPath(new URL("../bench/placement.ts", import.meta.url));

function bench(...args: string[]) {
  return spawnSync(process.execPath, [BENCH, ...args], { encoding: "utf8", timeout: 60_000 });
}

describe("bench:placement", () => {
  test("prints the pure placement rows for a small cluster, the same placement from the same seed", () => {
    const run = () =>
      bench("--pending", "60", "--agents", "12", "--passes", "1", "--seed", "7", "--no-store");
    const out = run();
    expect(out.stderr).toBe("");
    expect(out.status).toBe(0);
    const lines = out.stdout.split("\n");
    expect(lines[0]).toMatch(/^bench: 60 pending sessions \(\d+ kernels\), 12 agents, seed 7$/);
    for (const label of [
      "whole queue (60 targets)",
      "  sessions placed",
      "  skipped for priority",
      "  agents filled",
      "one page (60 targets)",
    ]) {
      expect(lines.some((l) => l.startsWith(label.padEnd(36)))).toBe(true);
    }
    expect(out.stdout).toMatch(/cpu \d+\.\d ms per pass/);
    expect(out.stdout).not.toContain("B. store reads");
    const placed = (text: string) => text.split("\n").find((l) => l.startsWith("  sessions placed"));
    expect(placed(run().stdout)).toBe(placed(out.stdout));
  });

  test.each([
    [["--pending", "0"], "--pending must be a whole number from 1"],
    [["--batch-limit", "5000"], "--batch-limit must be a whole number from 1 to 1000"],
    [["--agent", "3"], "'--agent'"],
  ])("a bad flag (%s) is a usage error naming it", (args, message) => {
    const out = bench(...args, "--no-store");
    expect(out.status).toBe(2);
    expect(out.stderr).toContain(message);
    expect(out.stdout).toBe("");
  });
});
