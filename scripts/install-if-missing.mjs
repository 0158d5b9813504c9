/**
 * The first step of `npm start` and `npm test`: on a fresh clone, with no node_modules yet,
 * install the locked dependencies (`npm ci`) and say so, so that either command works as the very
 * first one. Plain JavaScript with no dependencies, because it runs on the `node` that comes with
 * npm (Node 20 on many machines): the Node 24 that every other script runs on is itself one of the
 * dependencies it installs.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
// npm writes node_modules/.package-lock.json when an install completes.
if (!existsSync(join(root, "node_modules", ".package-lock.json"))) {
  console.error("cairn: node_modules is missing: installing the locked dependencies first (npm ci) …");
  // The engine warnings npm ci prints on Node 20 are about the packages the Node 24 devDependency
  // runs (every npm script runs on it), so only errors are shown.
  const npm = process.env.npm_execpath
    ? spawnSync(
        process.execPath,
        [process.env.npm_execpath, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        {
          cwd: root,
          stdio: "inherit",
        },
      )
    : spawnSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], {
        cwd: root,
        stdio: "inherit",
      });
  if (npm.status !== 0) {
    console.error(
      `cairn: npm ci failed (${npm.error ? npm.error.message : `exit ${npm.status}`}); nothing was started`,
    );
    process.exit(1);
  }
  console.error("cairn: dependencies installed");
}
