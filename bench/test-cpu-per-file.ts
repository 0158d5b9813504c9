/**
 * `npx node bench/test-cpu-per-file.ts FILE [N]`: the N (default 25) test files that used the most
 * CPU in a run of `CAIRN_TEST_CPU_LOG=FILE npm test` (test/support/cpu-per-file.ts), with each
 * one's own CPU and its waited-for children's, and the sum over all files.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";

interface Line {
  readonly file: string;
  readonly pid: number;
  readonly atMs: number;
  readonly self: number;
  readonly children: number;
}

const [path, count = "25"] = process.argv.slice(2);
if (path === undefined) {
  console.error("usage: npx node bench/test-cpu-per-file.ts FILE [N]");
  process.exit(2);
}
const lines = readFileSync(path, "utf8")
  .split("\n")
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Line)
  .sort((a, b) => a.atMs - b.atMs);
const previous = new Map<number, Line>();
const rows = lines.map((l) => {
  const before = previous.get(l.pid);
  previous.set(l.pid, l);
  const self = l.self - (before?.self ?? 0);
  const children = l.children - (before?.children ?? 0);
  return { file: relative(process.cwd(), l.file), self, children, total: self + children };
});
rows.sort((a, b) => b.total - a.total);
const sum = rows.reduce((s, r) => s + r.total, 0);
console.log(`${rows.length} files, ${sum.toFixed(1)} s of CPU in their test processes`);
for (const [i, r] of rows.slice(0, Number(count)).entries()) {
  console.log(
    `${String(i + 1).padStart(3)} ${r.total.toFixed(1).padStart(6)} s  ` +
      `(${r.self.toFixed(1)} own + ${r.children.toFixed(1)} children)  ${r.file}`,
  );
}
