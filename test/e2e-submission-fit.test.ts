/**
 * Saying what will not run when it is submitted, end to end: `cairn submit` warns when no
 * registered agent could ever hold the request (the session is still accepted), and `--wait`
 * prints the pending reason each time it changes, as Slurm's `Reason=` and Kubernetes'
 * FailedScheduling events do.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { runCairn } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 1, agentCapacity: { cpu: 4, memoryMiB: 4096 } });
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

function specFile(name: string, yaml: string): string {
  const file = join(rt.dataDir, `${name}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

test("64 cpu on a 4-cpu agent: submit warns at once, the session is accepted, and --wait says why it waits", async () => {
  const file = specFile("big", "name: big\nresources: { cpu: 64 }\ncommand: [sh, -c, 'echo hi']\n");
  const run = await runCairn(rt.dataDir, ["submit", file, "--id", "big-1", "--wait", "--timeout", "10"]);
  expect(run.code, run.stderr).toBe(124);
  const lines = run.stderr.split("\n");
  expect(lines[0]).toBe(
    "cairn: warning: big-1 was accepted, but no registered agent could ever run a task of 64 cpu and 256 MiB, " +
      "even idle: no agent matches: a task needs 64 cpu and 256 MiB; the largest agent has 4 cpu and 4096 MiB",
  );
  expect(lines).toContain(
    "PENDING: ScheduleNewSessions SKIPPED (no agent matches: a task needs 64 cpu and 256 MiB; the largest agent has 4 cpu and 4096 MiB)",
  );
  // Accepted all the same: it waits for an agent that fits (or a cancel).
  expect((await rt.store.getSession("big-1"))?.session.status).toBe("PENDING");
  await rt.cancel("big-1");
  await rt.waitForEnd("big-1");
}, 60_000);

test("--wait prints the pending reason each time it changes, and nothing is warned for what fits", async () => {
  await rt.submit({
    sessionId: "blocker-1",
    spec: { name: "blocker", resources: { cpu: 3 }, command: ["sleep", "600"] },
  });
  await rt.waitForStatus("blocker-1", "RUNNING");
  const file = specFile("two", "name: two\nresources: { cpu: 2 }\ncommand: [sh, -c, 'echo done']\n");
  const waiting = runCairn(rt.dataDir, ["submit", file, "--id", "two-1", "--wait", "--timeout", "90"]);
  await rt.waitFor(
    "two-1",
    (s) => s.session.pendingReason === "no agent has 2 cpu free; largest free is 1",
    "waiting on cpu",
  );
  // A second agent, too small as well: the reason changes.
  const added = await rt.runtime.startAgent({ cpu: 1.5, memoryMiB: 1024 });
  await rt.waitFor(
    "two-1",
    (s) => s.session.pendingReason === "no agent has 2 cpu free; largest free is 1.5",
    "the reason naming the new agent",
  );
  await rt.cancel("blocker-1");
  const run = await waiting;
  expect(run.code, run.stderr).toBe(0);
  const lines = run.stderr.split("\n");
  expect(lines.some((l) => l.startsWith("cairn: warning:"))).toBe(false);
  const first = lines.indexOf(
    "PENDING: ScheduleNewSessions SKIPPED (no agent has 2 cpu free; largest free is 1)",
  );
  const second = lines.indexOf(
    "PENDING: ScheduleNewSessions SKIPPED (no agent has 2 cpu free; largest free is 1.5)",
  );
  const placed = lines.findIndex((l) => l.startsWith("PENDING → SCHEDULED"));
  expect([first >= 0, second > first, placed > second], run.stderr).toEqual([true, true, true]);
  await added.stop();
}, 120_000);
