/**
 * The ECS event mapping table, case by case. Fixtures in test/fixtures/ecs/ are the AWS
 * documentation's own samples (their sources in test/fixtures/ecs/README.md); the STOPPED cases
 * are the documented RUNNING sample with the fields a stopped task changes, since the
 * documentation shows no complete STOPPED event.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  ECS_LAST_STATUS_TABLE,
  ECS_CLIENT_TOKEN_MAX_LENGTH,
  ECS_STARTED_BY_MAX_LENGTH,
  ECS_STOP_CODE_TABLE,
  UNKNOWN_STOP_CODE,
  ecsClientToken,
  ecsStartedBy,
  ecsStopReason,
  ecsTaskIdentity,
  identityOfTask,
  kernelReportOfTask,
  parseEcsStopReason,
  parseEcsTaskStateChangeDetail,
  type EcsKernelIdentity,
  type EcsTaskReport,
  type EcsTaskStateChangeDetail,
} from "../../functions/core/ecs-task-events.ts";
import { kernelReportPatch } from "../../functions/core/kernel-reports.ts";
import { AttemptOutcome, KernelStatus } from "../../functions/core/status.ts";
import { kernel } from "./fixtures.ts";

const FIXTURES = join(import.meta.dirname, "../fixtures/ecs");
function fixture(name: string): { readonly time?: string; readonly detail: unknown } {
  return JSON.parse(readFileSync(join(FIXTURES, name), "utf8")) as { time?: string; detail: unknown };
}

function parsed(detail: unknown): EcsTaskStateChangeDetail {
  const result = parseEcsTaskStateChangeDetail(detail);
  if (!result.ok) throw new Error(`fixture does not parse: ${JSON.stringify(result.issues)}`);
  return result.detail;
}

const EVENT_TIME_MS = 1_700_000_000_000;
const RUNNING_SAMPLE = fixture("task-state-change-running.json");
const SPOT_SAMPLE = fixture("spot-termination-notice.json");

/** The documented RUNNING sample, changed as the task's later (or earlier) events change it. */
function sample(
  changes: Record<string, unknown>,
  container: Record<string, unknown> = {},
): EcsTaskStateChangeDetail {
  const detail = structuredClone(RUNNING_SAMPLE.detail) as Record<string, unknown> & {
    containers: Record<string, unknown>[];
  };
  detail.containers = detail.containers.map((c) => ({ ...c, ...container }));
  return parsed({ ...detail, ...changes });
}

const STOPPED = {
  lastStatus: "STOPPED",
  desiredStatus: "STOPPED",
  stoppingAt: "2020-01-23T18:10:00.000Z",
  stoppedAt: "2020-01-23T18:10:30.000Z",
};
const STOPPED_AT_MS = Date.parse(STOPPED.stoppedAt);
const STARTED_AT_MS = Date.parse("2020-01-23T17:57:58.103Z");

describe("the real samples from the AWS documentation", () => {
  test("a Fargate task RUNNING: the kernel runs since the task's startedAt", () => {
    expect(kernelReportOfTask(parsed(RUNNING_SAMPLE.detail), { eventTimeMs: EVENT_TIME_MS })).toEqual({
      kind: "report",
      report: { status: "RUNNING", atMs: STARTED_AT_MS },
      row: "RUNNING",
    });
  });

  test("Fargate Spot's termination notice arrives while the task still RUNS: the kernel runs until STOPPED", () => {
    const detail = parsed(SPOT_SAMPLE.detail);
    expect([detail.lastStatus, detail.desiredStatus, detail.stopCode]).toEqual([
      "RUNNING",
      "STOPPED",
      "TerminationNotice",
    ]);
    // The snippet has no startedAt: the envelope's time dates the report.
    expect(kernelReportOfTask(detail, { eventTimeMs: EVENT_TIME_MS })).toEqual({
      kind: "report",
      report: { status: "RUNNING", atMs: EVENT_TIME_MS },
      row: "RUNNING",
    });
  });

  test("neither sample was started by Cairn, and each says so", () => {
    for (const { detail } of [RUNNING_SAMPLE, SPOT_SAMPLE]) {
      expect(identityOfTask(parsed(detail))).toEqual({
        ok: false,
        reason: "not started by Cairn: startedBy is absent, not cairn/…",
      });
    }
  });

  test("fields Cairn does not read (attachments, connectivity, platformVersion, …) are kept, not refused", () => {
    const detail = parsed(RUNNING_SAMPLE.detail) as Record<string, unknown>;
    expect(detail["platformVersion"]).toBe("1.3.0");
    expect(detail["attachments"]).toHaveLength(1);
  });
});

describe("ECS_LAST_STATUS_TABLE: one case per row", () => {
  const cases: [status: keyof typeof ECS_LAST_STATUS_TABLE, expected: EcsTaskReport][] = [
    [
      "PROVISIONING",
      {
        kind: "none",
        kernelStatus: "PREPARING",
        reason: "ECS is attaching the task's network interface",
        row: "PROVISIONING",
      },
    ],
    [
      "PENDING",
      {
        kind: "none",
        kernelStatus: "PREPARING",
        reason: "the task waits for Fargate capacity or its image",
        row: "PENDING",
      },
    ],
    [
      "ACTIVATING",
      {
        kind: "none",
        kernelStatus: "PREPARING",
        reason: "the containers are being started",
        row: "ACTIVATING",
      },
    ],
    ["RUNNING", { kind: "report", report: { status: "RUNNING", atMs: STARTED_AT_MS }, row: "RUNNING" }],
    [
      "DEACTIVATING",
      { kind: "none", reason: "the task is stopping: its end comes with STOPPED", row: "DEACTIVATING" },
    ],
    [
      "STOPPING",
      { kind: "none", reason: "the task is stopping: its end comes with STOPPED", row: "STOPPING" },
    ],
    [
      "DEPROVISIONING",
      { kind: "none", reason: "the task is stopping: its end comes with STOPPED", row: "DEPROVISIONING" },
    ],
    [
      "STOPPED",
      {
        kind: "report",
        report: { status: "TERMINATED", exitCode: 0, atMs: STOPPED_AT_MS },
        row: "STOPPED EssentialContainerExited",
      },
    ],
  ];

  test("every row has its case", () => {
    expect(cases.map(([status]) => status)).toEqual(Object.keys(ECS_LAST_STATUS_TABLE));
  });

  test.each(cases)("%s", (lastStatus, expected) => {
    const changes =
      lastStatus === "STOPPED"
        ? {
            ...STOPPED,
            stopCode: "EssentialContainerExited",
            stoppedReason: "Essential container in task exited",
          }
        : { lastStatus };
    const detail = sample(changes, lastStatus === "STOPPED" ? { lastStatus: "STOPPED", exitCode: 0 } : {});
    expect(kernelReportOfTask(detail, { eventTimeMs: EVENT_TIME_MS })).toEqual(expected);
  });

  test("a lastStatus newer than the table reports nothing, and says why", () => {
    expect(kernelReportOfTask(sample({ lastStatus: "HIBERNATING" }), { eventTimeMs: EVENT_TIME_MS })).toEqual(
      {
        kind: "none",
        reason: "lastStatus HIBERNATING is not one Cairn knows",
        row: "HIBERNATING",
      },
    );
  });
});

describe("ECS_STOP_CODE_TABLE: one case per row, and how the coordinator then judges the kernel", () => {
  interface StopCase {
    readonly stopCode: string | undefined;
    readonly stoppedReason?: string;
    readonly container?: Record<string, unknown>;
    readonly expected: EcsTaskReport;
    /** The kernel as kernelReportPatch leaves it, from CREATING (or RUNNING), cancelled or not. */
    readonly from:
      typeof KernelStatus.CREATING | typeof KernelStatus.RUNNING | typeof KernelStatus.TERMINATING;
    readonly cancelled?: boolean;
    readonly outcome: AttemptOutcome | undefined;
    readonly kernelStatus: KernelStatus;
  }
  const cases: [row: string, StopCase][] = [
    [
      "TaskFailedToStart",
      {
        stopCode: "TaskFailedToStart",
        stoppedReason: "CannotPullContainerError: pull image manifest has been retried 5 time(s): not found",
        container: { lastStatus: "STOPPED" },
        expected: {
          kind: "report",
          report: {
            status: "ERROR",
            message: "CannotPullContainerError: pull image manifest has been retried 5 time(s): not found",
            atMs: STOPPED_AT_MS,
          },
          row: "STOPPED TaskFailedToStart",
        },
        from: KernelStatus.CREATING,
        outcome: AttemptOutcome.FAILED,
        kernelStatus: KernelStatus.ERROR,
      },
    ],
    [
      "EssentialContainerExited",
      {
        stopCode: "EssentialContainerExited",
        stoppedReason: "Essential container in task exited",
        container: { lastStatus: "STOPPED", exitCode: 3 },
        expected: {
          kind: "report",
          report: { status: "TERMINATED", exitCode: 3, atMs: STOPPED_AT_MS },
          row: "STOPPED EssentialContainerExited",
        },
        from: KernelStatus.RUNNING,
        outcome: AttemptOutcome.FAILED,
        kernelStatus: KernelStatus.TERMINATED,
      },
    ],
    [
      "UserInitiated",
      {
        stopCode: "UserInitiated",
        stoppedReason: ecsStopReason({ condition: "Preempted", reason: "preempted for session urgent-1" }),
        container: { lastStatus: "STOPPED", exitCode: 143 },
        expected: {
          kind: "report",
          report: {
            status: "TERMINATED",
            exitCode: 143,
            condition: "Preempted",
            message: "preempted for session urgent-1",
            atMs: STOPPED_AT_MS,
          },
          row: "STOPPED UserInitiated",
        },
        from: KernelStatus.TERMINATING,
        outcome: AttemptOutcome.PREEMPTED,
        kernelStatus: KernelStatus.TERMINATED,
      },
    ],
    [
      "SpotInterruption",
      {
        stopCode: "SpotInterruption",
        stoppedReason: "Your Spot Task was interrupted.",
        container: { lastStatus: "STOPPED", exitCode: 143 },
        expected: {
          kind: "report",
          report: {
            status: "TERMINATED",
            exitCode: 143,
            condition: "Preempted",
            message: "Your Spot Task was interrupted.",
            atMs: STOPPED_AT_MS,
          },
          row: "STOPPED SpotInterruption",
        },
        from: KernelStatus.RUNNING,
        outcome: AttemptOutcome.PREEMPTED,
        kernelStatus: KernelStatus.TERMINATED,
      },
    ],
    [
      "TerminationNotice",
      {
        stopCode: "TerminationNotice",
        stoppedReason: "Your Spot Task was interrupted.",
        container: { lastStatus: "STOPPED", exitCode: 0 },
        expected: {
          kind: "report",
          report: {
            status: "TERMINATED",
            exitCode: 0,
            condition: "Preempted",
            message: "Your Spot Task was interrupted.",
            atMs: STOPPED_AT_MS,
          },
          row: "STOPPED TerminationNotice",
        },
        // A command that exits 0 on SIGTERM was still interrupted: the preemption decides.
        from: KernelStatus.RUNNING,
        outcome: AttemptOutcome.PREEMPTED,
        kernelStatus: KernelStatus.TERMINATED,
      },
    ],
    [
      "ServiceSchedulerInitiated",
      {
        stopCode: "ServiceSchedulerInitiated",
        stoppedReason: "Scaling activity initiated by (deployment ecs-svc/1234)",
        container: { lastStatus: "STOPPED", exitCode: 143 },
        expected: {
          kind: "report",
          report: {
            status: "TERMINATED",
            exitCode: 143,
            condition: "Evicted",
            message: "Scaling activity initiated by (deployment ecs-svc/1234)",
            atMs: STOPPED_AT_MS,
          },
          row: "STOPPED ServiceSchedulerInitiated",
        },
        from: KernelStatus.RUNNING,
        outcome: AttemptOutcome.WORKER_FAILED,
        kernelStatus: KernelStatus.TERMINATED,
      },
    ],
    [
      "InfrastructureHealth",
      {
        stopCode: "InfrastructureHealth",
        stoppedReason: "Task stopped due to infrastructure health",
        container: { lastStatus: "STOPPED", exitCode: 137 },
        expected: {
          kind: "report",
          report: {
            status: "TERMINATED",
            exitCode: 137,
            condition: "Evicted",
            message: "Task stopped due to infrastructure health",
            atMs: STOPPED_AT_MS,
          },
          row: "STOPPED InfrastructureHealth",
        },
        from: KernelStatus.RUNNING,
        outcome: AttemptOutcome.WORKER_FAILED,
        kernelStatus: KernelStatus.TERMINATED,
      },
    ],
    [
      UNKNOWN_STOP_CODE,
      {
        stopCode: undefined,
        stoppedReason: "Essential container in task exited",
        container: { lastStatus: "STOPPED", exitCode: 0 },
        expected: {
          kind: "report",
          report: {
            status: "TERMINATED",
            exitCode: 0,
            message: "Essential container in task exited",
            atMs: STOPPED_AT_MS,
          },
          row: `STOPPED ${UNKNOWN_STOP_CODE}`,
        },
        from: KernelStatus.RUNNING,
        outcome: AttemptOutcome.SUCCEEDED,
        kernelStatus: KernelStatus.TERMINATED,
      },
    ],
  ];

  test("every row has its case", () => {
    expect(cases.map(([row]) => row)).toEqual(Object.keys(ECS_STOP_CODE_TABLE));
  });

  test.each(cases)("%s", (_row, c) => {
    const detail = sample(
      {
        ...STOPPED,
        ...(c.stopCode !== undefined ? { stopCode: c.stopCode } : {}),
        stoppedReason: c.stoppedReason,
      },
      c.container,
    );
    const mapped = kernelReportOfTask(detail, { eventTimeMs: EVENT_TIME_MS });
    expect(mapped).toEqual(c.expected);
    if (mapped.kind !== "report") return;
    const patch = kernelReportPatch(kernel("s-1", 0, c.from), mapped.report, {
      cancelled: c.cancelled ?? false,
    });
    expect([patch?.status, patch?.outcome]).toEqual([c.kernelStatus, c.outcome]);
  });
});

describe("the details the stop-code rows read", () => {
  const stopped = (stopCode: string, stoppedReason: string | undefined, container: Record<string, unknown>) =>
    kernelReportOfTask(sample({ ...STOPPED, stopCode, stoppedReason }, container), {
      eventTimeMs: EVENT_TIME_MS,
    });

  test("an essential container that exits 0 succeeded", () => {
    const mapped = stopped("EssentialContainerExited", "Essential container in task exited", { exitCode: 0 });
    expect(
      mapped.kind === "report" &&
        kernelReportPatch(kernel("s", 0, "RUNNING"), mapped.report, { cancelled: false })?.outcome,
    ).toBe(AttemptOutcome.SUCCEEDED);
  });

  test("a container killed for its memory is OOMKilled, with the container's reason", () => {
    expect(
      stopped("EssentialContainerExited", "Essential container in task exited", {
        exitCode: 137,
        reason: "OutOfMemoryError: Container killed due to memory usage",
      }),
    ).toEqual({
      kind: "report",
      report: {
        status: "TERMINATED",
        exitCode: 137,
        condition: "OOMKilled",
        message: "OutOfMemoryError: Container killed due to memory usage",
        atMs: STOPPED_AT_MS,
      },
      row: "STOPPED EssentialContainerExited",
    });
  });

  test("a cancel is StopTask without a condition: the cancelled kernel is KILLED, as an agent's", () => {
    const mapped = stopped("UserInitiated", ecsStopReason({ reason: "cancelled by alice" }), {
      exitCode: 143,
    });
    expect(mapped).toEqual({
      kind: "report",
      report: { status: "TERMINATED", exitCode: 143, message: "cancelled by alice", atMs: STOPPED_AT_MS },
      row: "STOPPED UserInitiated",
    });
    const patch =
      mapped.kind === "report"
        ? kernelReportPatch(kernel("s", 0, "TERMINATING"), mapped.report, { cancelled: true })
        : undefined;
    expect(patch?.outcome).toBe(AttemptOutcome.KILLED);
  });

  test("StopTask by someone else than Cairn keeps ECS's reason and no condition", () => {
    expect(stopped("UserInitiated", "Task stopped by user", {})).toEqual({
      kind: "report",
      report: { status: "TERMINATED", message: "Task stopped by user", atMs: STOPPED_AT_MS },
      row: "STOPPED UserInitiated",
    });
  });

  test("a task failed to start reports no exit code even if a container has one", () => {
    const mapped = stopped("TaskFailedToStart", "ResourceInitializationError: unable to pull secrets", {
      exitCode: 1,
    });
    expect(mapped.kind === "report" && mapped.report.exitCode).toBeUndefined();
  });

  test("a task that could not start because the cluster failed is retried; one whose command is not in the image is not", () => {
    // HPC Pack retries a task that "fails to start because of a cluster failure"; a command the
    // image lacks fails every start the same way (retry/start-failures.ts, permanent-failures.ts).
    const pull = stopped(
      "TaskFailedToStart",
      "CannotPullContainerError: pull image manifest has been retried 5 time(s)",
      {},
    );
    expect(pull.kind === "report" && pull.report.failureCategory).toBeUndefined();
    const missing = stopped(
      "TaskFailedToStart",
      'CannotStartContainerError: ResourceInitializationError: failed to create new container runtime task: exec: "train": executable file not found in $PATH: unknown',
      {},
    );
    expect(missing.kind === "report" && missing.report).toMatchObject({
      status: "ERROR",
      failureCategory: "executable_not_found",
    });
  });

  test("the container named kernel is the kernel's, among several", () => {
    const detail = sample({
      ...STOPPED,
      stopCode: "EssentialContainerExited",
      containers: [
        { name: "log-router", exitCode: 0 },
        { name: "kernel", exitCode: 2 },
      ],
    });
    const mapped = kernelReportOfTask(detail, { eventTimeMs: EVENT_TIME_MS });
    expect(mapped.kind === "report" && mapped.report.exitCode).toBe(2);
  });

  test("without stoppedAt the report is dated by the next time the event has, then the envelope's", () => {
    const { stoppedAt: _, ...withoutStoppedAt } = STOPPED;
    const dated = kernelReportOfTask(sample({ ...withoutStoppedAt, stopCode: "SpotInterruption" }), {
      eventTimeMs: EVENT_TIME_MS,
    });
    expect(dated.kind === "report" && dated.report.atMs).toBe(Date.parse(STOPPED.stoppingAt));
    const bare = parsed({ clusterArn: "c", taskArn: "t", lastStatus: "STOPPED", desiredStatus: "STOPPED" });
    const undated = kernelReportOfTask(bare, { eventTimeMs: EVENT_TIME_MS });
    expect(undated.kind === "report" && undated.report.atMs).toBe(EVENT_TIME_MS);
  });
});

describe("stop reasons carry the stop command's condition", () => {
  test.each([
    [
      { condition: "Preempted", reason: "for urgent-1" },
      "cairn:Preempted: for urgent-1",
      { condition: "Preempted", reason: "for urgent-1" },
    ],
    [
      { condition: "DeadlineExceeded" },
      "cairn:DeadlineExceeded: stopped by Cairn",
      { condition: "DeadlineExceeded", reason: "stopped by Cairn" },
    ],
    [{ reason: "cancelled" }, "cancelled", { reason: "cancelled" }],
    // The control plane's own verdicts are not a stop command's to carry.
    [{ condition: "AgentLost", reason: "x" }, "x", { reason: "x" }],
  ] as const)("%j → %s", (stop, written, read) => {
    expect(ecsStopReason(stop)).toBe(written);
    expect(parseEcsStopReason(written)).toEqual(read);
  });

  test("a reason that only looks like Cairn's is read as it is", () => {
    expect(parseEcsStopReason("cairn:Bogus: x")).toEqual({ reason: "cairn:Bogus: x" });
  });
});

describe("a task's identity", () => {
  const KERNEL: EcsKernelIdentity = { sessionId: "train-42", kernelIndex: 3, runIndex: 1, placement: 2 };

  /** The task's events as RunTask with the identity would make them (the kernel container's override). */
  function taskOf(identity: EcsKernelIdentity, withTags = false): EcsTaskStateChangeDetail {
    const written = ecsTaskIdentity(identity);
    return sample({
      startedBy: written.startedBy,
      overrides: {
        containerOverrides: [
          { name: "kernel", environment: [{ name: "SEED", value: "1" }, ...written.environment] },
        ],
      },
      ...(withTags ? { tags: written.tags } : {}),
    });
  }

  test("what RunTask is given", () => {
    expect(ecsTaskIdentity(KERNEL)).toEqual({
      startedBy: "cairn/train-42",
      tags: [
        { key: "cairn:session-id", value: "train-42" },
        { key: "cairn:kernel-index", value: "3" },
        { key: "cairn:run-index", value: "1" },
        { key: "cairn:placement", value: "2" },
      ],
      environment: [
        { name: "CAIRN_SESSION_ID", value: "train-42" },
        { name: "CAIRN_KERNEL_INDEX", value: "3" },
        { name: "CAIRN_RUN_INDEX", value: "1" },
        { name: "CAIRN_PLACEMENT", value: "2" },
      ],
    });
  });

  test.each([
    ["a short id", KERNEL],
    ["the longest id (63 characters)", { ...KERNEL, sessionId: `a${"-b".repeat(31)}` }],
    ["no placement", { sessionId: "s-0", kernelIndex: 0, runIndex: 0 }],
  ])("read back from the task's events: %s", (_label, identity) => {
    expect(identityOfTask(taskOf(identity))).toEqual({ ok: true, identity });
  });

  test("the tags are a fallback when the override carries no identity", () => {
    const detail = taskOf(KERNEL, true);
    const withoutEnv = { ...detail, overrides: { containerOverrides: [{ name: "kernel" }] } };
    expect(identityOfTask(withoutEnv)).toEqual({ ok: true, identity: KERNEL });
  });

  test("RunTask's client token names session, run, placement, try and kernel within ECS's 64 characters", () => {
    const base = { sessionId: "train-42", runIndex: 3, placement: 1, startTry: 2, kernelIndex: 7 };
    expect(ecsClientToken(base)).toBe("cairn/train-42/r3/p1/t2/k7");
    const long = ["x".repeat(63), `${"x".repeat(62)}a`, `${"x".repeat(62)}b`];
    const tokens = long.map((sessionId) =>
      ecsClientToken({ ...base, sessionId, runIndex: 1234, kernelIndex: 511 }),
    );
    for (const token of tokens) {
      expect(token.length).toBeLessThanOrEqual(ECS_CLIENT_TOKEN_MAX_LENGTH);
      // ECS's alphabet: ASCII 33 to 126.
      expect(token).toMatch(/^[\x21-\x7e]+$/);
      expect(token.endsWith("/r1234/p1/t2/k511")).toBe(true);
    }
    expect(new Set(tokens).size).toBe(long.length);
    // Every part tells two tokens apart.
    const variants = [
      base,
      { ...base, runIndex: 4 },
      { ...base, placement: 2 },
      { ...base, startTry: 3 },
      { ...base, kernelIndex: 8 },
    ];
    expect(new Set(variants.map(ecsClientToken)).size).toBe(variants.length);
  });

  test("startedBy stays within ECS's 36 characters and alphabet, and long ids stay apart", () => {
    const ids = [
      "train-42",
      "x".repeat(30),
      "x".repeat(31),
      `${"x".repeat(40)}-a`,
      `${"x".repeat(40)}-b`,
      "z".repeat(63),
    ];
    const startedBy = ids.map(ecsStartedBy);
    for (const value of startedBy) {
      expect(value.length).toBeLessThanOrEqual(ECS_STARTED_BY_MAX_LENGTH);
      expect(value).toMatch(/^[A-Za-z0-9/_-]+$/);
    }
    expect(startedBy.slice(0, 2)).toEqual(["cairn/train-42", `cairn/${"x".repeat(30)}`]);
    expect(new Set(startedBy).size).toBe(ids.length);
  });

  test.each([
    [
      "another's task",
      { startedBy: "ecs-svc/9223370545345641169" },
      'not started by Cairn: startedBy is "ecs-svc/9223370545345641169", not cairn/…',
    ],
    [
      "no identity in the override or tags",
      { startedBy: "cairn/train-42" },
      "the task names no sessionId: neither CAIRN_SESSION_ID in the kernel container's environment nor the tag cairn:session-id",
    ],
    [
      "a kernel index that is no index",
      {
        startedBy: "cairn/train-42",
        overrides: {
          containerOverrides: [
            {
              name: "kernel",
              environment: [
                { name: "CAIRN_SESSION_ID", value: "train-42" },
                { name: "CAIRN_KERNEL_INDEX", value: "x" },
                { name: "CAIRN_RUN_INDEX", value: "0" },
              ],
            },
          ],
        },
      },
      'CAIRN_KERNEL_INDEX "x" is not a valid kernelIndex',
    ],
    [
      "a startedBy of another session",
      {
        startedBy: "cairn/other",
        overrides: {
          containerOverrides: [{ name: "kernel", environment: [...ecsTaskIdentity(KERNEL).environment] }],
        },
      },
      `startedBy "cairn/other" is not session train-42's (cairn/train-42)`,
    ],
  ])("refused: %s", (_label, changes, reason) => {
    expect(identityOfTask(sample(changes))).toEqual({ ok: false, reason });
  });
});

describe("parsing the detail at the edge", () => {
  test("every problem in the fields Cairn reads is named by its path", () => {
    expect(
      parseEcsTaskStateChangeDetail({
        clusterArn: 1,
        lastStatus: "STOPPED",
        desiredStatus: "STOPPED",
        containers: [{ name: "kernel", exitCode: "1" }],
        stoppedAt: "yesterday",
      }),
    ).toEqual({
      ok: false,
      issues: [
        { path: "clusterArn", message: "expected a string, got a number" },
        { path: "taskArn", message: "required" },
        { path: "containers[0].exitCode", message: "expected a number, got a string" },
        { path: "stoppedAt", message: "must be an ISO 8601 time" },
      ],
    });
  });

  test("a container without an exit code yet (null) is accepted", () => {
    const detail = sample({}, { exitCode: null });
    expect(detail.containers?.[0]?.exitCode).toBeNull();
  });
});
