/**
 * `cairn agent --kernel-user` end to end in the embedded runtime (running as root, as CI does):
 * each kernel runs with the kernel user's uid and gid, in a work directory it owns inside the
 * agent's run directory, and cannot read the runtime file, its agent's environment or
 * descriptors. Skipped, saying why, when the tests do not run as root.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runLogPaths } from "../agent/work-dir.ts";
import { LOOK_AROUND } from "./support/kernel-probe.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let n = 0;
const newId = (label: string) => `ku-${label}-${Date.now().toString(36)}-${n++}`;
const sh = (script: string) => ["/bin/sh", "-c", script];

/** The unprivileged user kernels run as: `nobody`, present on every Linux host. */
const KERNEL_USER = "nobody";
const isRoot = process.geteuid?.() === 0;
if (!isRoot) {
  console.warn(
    `e2e-kernel-isolation: skipping the --kernel-user tests: they need root (to start kernels as ${KERNEL_USER}); ` +
      `this runs as uid ${process.geteuid?.() ?? "unknown"}`,
  );
}

describe.skipIf(!isRoot)("as a kernel user (--kernel-user, the runtime running as root)", () => {
  let rt: TestRuntime;
  let dataDir: string;
  const uid = () => Number(execFileSync("id", ["-u", KERNEL_USER], { encoding: "utf8" }).trim());
  beforeAll(async () => {
    // The kernel user must reach its work directory: the data directory is searchable, not readable.
    dataDir = mkdtempSync(join(tmpdir(), "cairn-e2e-kernel-user-"));
    chmodSync(dataDir, 0o711);
    rt = await startTestRuntime({ agents: 1, dataDir, kernelUser: KERNEL_USER });
  }, 120_000);
  afterAll(async () => {
    await rt?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test("the kernel runs as the user, in a directory it owns, and cannot read the runtime file nor its agent's environment", async () => {
    const id = newId("user");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "user",
        command: sh(
          `${LOOK_AROUND}
echo "== read ${join(dataDir, "runtime.json")}"; cat ${join(dataDir, "runtime.json")} 2>&1
echo "== home $HOME user $USER"
echo made > made-here && echo "== wrote in $PWD"
echo "bye from the kernel user" > "$CAIRN_TERMINATION_LOG"
exit 3`,
        ),
      },
    });
    const s = await rt.waitForEnd(id, 60_000);
    const paths = runLogPaths(join(dataDir, "work"), id, 0, 0);
    const out = readFileSync(paths.stdout, "utf8");
    expect(out).toContain(`== uid ${uid()}`);
    expect(out).toMatch(new RegExp(`== read ${join(dataDir, "runtime.json")}\\n.*Permission denied`));
    expect(out).toMatch(/== agent environment\n.*Permission denied/);
    expect(out).toMatch(/== agent descriptors\n.*Permission denied/);
    const { agent, client } = rt.runtime.info.credentials;
    const own = rt.runtime.agentCredential(s.kernels[0]!.agentId!);
    for (const secret of [own.secretAccessKey, agent.secretAccessKey, client.secretAccessKey])
      expect(out).not.toContain(secret);
    // Its own places: a working directory and a termination log it owns, in the agent's run directory.
    expect(out).toContain(`== wrote in ${join(paths.workDir, "work")}`);
    expect(statSync(join(paths.workDir, "work", "made-here")).uid).toBe(uid());
    expect(statSync(paths.workDir).uid).toBe(0);
    expect(s.kernels[0]?.exitCode).toBe(3);
    expect(s.kernels[0]?.message).toContain("bye from the kernel user");
  }, 90_000);

  test("a kernel cannot read another session's output: its agent keeps each run's logs to itself", async () => {
    const victim = newId("victim");
    await rt.submit({
      sessionId: victim,
      spec: { name: "victim", command: sh("echo secret-of-the-victim; echo more >&2") },
    });
    await rt.waitForEnd(victim, 60_000);
    const logs = runLogPaths(join(dataDir, "work"), victim, 0, 0);
    expect(readFileSync(logs.stdout, "utf8")).toContain("secret-of-the-victim");
    const reader = newId("reader");
    await rt.submit({
      sessionId: reader,
      spec: {
        name: "reader",
        command: sh(
          [logs.stdout, logs.stderr, logs.combined].map((f) => `echo "== ${f}"; cat ${f} 2>&1`).join("; "),
        ),
      },
    });
    await rt.waitForEnd(reader, 60_000);
    const out = readFileSync(runLogPaths(join(dataDir, "work"), reader, 0, 0).stdout, "utf8");
    expect(out).not.toContain("secret-of-the-victim");
    for (const f of [logs.stdout, logs.stderr, logs.combined]) {
      expect(out).toMatch(new RegExp(`== ${f}\\n.*Permission denied`));
      expect(statSync(f).mode & 0o777).toBe(0o600);
    }
  }, 120_000);
});
