/**
 * `npm run bench:compare -- REV_A REV_B`: measures two revisions against each other in one run.
 * Each is checked out into a temporary git worktree (node_modules hard-linked from this checkout
 * when its package-lock.json is the same, `npm ci` otherwise), then `bench:local` runs in them
 * alternately, A B A B …, with the same settings, so that what else the machine does weighs on
 * both alike. Prints each figure's median for A and B, every run's, the B/A ratios and a verdict
 * against the bounds in compare-figures.ts. The worktrees are removed at the end, also on
 * Ctrl-C. Figures only; nothing here is a test.
 *
 *   npm run bench:compare -- REV_A REV_B [--pairs 3] [--sessions 1000] [--test-cpu] [--logs DIR]
 *                                        [-- BENCH_LOCAL_ARGS…]
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import {
  parseBenchOutput,
  parseCompareArgs,
  renderTable,
  runOrder,
  USAGE,
  type CompareOptions,
  type RunFigures,
  type Side,
  type TestCpu,
} from "./compare-figures.ts";
import { BenchUsageError } from "./flags.ts";
import { removeGroup, runMeasured } from "./tree-cpu.ts";

/** How long a stopped run gets between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 10_000;

let options: CompareOptions;
try {
  options = parseCompareArgs(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof BenchUsageError)) throw error;
  if (error.message === "help") {
    console.log(USAGE);
    process.exit(0);
  }
  console.error(`bench:compare: ${error.message}\n${USAGE}`);
  process.exit(2);
}

const repo = git(process.cwd(), ["rev-parse", "--show-toplevel"]);
const scratch = mkdtempSync(join(tmpdir(), "cairn-compare-"));
const worktrees: string[] = [];
let running: ChildProcess | undefined;
let cleaned = false;

/** Removes the worktrees and the scratch directory; safe to call more than once. */
function cleanUp(): void {
  if (cleaned) return;
  cleaned = true;
  for (const dir of worktrees) {
    spawnSync("git", ["worktree", "remove", "--force", dir], { cwd: repo, stdio: "ignore" });
  }
  rmSync(scratch, { recursive: true, force: true });
  for (const side of ["A", "B"] as const) removeGroup(cpuGroupName(side));
  spawnSync("git", ["worktree", "prune"], { cwd: repo, stdio: "ignore" });
}

async function stopRunning(): Promise<void> {
  const child = running;
  if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  // The run is its own process group: DynamoDB Local and the agents it started stop with it.
  killGroup(child.pid, "SIGTERM");
  const timer = setTimeout(() => killGroup(child.pid!, "SIGKILL"), KILL_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.once(signal, () => {
    console.error(`\nbench:compare: ${signal}: stopping the run and removing the worktrees …`);
    void stopRunning().finally(() => {
      cleanUp();
      process.exit(130);
    });
  });
}
process.once("exit", cleanUp);

try {
  const a = checkout("A", options.revA);
  const b = checkout("B", options.revB);
  if (options.logs !== undefined) mkdirSync(options.logs, { recursive: true });

  const runs: Record<Side, RunFigures[]> = { A: [], B: [] };
  const order = runOrder(options.pairs);
  for (const [i, { side, round }] of order.entries()) {
    const tree = side === "A" ? a : b;
    const tag = `${side} ${round}/${options.pairs}`;
    console.log(`bench:compare: run ${i + 1}/${order.length}: ${tag} (${tree.commit.slice(0, 12)}) …`);
    const output = await runBench(tree.dir, tag, `${side.toLowerCase()}-${round}.txt`);
    const figures = parseBenchOutput(output);
    runs[side].push(figures);
    console.log(
      `bench:compare: ${tag}: ${figures.throughput} sessions/s, first RUNNING ${figures.firstRunningSeconds} s, ` +
        `${figures.dynamoDbRequests} DynamoDB requests and ${figures.transitions} transitions per session`,
    );
    // The figures so far after each pair but the last: a long comparison stopped early still says something.
    if (side === "B" && round < options.pairs) {
      console.log(`\nbench:compare: after ${round} of ${options.pairs} pairs:\n${table(runs.A, runs.B)}\n`);
    }
  }

  let testCpu: TestCpu | undefined;
  if (options.testCpu) {
    testCpu = { a: await testCpuSeconds(a.dir, "A"), b: await testCpuSeconds(b.dir, "B") };
  }

  console.log("");
  console.log(table(runs.A, runs.B, testCpu));

  function table(runsA: readonly RunFigures[], runsB: readonly RunFigures[], cpu?: TestCpu): string {
    return renderTable({
      a: { rev: options.revA, commit: a.commit, label: a.subject },
      b: { rev: options.revB, commit: b.commit, label: b.subject },
      sessions: options.sessions,
      pairs: runsB.length,
      benchArgs: options.benchArgs,
      runsA,
      runsB,
      ...(cpu === undefined ? {} : { testCpu: cpu }),
    });
  }
} catch (error) {
  console.error(`bench:compare: ${(error as Error).message}`);
  await stopRunning();
  cleanUp();
  process.exit(1);
}
cleanUp();

// ---------------------------------------------------------------------------------------------

interface Tree {
  readonly dir: string;
  readonly commit: string;
  readonly subject: string;
}

/** Checks `rev` out into a new worktree with its dependencies installed. */
function checkout(side: Side, rev: string): Tree {
  let commit: string;
  try {
    commit = git(repo, ["rev-parse", "--verify", "--end-of-options", `${rev}^{commit}`]);
  } catch {
    throw new Error(`REV_${side}: "${rev}" names no commit in ${repo}`);
  }
  const dir = join(scratch, side.toLowerCase());
  console.log(`bench:compare: ${side} = ${rev} (${commit.slice(0, 12)}): git worktree add ${dir}`);
  git(repo, ["worktree", "add", "--detach", "--quiet", dir, commit]);
  worktrees.push(dir);
  const subject = git(repo, ["log", "-1", "--format=%s", commit]);
  const lock = (root: string) => readFileSync(join(root, "package-lock.json"), "utf8");
  const here = join(repo, "node_modules");
  if (existsSync(here) && lock(dir) === lock(repo)) {
    console.log(
      `bench:compare: ${side}: package-lock.json is this checkout's: node_modules hard-linked (cp -al)`,
    );
    const copied = spawnSync("cp", ["-al", here, join(dir, "node_modules")], { stdio: "inherit" });
    if (copied.status !== 0) throw new Error(`${side}: cp -al node_modules failed`);
  } else {
    console.log(`bench:compare: ${side}: package-lock.json differs from this checkout's: npm ci …`);
    const installed = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: "inherit" });
    if (installed.status !== 0) throw new Error(`${side}: npm ci failed in ${dir}`);
  }
  return { dir, commit, subject };
}

/**
 * One `bench:local` run in `dir`: its progress lines shown as they come, its whole output
 * returned (and kept under --logs). Throws when the run fails.
 */
async function runBench(dir: string, tag: string, logName: string): Promise<string> {
  const tmp = join(scratch, `tmp-${logName}`);
  mkdirSync(tmp);
  const child = spawn(
    "npm",
    ["run", "--silent", "bench:local", "--", "--sessions", String(options.sessions), ...options.benchArgs],
    // Its own process group, so a stop reaches DynamoDB Local and the agents too; its temporary
    // files (DynamoDB Local's data) under the scratch directory, removed with it.
    { cwd: dir, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, TMPDIR: tmp } },
  );
  running = child;
  const log = options.logs === undefined ? undefined : createWriteStream(resolve(options.logs, logName));
  const chunks: string[] = [];
  const stderrTail: string[] = [];
  const lines = createInterface({ input: child.stdout });
  lines.on("line", (line) => {
    chunks.push(line);
    log?.write(line + "\n");
    if (line.startsWith("bench:")) console.log(`  [${tag}] ${line}`);
  });
  const errors = createInterface({ input: child.stderr });
  errors.on("line", (line) => {
    stderrTail.push(line);
    if (stderrTail.length > 20) stderrTail.shift();
  });
  const code = await new Promise<number | null>((r) => child.once("close", r));
  running = undefined;
  log?.end();
  const output = chunks.join("\n");
  // bench:local exits 1 when not every session ended: the figures still say how far it got.
  if (code !== 0 && !(code === 1 && output.includes("AWS price of 1,000 sessions"))) {
    throw new Error(`${tag}: bench:local exited with ${code}; its last lines:\n${stderrTail.join("\n")}`);
  }
  return output;
}

/** The cpuacct group `npm test` runs in on `side`, where there is one. */
function cpuGroupName(side: Side): string {
  return `cairn-bench-compare-${process.pid}-${side}`;
}

/**
 * `npm test`'s CPU time (user + system) in `dir`, of its whole process tree where this process
 * may put it in a cpuacct group, else of the children it waited for (bench/tree-cpu.ts).
 */
async function testCpuSeconds(dir: string, side: Side): Promise<number> {
  console.log(`bench:compare: npm test in ${side}, for its CPU time …`);
  // Not `npm test --silent`: npm hands its log level to the scripts it runs (npm_config_loglevel),
  // and a test that runs npm itself and reads its warnings would see none.
  const run = runMeasured(cpuGroupName(side), "npm", ["test"], {
    cwd: dir,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  running = run.child;
  const log =
    options.logs === undefined
      ? undefined
      : createWriteStream(resolve(options.logs, `${side.toLowerCase()}-npm-test.txt`));
  let tail = "";
  const keep = (chunk: Buffer) => {
    log?.write(chunk);
    tail = (tail + chunk.toString()).slice(-4000);
  };
  run.child.stdout!.on("data", keep);
  run.child.stderr!.on("data", keep);
  const { code, cpu } = await run.done;
  running = undefined;
  log?.end();
  const summary = tail
    .split("\n")
    .filter((l) => /Test Files|Tests /.test(l))
    .join("; ");
  const counted = cpu.whole
    ? `the whole process tree, by a cpuacct cgroup; ${cpu.waitedSeconds.toFixed(0)} s of it in processes waited for`
    : "the processes waited for; no cpuacct cgroup here, so any re-parented to init are missed";
  console.log(
    `bench:compare: npm test in ${side}: ${cpu.seconds.toFixed(0)} CPU seconds (${counted}), exit ${code} (${summary.replace(/\x1b\[[0-9;]*m/g, "").trim()})`,
  );
  return cpu.seconds;
}

function git(cwd: string, args: readonly string[]): string {
  const out = spawnSync("git", args, { cwd, encoding: "utf8" });
  if (out.status !== 0) throw new Error(`git ${args.join(" ")}: ${out.stderr.trim()}`);
  return out.stdout.trim();
}
