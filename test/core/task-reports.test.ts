/**
 * ECS's task events as kernel reports in the coordinator's step (core/coordinator/task-reports.ts):
 * an envelope parsed, its cluster checked, its identity read, its report made; and the checks
 * a task's report passes against the session as read (on Fargate, this run and placement, this
 * task), case by case, with the reports step applying an accepted one as an agent's.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { step } from "../../functions/core/coordinator/step.ts";
import {
  parseTaskEvent,
  taskReportRefusal,
  type TaskStateReport,
} from "../../functions/core/coordinator/task-reports.ts";
import { ecsTaskIdentity } from "../../functions/core/ecs-task-events.ts";
import type { SessionWithKernels } from "../../functions/core/model.ts";
import { KernelStatus, SessionStatus } from "../../functions/core/status.ts";
import { kernel, NOW_MS, session } from "./fixtures.ts";

const RUNNING_SAMPLE = JSON.parse(
  readFileSync(join(import.meta.dirname, "../fixtures/ecs/task-state-change-running.json"), "utf8"),
) as { detail: Record<string, unknown> & { clusterArn: string; taskArn: string } };
const CLUSTER = RUNNING_SAMPLE.detail.clusterArn;
const TASK = RUNNING_SAMPLE.detail.taskArn;
const TIME = "2026-01-01T00:00:00Z";

/** The sample as a task Cairn started for kernel 1 of run 2, placement 1 of ses-1. */
function envelope(detail: Record<string, unknown> = {}, over: Record<string, unknown> = {}) {
  const identity = ecsTaskIdentity({ sessionId: "ses-1", kernelIndex: 1, runIndex: 2, placement: 1 });
  return {
    version: "0",
    id: "ev-ecs",
    "detail-type": "ECS Task State Change",
    source: "aws.ecs",
    account: "111122223333",
    time: TIME,
    region: "us-west-2",
    resources: [TASK],
    detail: {
      ...RUNNING_SAMPLE.detail,
      startedBy: identity.startedBy,
      overrides: { containerOverrides: [{ name: "kernel", environment: identity.environment }] },
      ...detail,
    },
    ...over,
  };
}

const REPORT: TaskStateReport = {
  eventId: "ev-ecs",
  detailType: "ECS Task State Change",
  taskArn: TASK,
  sessionId: "ses-1",
  kernelIndex: 1,
  runIndex: 2,
  placement: 1,
  report: { status: "RUNNING", atMs: Date.parse("2020-01-23T17:57:58.103Z") },
};

describe("parseTaskEvent", () => {
  test("a task event of Cairn's cluster is the kernel's report", () => {
    expect(parseTaskEvent(envelope(), CLUSTER)).toEqual({ kind: "task-report", report: REPORT });
  });

  test.each([
    // [case, envelope, the rejection]
    [
      "no Fargate executor",
      envelope(),
      undefined,
      "source: aws.ecs events report Fargate kernels, and this stack has no Fargate executor",
    ],
    [
      "another cluster",
      envelope({ clusterArn: "arn:aws:ecs:us-west-2:111122223333:cluster/other" }),
      CLUSTER,
      `detail.clusterArn: arn:aws:ecs:us-west-2:111122223333:cluster/other is not Cairn's Fargate cluster (${CLUSTER})`,
    ],
    [
      "a bad detail",
      envelope({ lastStatus: 7 }),
      CLUSTER,
      "detail.lastStatus: expected a string, got a number",
    ],
    [
      "a task Cairn did not start",
      envelope({ startedBy: "someone-else" }),
      CLUSTER,
      `detail: task ${TASK} is not a Cairn kernel's: not started by Cairn: startedBy is "someone-else", not cairn/…`,
    ],
    ["no time", envelope({}, { time: "yesterday" }), CLUSTER, "time: must be an ISO 8601 time"],
  ] as const)("%s is rejected, naming the field", (_, env, cluster, message) => {
    expect(parseTaskEvent(env, cluster)).toEqual({
      kind: "invalid",
      eventId: "ev-ecs",
      detailType: "ECS Task State Change",
      message,
    });
  });

  test("a state that reports nothing is ignored, not rejected; other events are not task events", () => {
    expect(parseTaskEvent(envelope({ lastStatus: "PROVISIONING" }), CLUSTER)).toEqual({ kind: "ignored" });
    expect(parseTaskEvent(envelope({}, { source: "cairn.agent" }), CLUSTER)).toBeUndefined();
    expect(parseTaskEvent("nothing", CLUSTER)).toBeUndefined();
  });
});

function fargateSession(
  over: { taskArn?: string; agentId?: string; runIndex?: number; kernelStatus?: KernelStatus } = {},
): SessionWithKernels {
  const agentId = over.agentId ?? "fargate_default";
  return {
    // Placement 1: it went back to PENDING once within the run.
    session: session("ses-1", SessionStatus.CREATING, {
      runIndex: over.runIndex ?? 2,
      lastHistory: {
        sessionId: "ses-1",
        seq: 3,
        handler: "ScheduleNewSessions",
        result: "SUCCESS",
        fromStatus: SessionStatus.PENDING,
        toStatus: SessionStatus.SCHEDULED,
        count: 1,
        firstAtMs: NOW_MS,
        lastAtMs: NOW_MS,
      },
      retry: { totalRetries: 0, ruleRetries: {}, failureCount: 0, preemptionCount: 0, freeReturns: 1 },
    }),
    kernels: [0, 1].map((i) =>
      kernel("ses-1", i, over.kernelStatus ?? KernelStatus.CREATING, {
        agentId,
        ...(over.taskArn !== undefined ? { taskArn: over.taskArn } : {}),
      }),
    ),
  };
}

const STOPPED: TaskStateReport = {
  ...REPORT,
  report: { status: "TERMINATED", exitCode: 143, message: "rolled back", atMs: NOW_MS },
};

describe("taskReportRefusal", () => {
  test.each([
    // [case, session, report, refusal]
    ["the kernel's task", fargateSession({ taskArn: TASK }), REPORT, undefined],
    ["before the start recorded the task", fargateSession(), REPORT, undefined],
    [
      "a late event of an earlier task",
      fargateSession({ taskArn: "arn:other" }),
      REPORT,
      `detail.taskArn: kernel 1 of session ses-1 runs task arn:other, not ${TASK} (a late event of an earlier task)`,
    ],
    [
      "a kernel on an agent",
      fargateSession({ agentId: "agent-1" }),
      REPORT,
      `detail.taskArn: kernel 1 of session ses-1 is placed on agent agent-1, not on Fargate: task ${TASK} does not run it`,
    ],
    [
      "an ended run",
      fargateSession({ runIndex: 3 }),
      REPORT,
      "detail.overrides: CAIRN_RUN_INDEX: run 2 of session ses-1 has ended (the session is on run 3)",
    ],
    [
      "an ended placement",
      fargateSession(),
      { ...REPORT, placement: 0 },
      "detail.overrides: CAIRN_PLACEMENT: placement 0 of run 2 of session ses-1 has ended (the session is on placement 1)",
    ],
    [
      "no such kernel",
      fargateSession(),
      { ...REPORT, kernelIndex: 5 },
      "detail.overrides: CAIRN_KERNEL_INDEX: session ses-1 has no kernel 5",
    ],
    [
      "the end of a task a failed gang start stopped",
      fargateSession({ kernelStatus: KernelStatus.PREPARED }),
      STOPPED,
      `detail.taskArn: kernel 1 of session ses-1 is PREPARED and has no task: task ${TASK} was stopped before it was the kernel's (a gang that could not start)`,
    ],
    ["the end of a task started but not yet recorded", fargateSession(), STOPPED, undefined],
    [
      "a task RUNNING before its kernel is CREATING",
      fargateSession({ kernelStatus: KernelStatus.PREPARED }),
      REPORT,
      undefined,
    ],
  ] as const)("%s", (_, s, report, refusal) => {
    expect(taskReportRefusal(report, s)).toBe(refusal);
  });

  test("the reports step applies an accepted task report as an agent's, and refuses the rest", () => {
    const { outcomes, effect } = step({
      kind: "reports",
      sessionId: "ses-1",
      session: fargateSession({ taskArn: TASK }),
      reports: [{ task: REPORT }, { task: { ...REPORT, taskArn: "arn:old", eventId: "ev-old" } }],
      nowMs: NOW_MS,
    });
    expect(outcomes).toEqual([
      undefined,
      {
        eventId: "ev-old",
        detailType: "ECS Task State Change",
        reason: `detail.taskArn: kernel 1 of session ses-1 runs task ${TASK}, not arn:old (a late event of an earlier task)`,
      },
    ]);
    expect(effect).toMatchObject({
      kind: "patch",
      patches: [{ index: 1, status: "RUNNING", startedAtMs: REPORT.report.atMs }],
    });
  });
});
