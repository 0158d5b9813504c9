/**
 * What installing prints on the older Node the prerequisites allow (README.md, Prerequisites):
 * `npm ci` on Node 20 warns EBADENGINE for each package whose `engines` ask for more, and the
 * README names exactly those packages, so what a new user sees is what they were told to expect.
 * Run against the lock file with `npm ci --dry-run --offline` on the system's own Node (the one
 * on the PATH without node_modules/.bin); skipped where that Node is new enough to warn of
 * nothing.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";

const SYSTEM_PATH = (process.env["PATH"] ?? "")
  .split(":")
  .filter((dir) => dir !== "" && !dir.includes("node_modules"))
  .join(":");

function systemNodeMajor(): number | undefined {
  try {
    const version = execFileSync("node", ["--version"], { env: { ...process.env, PATH: SYSTEM_PATH } })
      .toString()
      .trim();
    return Number(/^v(\d+)\./.exec(version)?.[1]);
  } catch {
    return undefined;
  }
}

const major = systemNodeMajor();

test.skipIf(major === undefined || major >= 24)(
  "npm ci on the system's older Node warns EBADENGINE for exactly the packages the README names",
  () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-engines-"));
    try {
      copyFileSync("package.json", join(dir, "package.json"));
      copyFileSync("package-lock.json", join(dir, "package-lock.json"));
      const run = spawnSync("npm", ["ci", "--dry-run", "--offline", "--ignore-scripts"], {
        cwd: dir,
        env: { ...process.env, PATH: SYSTEM_PATH },
        encoding: "utf8",
        timeout: 120_000,
      });
      expect(run.status, run.stderr).toBe(0);
      const warned = [...run.stderr.matchAll(/EBADENGINE {3}package: '(@?[^@']+)@/g)].map((m) => m[1]);
      expect(warned.length).toBeGreaterThan(0);
      const prerequisites = /## Prerequisites\n([\s\S]*?)\n## /.exec(readFileSync("README.md", "utf8"))![1]!;
      // The sentence that lists them: from "running npm:" to "They are expected".
      const listed = /running npm:([\s\S]*?)They are expected/.exec(prerequisites)?.[1] ?? "";
      const named = [...listed.matchAll(/`(@?[a-z][\w./-]*)`/g)].map((m) => m[1]!);
      expect(prerequisites).toContain("EBADENGINE");
      expect(named.sort()).toEqual([...new Set(warned)].sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
  180_000,
);
