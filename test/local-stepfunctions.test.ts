/**
 * The local Step Functions service through the real `@aws-sdk/client-sfn` client and the
 * local AWS JSON 1.0 endpoint, on test/fixtures/sfn-approval-flow.asl.json: callbacks by
 * task token, TimeoutSecondsPath read from the state input, heartbeats, Catch by error name,
 * idempotent starts, closed tokens, stop, and the history AWS would write.
 */
import { readFileSync } from "node:fs";
import {
  DescribeExecutionCommand,
  DescribeStateMachineCommand,
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  GetExecutionHistoryCommand,
  InvalidExecutionInput,
  InvalidToken,
  ListExecutionsCommand,
  ListStateMachinesCommand,
  SendTaskFailureCommand,
  SendTaskHeartbeatCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
  StateMachineDoesNotExist,
  StopExecutionCommand,
  TaskTimedOut,
  type DescribeExecutionOutput,
  type HistoryEvent,
} from "@aws-sdk/client-sfn";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  LocalStepFunctions,
  startStepFunctionsServer,
  substituteDefinition,
  type JsonValue,
  type RunningStepFunctionsServer,
} from "../local/stepfunctions/index.ts";

interface Notification {
  readonly jobId: string;
  readonly stage: string;
  readonly taskToken: string;
  readonly executionName?: string;
}

class ConflictError extends Error {
  override readonly name = "ConflictError";
}

const notifications: Notification[] = [];
const handlers = {
  "approval-check": (payload: JsonValue) => {
    const { mode } = payload as { mode: string };
    if (mode === "conflict") throw new ConflictError("job is already being approved elsewhere");
    return { ok: true };
  },
  "approval-notify": (payload: JsonValue) => {
    notifications.push(payload as unknown as Notification);
    return { notified: true };
  },
};

const definition = substituteDefinition(readFileSync("test/fixtures/sfn-approval-flow.asl.json", "utf8"), {
  CheckFunctionArn: "arn:aws:lambda:local:000000000000:function:approval-check",
  NotifyFunctionArn: "approval-notify",
});

let service: LocalStepFunctions;
let server: RunningStepFunctionsServer;
let sfn: SFNClient;
let stateMachineArn: string;

beforeAll(async () => {
  service = new LocalStepFunctions(handlers);
  ({ stateMachineArn } = await service.createStateMachine({ name: "approval-flow", definition }));
  server = await startStepFunctionsServer(service);
  sfn = new SFNClient({
    endpoint: server.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
});

afterAll(async () => {
  sfn.destroy();
  await server.close();
  await service.close();
});

let jobCounter = 0;
function newJobId(label: string): string {
  return `${label}-${++jobCounter}-${Date.now()}`;
}

function jobInput(
  jobId: string,
  overrides: { mode?: string; approval?: number; heartbeat?: number } = {},
): string {
  return JSON.stringify({
    jobId,
    mode: overrides.mode ?? "normal",
    timeouts: { approval: overrides.approval ?? 30, heartbeat: overrides.heartbeat ?? 30 },
  });
}

async function start(jobId: string, input = jobInput(jobId)): Promise<string> {
  const out = await sfn.send(new StartExecutionCommand({ stateMachineArn, name: jobId, input }));
  return out.executionArn!;
}

async function notification(jobId: string, stage: string, timeoutMs = 5_000): Promise<Notification> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = notifications.find((n) => n.jobId === jobId && n.stage === stage);
    if (found) return found;
    if (Date.now() > deadline)
      throw new Error(`no ${stage} notification for ${jobId} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function finished(executionArn: string, timeoutMs = 10_000): Promise<DescribeExecutionOutput> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const out = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    if (out.status !== "RUNNING") return out;
    if (Date.now() > deadline) throw new Error(`${executionArn} still RUNNING after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function history(executionArn: string): Promise<HistoryEvent[]> {
  const out = await sfn.send(new GetExecutionHistoryCommand({ executionArn, maxResults: 1000 }));
  return out.events ?? [];
}

function outputOf(execution: DescribeExecutionOutput): Record<string, unknown> {
  return JSON.parse(execution.output ?? "null") as Record<string, unknown>;
}

describe.concurrent("local Step Functions through @aws-sdk/client-sfn", () => {
  test("given an approval, when both callbacks succeed, then the execution succeeds with AWS-shaped history", async () => {
    const jobId = newJobId("happy");
    const executionArn = await start(jobId);

    const approval = await notification(jobId, "approval");
    expect(approval.executionName).toBe(jobId);
    await sfn.send(
      new SendTaskSuccessCommand({
        taskToken: approval.taskToken,
        output: JSON.stringify({ decision: "approve" }),
      }),
    );
    const work = await notification(jobId, "work");
    expect(work.taskToken).not.toBe(approval.taskToken);
    await sfn.send(
      new SendTaskSuccessCommand({ taskToken: work.taskToken, output: JSON.stringify({ built: 3 }) }),
    );

    const execution = await finished(executionArn);
    expect(execution.status).toBe("SUCCEEDED");
    expect(execution.startDate).toBeInstanceOf(Date);
    expect(execution.stopDate!.getTime()).toBeGreaterThanOrEqual(execution.startDate!.getTime());
    expect(outputOf(execution)).toEqual({
      jobId,
      mode: "normal",
      timeouts: { approval: 30, heartbeat: 30 },
      check: { ok: true },
      approval: { decision: "approve" },
      work: { built: 3 },
      outcome: "DONE",
    });

    const events = await history(executionArn);
    expect(events.map((e) => e.type)).toEqual([
      "ExecutionStarted",
      "PassStateEntered",
      "PassStateExited",
      "TaskStateEntered",
      "TaskScheduled",
      "TaskStarted",
      "TaskSucceeded",
      "TaskStateExited",
      "TaskStateEntered",
      "TaskScheduled",
      "TaskStarted",
      "TaskSubmitted",
      "TaskSucceeded",
      "TaskStateExited",
      "ChoiceStateEntered",
      "ChoiceStateExited",
      "TaskStateEntered",
      "TaskScheduled",
      "TaskStarted",
      "TaskSubmitted",
      "TaskSucceeded",
      "TaskStateExited",
      "PassStateEntered",
      "PassStateExited",
      "ExecutionSucceeded",
    ]);
    events.forEach((event, index) => {
      expect(event.id).toBe(index + 1);
      expect(event.previousEventId).toBe(index);
      expect(event.timestamp).toBeInstanceOf(Date);
    });
    expect(events[0]!.executionStartedEventDetails?.input).toBe(jobInput(jobId));
    const approvalEntered = events[8]!;
    expect(approvalEntered.stateEnteredEventDetails?.name).toBe("AwaitApproval");
    const scheduled = events[9]!.taskScheduledEventDetails!;
    expect(scheduled).toMatchObject({
      resourceType: "lambda",
      resource: "invoke.waitForTaskToken",
      region: "local",
      timeoutInSeconds: 30,
    });
    expect(JSON.parse(scheduled.parameters!)).toEqual({
      FunctionName: "approval-notify",
      Payload: { jobId, stage: "approval", taskToken: approval.taskToken, executionName: jobId },
    });
    const submitted = JSON.parse(events[11]!.taskSubmittedEventDetails!.output!) as Record<string, unknown>;
    expect(submitted).toMatchObject({
      Payload: { notified: true },
      StatusCode: 200,
      ExecutedVersion: "$LATEST",
    });
    expect(events[12]!.taskSucceededEventDetails?.output).toBe('{"decision":"approve"}');
    expect(events[17]!.taskScheduledEventDetails?.heartbeatInSeconds).toBe(30);
    expect(events.at(-1)!.executionSucceededEventDetails?.output).toBe(execution.output);
  });

  test("given an approval stage, when SendTaskFailure names ApprovalDenied, then the Catch for that name routes it", async () => {
    const jobId = newJobId("denied");
    const executionArn = await start(jobId);
    const { taskToken } = await notification(jobId, "approval");
    await sfn.send(
      new SendTaskFailureCommand({ taskToken, error: "ApprovalDenied", cause: "budget exhausted" }),
    );

    const execution = await finished(executionArn);
    expect(execution.status).toBe("SUCCEEDED");
    expect(outputOf(execution)).toMatchObject({
      outcome: "DENIED",
      error: { Error: "ApprovalDenied", Cause: "budget exhausted" },
    });
    const failed = (await history(executionArn)).find((e) => e.type === "TaskFailed");
    expect(failed?.taskFailedEventDetails).toEqual({
      resourceType: "lambda",
      resource: "invoke.waitForTaskToken",
      error: "ApprovalDenied",
      cause: "budget exhausted",
    });
  });

  test("given timeouts.approval = 1 outside Parameters, when nobody answers, then States.Timeout is caught and the late token is TaskTimedOut", async () => {
    const jobId = newJobId("expired");
    const executionArn = await start(jobId, jobInput(jobId, { approval: 1 }));
    const { taskToken } = await notification(jobId, "approval");

    const execution = await finished(executionArn);
    expect(execution.status).toBe("SUCCEEDED");
    expect(outputOf(execution)).toMatchObject({ outcome: "EXPIRED", error: { Error: "States.Timeout" } });
    const events = await history(executionArn);
    const scheduled = events.filter((e) => e.type === "TaskScheduled")[1];
    expect(scheduled?.taskScheduledEventDetails?.timeoutInSeconds).toBe(1);
    expect(events.find((e) => e.type === "TaskTimedOut")?.taskTimedOutEventDetails).toMatchObject({
      error: "States.Timeout",
      resource: "invoke.waitForTaskToken",
    });

    await expect(
      sfn.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify({ decision: "approve" }) })),
    ).rejects.toBeInstanceOf(TaskTimedOut);
  });

  test("given HeartbeatSecondsPath = 2, when heartbeats stop, then States.HeartbeatTimeout is caught", async () => {
    const jobId = newJobId("stalled");
    const executionArn = await start(jobId, jobInput(jobId, { heartbeat: 2 }));
    const approval = await notification(jobId, "approval");
    await sfn.send(
      new SendTaskSuccessCommand({ taskToken: approval.taskToken, output: '{"decision":"approve"}' }),
    );
    const work = await notification(jobId, "work");
    // One heartbeat is accepted (the task is alive); then the worker goes silent.
    await sfn.send(new SendTaskHeartbeatCommand({ taskToken: work.taskToken }));

    const execution = await finished(executionArn);
    expect(outputOf(execution)).toMatchObject({
      outcome: "STALLED",
      error: { Error: "States.HeartbeatTimeout" },
    });
    const timedOut = (await history(executionArn)).find((e) => e.type === "TaskTimedOut");
    expect(timedOut?.taskTimedOutEventDetails?.error).toBe("States.HeartbeatTimeout");
    await expect(
      sfn.send(new SendTaskHeartbeatCommand({ taskToken: work.taskToken })),
    ).rejects.toBeInstanceOf(TaskTimedOut);
  });

  test("given a running execution, when started again with the same name, then the same input is idempotent and another input conflicts", async () => {
    const jobId = newJobId("dup");
    const input = jobInput(jobId);
    const first = await sfn.send(new StartExecutionCommand({ stateMachineArn, name: jobId, input }));
    const again = await sfn.send(new StartExecutionCommand({ stateMachineArn, name: jobId, input }));
    expect(again.executionArn).toBe(first.executionArn);
    expect(again.startDate).toEqual(first.startDate);

    await expect(
      sfn.send(
        new StartExecutionCommand({
          stateMachineArn,
          name: jobId,
          input: jobInput(jobId, { mode: "other" }),
        }),
      ),
    ).rejects.toBeInstanceOf(ExecutionAlreadyExists);

    // Once closed, even the same input is refused (AWS: names are unique for 90 days).
    await sfn.send(new StopExecutionCommand({ executionArn: first.executionArn }));
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn, name: jobId, input })),
    ).rejects.toBeInstanceOf(ExecutionAlreadyExists);
    const listed = await sfn.send(new ListExecutionsCommand({ stateMachineArn, statusFilter: "ABORTED" }));
    expect(listed.executions?.filter((e) => e.name === jobId)).toHaveLength(1);
  });

  test("given a completed token, when it is sent again (success or failure), then the service answers TaskTimedOut", async () => {
    const jobId = newJobId("twice");
    const executionArn = await start(jobId);
    const { taskToken } = await notification(jobId, "approval");
    await sfn.send(new SendTaskSuccessCommand({ taskToken, output: '{"decision":"reject"}' }));
    await expect(sfn.send(new SendTaskSuccessCommand({ taskToken, output: "{}" }))).rejects.toBeInstanceOf(
      TaskTimedOut,
    );
    await expect(sfn.send(new SendTaskFailureCommand({ taskToken, error: "X" }))).rejects.toBeInstanceOf(
      TaskTimedOut,
    );

    const execution = await finished(executionArn);
    expect(execution).toMatchObject({
      status: "FAILED",
      error: "Approval.Rejected",
      cause: "the approver rejected the job",
    });
    const events = await history(executionArn);
    expect(events.slice(-2).map((e) => e.type)).toEqual(["FailStateEntered", "ExecutionFailed"]);
    expect(events.filter((e) => e.type === "TaskSucceeded")).toHaveLength(2);
  });

  test("given a waiting execution, when it is stopped, then it is ABORTED and its token is closed", async () => {
    const jobId = newJobId("stop");
    const executionArn = await start(jobId);
    const { taskToken } = await notification(jobId, "approval");
    const stopped = await sfn.send(
      new StopExecutionCommand({ executionArn, error: "Cancelled", cause: "user cancel" }),
    );
    expect(stopped.stopDate).toBeInstanceOf(Date);

    const execution = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    expect(execution).toMatchObject({ status: "ABORTED", error: "Cancelled", cause: "user cancel" });
    await expect(sfn.send(new SendTaskSuccessCommand({ taskToken, output: "{}" }))).rejects.toBeInstanceOf(
      TaskTimedOut,
    );
    const last = (await history(executionArn)).at(-1)!;
    expect(last.type).toBe("ExecutionAborted");
    expect(last.executionAbortedEventDetails).toEqual({ error: "Cancelled", cause: "user cancel" });
  });

  test("given a handler that throws ConflictError, when the task fails, then Catch on that name routes it with Lambda's error JSON as Cause", async () => {
    const jobId = newJobId("conflict");
    const execution = await finished(await start(jobId, jobInput(jobId, { mode: "conflict" })));
    expect(execution.status).toBe("SUCCEEDED");
    const output = outputOf(execution) as { outcome: string; error: { Error: string; Cause: string } };
    expect(output.outcome).toBe("CONFLICTED");
    expect(output.error.Error).toBe("ConflictError");
    expect(JSON.parse(output.error.Cause)).toMatchObject({
      errorType: "ConflictError",
      errorMessage: "job is already being approved elsewhere",
    });
  });

  test("given bad requests, then the SDK raises the typed exceptions AWS would", async () => {
    await expect(
      sfn.send(new SendTaskSuccessCommand({ taskToken: "not-a-token", output: "{}" })),
    ).rejects.toBeInstanceOf(InvalidToken);
    await expect(
      sfn.send(
        new StartExecutionCommand({
          stateMachineArn: "arn:aws:states:local:000000000000:stateMachine:nope",
          input: "{}",
        }),
      ),
    ).rejects.toBeInstanceOf(StateMachineDoesNotExist);
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn, name: newJobId("bad"), input: "{not json" })),
    ).rejects.toBeInstanceOf(InvalidExecutionInput);
    await expect(
      sfn.send(
        new DescribeExecutionCommand({
          executionArn: "arn:aws:states:local:000000000000:execution:approval-flow:nope",
        }),
      ),
    ).rejects.toBeInstanceOf(ExecutionDoesNotExist);
  });

  test("given raw HTTP, then the endpoint speaks AWS JSON 1.0: epoch-second dates, __type errors", async () => {
    const post = (target: string, body: string) =>
      fetch(server.endpoint, {
        method: "POST",
        headers: { "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": target },
        body,
      });
    const described = await post(
      "AWSStepFunctions.DescribeStateMachine",
      JSON.stringify({ stateMachineArn }),
    );
    expect(described.status).toBe(200);
    expect(described.headers.get("content-type")).toBe("application/x-amz-json-1.0");
    const { creationDate } = (await described.json()) as { creationDate: unknown };
    expect(typeof creationDate).toBe("number");
    expect(Math.abs((creationDate as number) - Date.now() / 1000)).toBeLessThan(3600);

    const unknown = await post("AWSStepFunctions.CreateActivity", "{}");
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { __type: string }).__type).toBe("UnknownOperationException");
    const garbled = await post("AWSStepFunctions.DescribeExecution", "{not json");
    expect(((await garbled.json()) as { __type: string }).__type).toBe("SerializationException");
    const missing = await post("AWSStepFunctions.DescribeExecution", "{}");
    expect(missing.status).toBe(400);
    expect(await missing.json()).toEqual({
      __type: "ValidationException",
      message: "executionArn is required and must be a string",
    });
  });

  test("given a finished execution, then history pages forward and backward, and the machine is described and listed", async () => {
    const jobId = newJobId("pages");
    const executionArn = await start(jobId, jobInput(jobId, { mode: "conflict" }));
    await finished(executionArn);
    const all = await history(executionArn);

    const firstPage = await sfn.send(new GetExecutionHistoryCommand({ executionArn, maxResults: 4 }));
    expect(firstPage.events?.map((e) => e.id)).toEqual([1, 2, 3, 4]);
    const secondPage = await sfn.send(
      new GetExecutionHistoryCommand({ executionArn, maxResults: 4, nextToken: firstPage.nextToken }),
    );
    expect(secondPage.events?.map((e) => e.id)).toEqual([5, 6, 7, 8]);
    const reversed = await sfn.send(
      new GetExecutionHistoryCommand({ executionArn, reverseOrder: true, maxResults: 2 }),
    );
    expect(reversed.events?.map((e) => e.id)).toEqual([all.length, all.length - 1]);
    const bare = await sfn.send(
      new GetExecutionHistoryCommand({ executionArn, includeExecutionData: false }),
    );
    expect(bare.events?.[0]?.executionStartedEventDetails?.input).toBeUndefined();

    const described = await sfn.send(new DescribeStateMachineCommand({ stateMachineArn }));
    expect(described).toMatchObject({ name: "approval-flow", type: "STANDARD", status: "ACTIVE" });
    expect(JSON.parse(described.definition!)).toEqual(JSON.parse(definition));
    const machines = await sfn.send(new ListStateMachinesCommand({}));
    expect(machines.stateMachines?.map((m) => m.stateMachineArn)).toContain(stateMachineArn);
  });
});
