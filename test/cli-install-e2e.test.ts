/**
 * The CLI as a user installs and runs it: `npm install -g` of the checkout (into a temporary
 * prefix), run by whatever `node` comes first on the user's PATH (this machine's is Node 20),
 * from directories other than the checkout, against `npm start` with a --data-dir elsewhere (its
 * table in the suite's DynamoDB Local). It finds the runtime through the record `npm start` leaves
 * in the user's state directory, or the nearest `.cairn/runtime.json` above the working
 * directory; a record of a runtime that died says so.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { outcomeOf, type Run } from "./support/cli.ts";

const CHECKOUT = resolve(".");
const MAIN = join(CHECKOUT, "local", "main.ts");
const SESSION_TIMEOUT_MS = 150_000;

const root = mkdtempSync(join(tmpdir(), "cairn-install-"));
const prefix = join(root, "prefix");
const stateHome = join(root, "state");
const project = join(root, "project");
const dataDir = join(project, ".cairn");
const deeper = join(project, "src", "deeper");
const elsewhere = join(root, "elsewhere");
const recordPath = join(stateHome, "cairn", "runtime.json");

/** The user's PATH without this checkout's node_modules/.bin: `node` is the system's. */
const userPath = (process.env["PATH"] ?? "")
  .split(delimiter)
  .filter((dir) => !dir.includes("node_modules"))
  .join(delimiter);

function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !key.startsWith("AWS_") && !key.startsWith("npm_") && key !== "CAIRN_RUNTIME_FILE",
    ),
  );
  return {
    ...env,
    PATH: `${join(prefix, "bin")}${delimiter}${userPath}`,
    XDG_STATE_HOME: stateHome,
    ...extra,
  };
}

/** The installed `cairn` command, found on the PATH as a shell would, run in `cwd`. */
function cairn(cwd: string, args: readonly string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  return outcomeOf(spawn("cairn", args, { cwd, env: userEnv(extraEnv), stdio: ["ignore", "pipe", "pipe"] }));
}

let runtime: ChildProcess | undefined;
let runtimeOut = "";

beforeAll(async () => {
  for (const dir of [prefix, stateHome, deeper, elsewhere]) mkdirSync(dir, { recursive: true });
  const install = spawnSync("npm", ["install", "--global", "--prefix", prefix, CHECKOUT], {
    cwd: elsewhere,
    env: userEnv(),
    encoding: "utf8",
  });
  expect(install.status, `${install.stdout}\n${install.stderr}`).toBe(0);

  // Its table in the suite's DynamoDB Local: what is tested is how the CLI finds the runtime, and a
  // JVM of its own would add nothing to that.
  const database = [
    "--dynamodb-endpoint",
    inject("dynamoEndpoint"),
    "--table-name",
    `cairn-install-${process.pid}`,
  ];
  runtime = spawn(process.execPath, [MAIN, "--data-dir", dataDir, "--agents", "1", ...database], {
    cwd: CHECKOUT,
    env: userEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  runtime.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((done, fail) => {
    runtime!.stdout!.on("data", (chunk: Buffer) => {
      runtimeOut += chunk.toString();
      if (runtimeOut.includes("submit with:")) done();
    });
    runtime!.once("exit", (code) => fail(new Error(`npm start exited ${code}:\n${stderr}`)));
  });
}, 120_000);

afterAll(async () => {
  if (runtime && runtime.exitCode === null && runtime.signalCode === null) {
    runtime.kill("SIGINT");
    await new Promise((done) => runtime!.once("exit", done));
  }
  rmSync(root, { recursive: true, force: true });
});

describe("cairn installed with npm install -g, run from another directory", () => {
  test("npm start records its runtime for the user, whatever its --data-dir", () => {
    expect(runtimeOut).toContain(`recorded in ${recordPath}`);
    expect(JSON.parse(readFileSync(recordPath, "utf8"))).toEqual({
      runtimeFile: join(dataDir, "runtime.json"),
      dataDir,
      pid: runtime!.pid,
    });
  });

  test("the command runs on the user's node: --help", async () => {
    const system = spawnSync("node", ["--version"], { env: userEnv(), encoding: "utf8" });
    const help = await cairn(elsewhere, ["--help"]);
    expect(help.code, `${help.stderr} (user's node ${system.stdout.trim()})`).toBe(0);
    expect(help.stdout).toContain("Usage: cairn <command> [options]");
  });

  test(
    "from a directory with no .cairn above it, submit --wait and list find the runtime through the user's record",
    async () => {
      writeFileSync(join(elsewhere, "hello.yaml"), readFileSync(join(CHECKOUT, "examples", "hello.yaml")));
      const submitted = await cairn(elsewhere, [
        "submit",
        "-f",
        "hello.yaml",
        "--id",
        "from-elsewhere",
        "--wait",
      ]);
      expect(submitted.code, submitted.stderr).toBe(0);
      const list = await cairn(elsewhere, ["list", "-o", "json"]);
      expect(list.code, list.stderr).toBe(0);
      const ids = (JSON.parse(list.stdout) as { sessions: { sessionId: string }[] }).sessions.map(
        (s) => s.sessionId,
      );
      expect(ids).toContain("from-elsewhere");
    },
    SESSION_TIMEOUT_MS,
  );

  test("below the project, the nearest .cairn/runtime.json is found with no user record at all", async () => {
    const noRecord = join(root, "no-state");
    const list = await cairn(deeper, ["list"], { XDG_STATE_HOME: noRecord });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain("from-elsewhere");
    // And nowhere near one, with no record: where it looked, and what to do.
    const lost = await cairn(elsewhere, ["list"], { XDG_STATE_HOME: noRecord });
    expect(lost.code).toBe(4);
    expect(lost.stderr).toBe(
      `cairn: no local runtime found: no .cairn/runtime.json in ${elsewhere} or a directory above it, ` +
        `and no runtime recorded in ${join(noRecord, "cairn", "runtime.json")} — start one with \`npm start\`, ` +
        "or pass --stack/--endpoint\n",
    );
  });

  test("CAIRN_RUNTIME_FILE names the runtime file", async () => {
    const list = await cairn(elsewhere, ["list"], {
      XDG_STATE_HOME: join(root, "no-state"),
      CAIRN_RUNTIME_FILE: join(dataDir, "runtime.json"),
    });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain("from-elsewhere");
  });

  test("a record of a runtime that died says so, naming its pid", async () => {
    const deadState = join(root, "dead-state");
    mkdirSync(join(deadState, "cairn"), { recursive: true });
    // A pid that really ran and has ended.
    const gone = spawnSync("true");
    writeFileSync(
      join(deadState, "cairn", "runtime.json"),
      JSON.stringify({ runtimeFile: join(dataDir, "runtime.json"), dataDir, pid: gone.pid }),
    );
    const list = await cairn(elsewhere, ["list"], { XDG_STATE_HOME: deadState });
    expect(list.code).toBe(4);
    expect(list.stderr).toBe(
      `cairn: the runtime recorded in ${join(deadState, "cairn", "runtime.json")} (pid ${gone.pid}, ` +
        `data directory ${dataDir}) is no longer running: it did not stop cleanly — start it again with \`npm start\`\n`,
    );
  });

  test("a clean stop removes the record", async () => {
    runtime!.kill("SIGINT");
    await new Promise((done) => runtime!.once("exit", done));
    expect(existsSync(recordPath)).toBe(false);
    const list = await cairn(elsewhere, ["list"]);
    expect(list.code).toBe(4);
    expect(list.stderr).toContain(`no runtime recorded in ${recordPath}`);
  });
});
