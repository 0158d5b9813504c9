/**
 * `cairn list` against a real embedded runtime, as a user runs it (the real binary, a child
 * process): the dashboard's filters (name or id prefix, queue, job) and an age window, each
 * session's state in one named vocabulary at a time, how ended sessions ended in colour on a
 * terminal only, and `--watch` printing a session again as its state changes, until Ctrl-C.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startLocalDashboard } from "../local/dashboard.ts";
import { runCairn, stdoutJson, type Run } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";
import { until } from "./support/until.ts";

const SESSION_TEST_TIMEOUT_MS = 150_000;
const CLI = resolve("bin/cairn.js");

let rt: TestRuntime;

function cairn(...args: string[]): Promise<Run> {
  return runCairn(rt.dataDir, args);
}

function spec(name: string, text: string): string {
  const path = join(rt.dataDir, name);
  writeFileSync(path, text);
  return path;
}

function ids(run: Run): string[] {
  return (stdoutJson(run)["sessions"] as { sessionId: string }[]).map((s) => s.sessionId).sort();
}

beforeAll(async () => {
  rt = await startTestRuntime();
  const queue = await cairn("queue", "create", "side");
  expect(queue.code, queue.stderr).toBe(0);
  const submissions = [
    ["submit", "examples/hello.yaml", "--id", "alpha-1", "--wait"],
    ["submit", "examples/fail.yaml", "--id", "beta-1", "--wait"],
    [
      "submit",
      spec("side.yaml", 'name: sideline\nqueue: side\ncommand: ["true"]\n'),
      "--id",
      "side-1",
      "--wait",
    ],
    [
      "submit",
      spec("pair.yaml", 'name: pair\nreplicas: 2\ncoscheduled: false\ncommand: ["true"]\n'),
      "--id",
      "pair-1",
      "--wait",
    ],
  ];
  for (const args of submissions) {
    const run = await cairn(...args);
    // fail.yaml fails on purpose (exit 1: it did not succeed).
    expect(run.code === 0 || args.includes("beta-1"), `${args.join(" ")}: ${run.stderr}`).toBe(true);
  }
}, 240_000);

afterAll(async () => {
  await rt?.stop();
});

describe("cairn list filters like the dashboard", () => {
  test("by name or id prefix, queue, job and age; filters combine", async () => {
    expect(ids(await cairn("list", "--name", "fai", "-o", "json"))).toEqual(["beta-1"]);
    expect(ids(await cairn("list", "--name", "alpha", "-o", "json"))).toEqual(["alpha-1"]);
    expect(ids(await cairn("list", "--queue", "side", "-o", "json"))).toEqual(["side-1"]);
    expect(ids(await cairn("list", "--job", "pair-1", "-o", "json"))).toEqual(["pair-1-t0", "pair-1-t1"]);
    expect(ids(await cairn("list", "--job", "pair-1", "--name", "pair-1-t1", "-o", "json"))).toEqual([
      "pair-1-t1",
    ]);
    const recent = ids(await cairn("list", "--since", "1h", "-o", "json"));
    expect(recent).toEqual(expect.arrayContaining(["alpha-1", "beta-1", "side-1", "pair-1-t0", "pair-1-t1"]));
    const old = await cairn("list", "--older-than", "1h");
    expect(old.code, old.stderr).toBe(0);
    expect(old.stdout).toBe("no sessions\n");
    expect(
      ids(
        await cairn("list", "--status", "TERMINATED", "--queue", "default", "--name", "beta", "-o", "json"),
      ),
    ).toEqual(["beta-1"]);
  });

  test("a bad filter is refused by name", async () => {
    const run = await cairn("list", "--since", "yesterday");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      '--since must be a duration such as "30s", "5m" or "1h30m", got "yesterday"',
    );
    const view = await cairn("list", "--view", "slurm");
    expect(view.code).toBe(2);
    expect(view.stderr).toContain('--view must be one of sokovan, iris, hpc, got "slurm"');
  });
});

describe("one vocabulary at a time, how each session ended in its colour", () => {
  test("each view names its vocabulary in the state column's header", async () => {
    const sokovan = await cairn("list", "--name", "beta");
    expect(sokovan.stdout).toMatch(/^SESSION +NAME +STATUS \(SOKOVAN\) +QUEUE/);
    expect(sokovan.stdout).toMatch(/\nbeta-1 +fail +TERMINATED \(failed\) +default/);
    const iris = await cairn("list", "--name", "beta", "--view", "iris");
    expect(iris.stdout).toMatch(/^SESSION +NAME +STATE \(IRIS\) +QUEUE/);
    expect(iris.stdout).toMatch(/\nbeta-1 +fail +FAILED +default/);
    const hpc = await cairn("list", "--name", "alpha", "--view", "hpc");
    expect(hpc.stdout).toMatch(/^SESSION +NAME +STATE \(HPC PACK\) +QUEUE/);
    expect(hpc.stdout).toMatch(/\nalpha-1 +hello +Finished +default/);
    const json = stdoutJson(await cairn("list", "--name", "beta", "-o", "json"));
    expect(json["sessions"]).toEqual([
      expect.objectContaining({
        status: "TERMINATED",
        result: "failed",
        irisState: "FAILED",
        hpcState: "Failed",
      }),
    ]);
  });

  test("on a terminal, succeeded is green and failed red; never with NO_COLOR", async () => {
    // `script` gives the CLI a pseudo-terminal for its stdout, as a user's shell has. Not spawnSync:
    // the runtime answers from this process.
    const tty = (prefix: string, env: Record<string, string> = {}) => {
      const command = `${process.execPath} ${CLI} list --name ${prefix} --runtime-file ${join(rt.dataDir, "runtime.json")}`;
      // NO_COLOR set but empty does not count (no-color.org).
      const child = spawn("script", ["-qec", command, "/dev/null"], {
        env: { ...process.env, NO_COLOR: "", ...env },
        stdio: ["ignore", "pipe", "inherit"],
      });
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
      return new Promise<string>((done, fail) => {
        child.on("error", fail);
        child.on("close", () => done(out));
      });
    };
    expect(await tty("alpha")).toMatch(/alpha-1 +hello +\u001b\[32mTERMINATED \(succeeded\)\u001b\[0m/);
    expect(await tty("beta")).toMatch(/beta-1 +fail +\u001b\[31mTERMINATED \(failed\)\u001b\[0m/);
    expect(await tty("beta", { NO_COLOR: "1" })).not.toContain("\u001b[");
  });

  test("the dashboard's sessions list names its vocabulary and shows how each ended, in its colour", async () => {
    const dashboard = await startLocalDashboard(rt.runtime.info, { port: 0 });
    try {
      const page = await (await fetch(new URL("/?name=a", dashboard.url))).text();
      expect(page).toContain("<th>status (Sokovan's)</th>");
      const row = (id: string) =>
        new RegExp(`<tr data-session="${id}">[\\s\\S]*?</tr>`).exec(page)?.[0] ?? "";
      expect(row("alpha-1")).toContain(
        '<span class="badge result-succeeded" data-result="succeeded">succeeded</span>',
      );
      const failed = await (await fetch(new URL("/?name=beta", dashboard.url))).text();
      expect(failed).toContain('<span class="badge result-failed" data-result="failed">failed</span>');
      const css = await (await fetch(new URL("/static/dashboard.css", dashboard.url))).text();
      expect(css).toMatch(/\.result-succeeded \{\s*color: #1a7f37;/);
      expect(css).toMatch(/\.result-failed \{\s*color: #cf222e;/);
    } finally {
      await dashboard.close();
    }
  });

  test("into a pipe, no colour", async () => {
    const piped = await cairn("list", "--name", "beta");
    expect(piped.stdout).not.toContain("\u001b[");
  });
});

describe("cairn list --watch", () => {
  test(
    "prints the list, then each session again as its state changes, until Ctrl-C",
    async () => {
      const child = spawn(
        process.execPath,
        [CLI, "list", "--watch", "--name", "watched", "--runtime-file", join(rt.dataDir, "runtime.json")],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let out = "";
      let err = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
      const exited = new Promise<[number | null, NodeJS.Signals | null]>((done) =>
        child.on("exit", (code, signal) => done([code, signal])),
      );
      await until("the first listing", () => (out.includes("no sessions") ? true : undefined));
      const submitted = await cairn(
        "submit",
        spec("watched.yaml", 'name: watched\ncommand: ["/bin/sh", "-c", "sleep 2"]\n'),
        "--id",
        "watched-1",
      );
      expect(submitted.code, submitted.stderr).toBe(0);
      await until(
        `watched-1 ending, in --watch's output:\n${out}${err}`,
        () => (/\nwatched-1 +watched +TERMINATED \(succeeded\)/.test(out) ? true : undefined),
        90_000,
      );
      const rows = out.split("\n").filter((line) => line.startsWith("watched-1"));
      // Seen before it ended, one line per change, and the header once, above the first row.
      expect(rows.length, out).toBeGreaterThanOrEqual(2);
      expect(rows[0]).not.toContain("TERMINATED");
      expect(out.match(/^SESSION /gm) ?? []).toHaveLength(1);
      child.kill("SIGINT");
      const [code, signal] = await exited;
      expect(code === 130 || signal === "SIGINT", `exit ${code} ${signal}: ${err}`).toBe(true);
    },
    SESSION_TEST_TIMEOUT_MS,
  );
});
