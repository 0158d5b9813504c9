/**
 * A fresh clone, as a new user has it: no node_modules, and only the system's `node` and `npm`
 * on the PATH (Node 20 on these machines). `npm start` and `npm test` each work as the very first
 * command: each installs the locked dependencies (npm ci) and says so, then does its work on the
 * Node 24 that the install brought. Slow (two real `npm ci` runs, from npm's cache when it is
 * warm), and run with the rest of the suite all the same.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const CHECKOUT = resolve(".");
const INSTALL_LINE = "cairn: node_modules is missing: installing the locked dependencies first (npm ci)";
const NPM_CI_TIMEOUT_MS = 600_000;

const root = mkdtempSync(join(tmpdir(), "cairn-fresh-clone-"));
const clone = join(root, "cairn");

/** The environment of a user's shell: no npm or vitest variables, no node_modules/.bin on the PATH. */
const userEnv: NodeJS.ProcessEnv = {
  ...Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) =>
        !key.startsWith("AWS_") &&
        !key.startsWith("npm_") &&
        !key.startsWith("VITEST") &&
        key !== "NODE_OPTIONS" &&
        key !== "CAIRN_RUNTIME_FILE",
    ),
  ),
  PATH: (process.env["PATH"] ?? "")
    .split(delimiter)
    .filter((dir) => !dir.includes("node_modules"))
    .join(delimiter),
  XDG_STATE_HOME: join(root, "state"),
  // npm's cache holds every locked package (this checkout was installed from it): the installs
  // take them from there without asking the registry about each one again. What is tested is that
  // the first command installs, not the network; a package missing from the cache is still fetched.
  npm_config_prefer_offline: "true",
};

interface Run {
  readonly code: number | null;
  readonly output: string;
}

/** Runs `npm ARGS` in the clone, in a process group of its own; `until` ends it early with Ctrl-C's signal. */
function npm(args: readonly string[], until?: (output: string) => boolean): Promise<Run> {
  const child = spawn("npm", args, {
    cwd: clone,
    env: userEnv,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let interrupted = false;
  const take = (chunk: Buffer) => {
    output += chunk.toString();
    if (until !== undefined && !interrupted && until(output)) {
      interrupted = true;
      // What Ctrl-C does: SIGINT to the whole foreground process group.
      process.kill(-child.pid!, "SIGINT");
    }
  };
  child.stdout.on("data", take);
  child.stderr.on("data", take);
  return new Promise((done, fail) => {
    child.on("error", fail);
    // Without the colours vitest may write even to a pipe.
    child.on("close", (code) => done({ code, output: output.replace(/\u001b\[[\d;]*m/g, "") }));
  });
}

beforeAll(() => {
  const head = spawnSync("git", ["rev-parse", "HEAD"], { cwd: CHECKOUT, encoding: "utf8" });
  expect(head.status, head.stderr).toBe(0);
  for (const args of [
    ["clone", "--quiet", "--no-checkout", CHECKOUT, clone],
    ["-C", clone, "checkout", "--quiet", "--detach", head.stdout.trim()],
  ]) {
    const git = spawnSync("git", args, { encoding: "utf8" });
    expect(git.status, `git ${args.join(" ")}: ${git.stderr}`).toBe(0);
  }
  expect(existsSync(join(clone, "node_modules"))).toBe(false);
}, 120_000);

// Two node_modules of the clone's, removed: a minute or more on a busy machine.
afterAll(() => rmSync(root, { recursive: true, force: true }), NPM_CI_TIMEOUT_MS);

describe("a fresh clone with no node_modules", () => {
  test(
    "npm start installs the locked dependencies, says so, and reaches cairn ready",
    async () => {
      // Interrupted once it has printed all it prints at start (its last line is the submit hint).
      const start = await npm(["start", "--", "--agents", "1", "--data-dir", join(root, "data")], (out) =>
        out.includes("submit with:"),
      );
      expect(start.output).toContain(INSTALL_LINE);
      expect(start.output).toMatch(/cairn ready in [\d.]+s/);
      // Ctrl-C: it stops what it started (npm itself then ends by the signal, as it does for any script).
      expect(start.output).toContain("cairn: stopped");
      // The signal reaches the whole group but not DynamoDB Local, which is stopped last: no
      // function still finishing a batch meets a table that is gone.
      expect(start.output).not.toMatch(/ECONNREFUSED|"level":"ERROR"/);
    },
    NPM_CI_TIMEOUT_MS,
  );

  test(
    "npm test installs them too, and runs the tests; with node_modules there, no install",
    async () => {
      rmSync(join(clone, "node_modules"), { recursive: true, force: true });
      const first = await npm(["test", "--", "test/cli-runtime-locate.test.ts"]);
      expect(first.output).toContain(INSTALL_LINE);
      expect(first.output).toMatch(/Tests\s+\d+ passed/);
      expect(first.code, first.output).toBe(0);
      const again = await npm(["test", "--", "test/cli-runtime-locate.test.ts"]);
      expect(again.output).not.toContain(INSTALL_LINE);
      expect(again.code, again.output).toBe(0);
    },
    NPM_CI_TIMEOUT_MS,
  );
});
