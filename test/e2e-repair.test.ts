/**
 * Lifecycle repair end to end: a session whose lifecycle execution is gone is repaired by the
 * sweep. Each cause is produced on the embedded runtime: an execution stopped (StopExecution:
 * ABORTED), one failed (a stage completed towards a status the flow does not allow, which ends in
 * the state machine's Fail state, an error nothing catches: FAILED), a session whose
 * StartExecution never happened (written with the store directly), and one whose start met an
 * ended execution of its name (ExecutionAlreadyExists, taken for success). The sweep only looks at
 * sessions whose stage was entered long enough ago (a minute by default; 5 s here, the runtime's
 * `repairAfterMs`), so each case waits that long.
 */
import { afterAll, beforeAll, describe, test, type ExpectStatic } from "vitest";
import type { SessionWithKernels } from "../functions/core/model.ts";
import { newSession } from "../functions/core/sessions.ts";
import { parseSessionSpec } from "../functions/core/spec.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
let n = 0;
const newId = (label: string) => `repair-${label}-${Date.now().toString(36)}-${n++}`;
const statusEvents: { sessionId: string; to: string; message?: string }[] = [];

/** The repair waits 5 s after the stage was entered; the rest is margin for a busy machine. */
const REPAIR_AFTER_MS = 5_000;
const REPAIR_WAIT_MS = 60_000;
const TEST_TIMEOUT_MS = 120_000;

beforeAll(async () => {
  rt = await startTestRuntime({
    agents: 2,
    agentCapacity: { cpu: 2, memoryMiB: 2048 },
    repairAfterMs: REPAIR_AFTER_MS,
  });
  rt.runtime.bus.onEvent((e) => {
    if (e["detail-type"] === "Session Status Changed") {
      statusEvents.push(e.detail as { sessionId: string; to: string; message?: string });
    }
  });
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

const executionArn = (sessionId: string) =>
  `${rt.runtime.info.stateMachineArn.replace(":stateMachine:", ":execution:")}:${sessionId}`;

/** No terminal session holds a task token, and nothing of it holds capacity. */
async function expectSettled(s: SessionWithKernels, expect: ExpectStatic): Promise<void> {
  expect(s.session.stage.taskToken).toBeUndefined();
  expect(await rt.store.allocationsOf(s.session.id)).toEqual([]);
}

describe("a session without a live execution is repaired by the sweep", { timeout: TEST_TIMEOUT_MS }, () => {
  test.concurrent(
    "an execution stopped while the session runs: the session ends TERMINATED with the reason",
    async ({ expect }) => {
      const id = newId("aborted");
      await rt.submit({ sessionId: id, spec: { name: "aborted", command: ["/bin/sh", "-c", "sleep 300"] } });
      await rt.waitForStatus(id, "RUNNING", 60_000);
      // Given its execution is stopped (an operator in the console, a redeploy gone wrong)
      await rt.runtime.stepFunctions.stopExecution({ executionArn: executionArn(id), error: "Test.Stopped" });
      // Then the sweep ends the session
      const ended = await rt.waitForEnd(id, REPAIR_WAIT_MS);
      expect(ended.session.status).toBe("TERMINATED");
      const message = `its lifecycle execution ${id} is ABORTED (Test.Stopped) while the session was RUNNING: ended by the sweep's repair`;
      expect(ended.session.lastHistory).toMatchObject({
        handler: "Lifecycle",
        result: "CANCELLED",
        fromStatus: "RUNNING",
        toStatus: "TERMINATED",
        message,
      });
      await expectSettled(ended, expect);
      await expect
        .poll(() => statusEvents.filter((e) => e.sessionId === id && e.to === "TERMINATED"), {
          timeout: 10_000,
        })
        .toEqual([expect.objectContaining({ message })]);
    },
  );

  test.concurrent(
    "an execution that ended while the session waits: the session ends CANCELLED with the reason",
    async ({ expect }) => {
      const id = newId("failed");
      // A session no agent can place stays PENDING, waiting on its callback.
      await rt.submit({
        sessionId: id,
        spec: { name: "failed", nodeSelector: { pool: "nowhere" }, command: ["/bin/true"] },
      });
      await rt.waitFor(id, (s) => s.session.stage.taskToken !== undefined, "a PENDING token");
      // Given its execution ends while the session waits, without the session being told (an
      // operator stops it in the console, say).
      await rt.runtime.stepFunctions.stopExecution({
        executionArn: executionArn(id),
        error: "Operator.Stopped",
        cause: "stopped in the console",
      });
      await expect
        .poll(
          async () =>
            (await rt.runtime.stepFunctions.describeExecution({ executionArn: executionArn(id) })).status,
        )
        .toBe("ABORTED");
      // Then the sweep ends the session
      const ended = await rt.waitForEnd(id, REPAIR_WAIT_MS);
      expect(ended.session.status).toBe("CANCELLED");
      expect(ended.session.lastHistory).toMatchObject({
        handler: "Lifecycle",
        fromStatus: "PENDING",
        toStatus: "CANCELLED",
        message: `its lifecycle execution ${id} is ABORTED (Operator.Stopped: stopped in the console) while the session was PENDING: ended by the sweep's repair`,
      });
      expect(ended.kernels.map((k) => k.status)).toEqual(["CANCELLED"]);
      await expectSettled(ended, expect);
    },
  );

  test.concurrent(
    "a session whose start met an execution of its name that had already ended: ended with the reason",
    async ({ expect }) => {
      const id = newId("taken");
      // Given an execution named like the session that ran and ended before the session existed
      // (its StartExecution would meet ExecutionAlreadyExists, which the start takes for success)
      const spec = parseSessionSpec({ name: "taken", command: ["/bin/true"] });
      await rt.runtime.stepFunctions.startExecution({
        stateMachineArn: rt.runtime.info.stateMachineArn,
        name: id,
        input: JSON.stringify({ sessionId: id, timeouts: spec.timeouts }),
      });
      await expect
        .poll(
          async () =>
            (await rt.runtime.stepFunctions.describeExecution({ executionArn: executionArn(id) })).status,
        )
        .not.toBe("RUNNING");
      await rt.store.createSession(newSession(id, spec, Date.now() - 120_000));
      // Then the sweep ends the session: it has no execution to carry it
      const ended = await rt.waitForEnd(id, REPAIR_WAIT_MS);
      expect(ended.session.status).toBe("CANCELLED");
      expect(ended.session.lastHistory?.message).toMatch(
        new RegExp(
          `^its lifecycle execution ${id} is FAILED \\(.+\\) while the session was PENDING: ended by the sweep's repair$`,
        ),
      );
      await expectSettled(ended, expect);
    },
  );

  test.concurrent(
    "a session whose execution was never started: the sweep starts it and it runs",
    async ({ expect }) => {
      const id = newId("unstarted");
      // Given a session written as the coordinator writes it, whose StartExecution never happened
      const spec = parseSessionSpec({ name: "unstarted", command: ["/bin/sh", "-c", "exit 0"] });
      const created = await rt.store.createSession(newSession(id, spec, Date.now() - 120_000));
      expect(created.created).toBe(true);
      // Then the sweep starts its execution, and the session runs to its end
      const ended = await rt.waitForEnd(id, REPAIR_WAIT_MS);
      expect(ended.session.status).toBe("TERMINATED");
      expect(ended.kernels.map((k) => k.exitCode)).toEqual([0]);
      const history = await rt.store.listHistory(id);
      expect(history[0]).toMatchObject({ result: "SUBMITTED", fromStatus: "PENDING", toStatus: "PENDING" });
      // The session is TERMINATED as its last state is entered; the execution ends right after.
      await expect
        .poll(
          async () =>
            (await rt.runtime.stepFunctions.describeExecution({ executionArn: executionArn(id) })).status,
        )
        .toBe("SUCCEEDED");
      await expectSettled(ended, expect);
    },
  );
});
