/**
 * The local Step Functions service in-process: definition checks, substitutions, the context
 * object, retries with fresh tokens, self-loops, Lambda resources, quotas (256 KiB payloads,
 * 25,000 history events), execution timeouts, the transition metric, and close().
 */
import { describe, expect, test } from "vitest";
import {
  faultOptionsFromEnv,
  LocalStepFunctions,
  MAX_HISTORY_EVENTS,
  MAX_PAYLOAD_BYTES,
  SfnApiError,
  substituteDefinition,
  UnresolvedSubstitutionError,
  type FaultOptions,
  type JsonValue,
  type LambdaHandler,
} from "../local/stepfunctions/index.ts";

const LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke";
const CALLBACK = "arn:aws:states:::lambda:invoke.waitForTaskToken";

async function machineWith(
  functions: Record<string, LambdaHandler>,
  definition: object,
): Promise<{ service: LocalStepFunctions; stateMachineArn: string }> {
  const service = new LocalStepFunctions(functions);
  const { stateMachineArn } = await service.createStateMachine({ name: "engine-test", definition });
  return { service, stateMachineArn };
}

async function until<T>(read: () => T | undefined, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function refusal(promise: Promise<unknown>): Promise<SfnApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof SfnApiError)) throw new Error(`expected an SfnApiError, got ${String(error)}`);
  return error;
}

describe("substituteDefinition", () => {
  test("replaces every ${Key} and leaves JSONPath dollars alone", () => {
    const text = '{"FunctionName":"${Fn}","Payload":{"a.$":"$.a","b":"${Fn}:${Alias}"}}';
    expect(
      substituteDefinition(text, { Fn: "arn:aws:lambda:local:000000000000:function:f", Alias: "live" }),
    ).toBe(
      '{"FunctionName":"arn:aws:lambda:local:000000000000:function:f","Payload":{"a.$":"$.a","b":"arn:aws:lambda:local:000000000000:function:f:live"}}',
    );
  });

  test("names every unresolved placeholder", () => {
    expect(() => substituteDefinition('{"a":"${One}","b":"${Two}","c":"${One}"}', { Three: "x" })).toThrow(
      new UnresolvedSubstitutionError(["One", "Two"]),
    );
    expect(() => substituteDefinition('"${One}"', {})).toThrow(
      "definition has unresolved substitution placeholder(s): ${One}",
    );
  });
});

describe("createStateMachine", () => {
  const callbackState = (functionName: string) => ({
    StartAt: "Wait",
    States: {
      Wait: {
        Type: "Task",
        Resource: CALLBACK,
        Parameters: { FunctionName: functionName, Payload: { "t.$": "$$.Task.Token" } },
        End: true,
      },
    },
  });

  test("rejects what the local runtime could not run, naming the state and the reason", async () => {
    const service = new LocalStepFunctions({ known: () => null });
    const create = (definition: object) => service.createStateMachine({ name: "m", definition });

    const unknownFunction = await refusal(
      create(callbackState("arn:aws:lambda:local:000000000000:function:ghost")),
    );
    expect(unknownFunction.code).toBe("InvalidDefinition");
    expect(unknownFunction.message).toContain(
      "state 'Wait': Parameters.FunctionName 'arn:aws:lambda:local:000000000000:function:ghost' has no local handler",
    );

    const sync = await refusal(
      create({
        StartAt: "A",
        States: { A: { Type: "Task", Resource: "arn:aws:states:::ecs:runTask.sync", End: true } },
      }),
    );
    expect(sync.message).toContain("the .sync integration pattern is not supported locally");

    const integration = await refusal(
      create({
        StartAt: "A",
        States: { A: { Type: "Task", Resource: "arn:aws:states:::events:putEvents", End: true } },
      }),
    );
    expect(integration.message).toContain("(events:putEvents) has no local integration");

    const jsonata = await refusal(create({ ...callbackState("known"), QueryLanguage: "JSONata" }));
    expect(jsonata.message).toContain('QueryLanguage "JSONata" is not supported (JSONPath only)');

    const dangling = await refusal(
      create({ StartAt: "A", States: { A: { Type: "Pass", Next: "Nowhere" } } }),
    );
    expect(dangling.code).toBe("InvalidDefinition");

    const heartbeat = await refusal(
      create({
        StartAt: "A",
        States: {
          A: {
            Type: "Task",
            Resource: CALLBACK,
            Parameters: { FunctionName: "known" },
            TimeoutSeconds: 5,
            HeartbeatSeconds: 5,
            End: true,
          },
        },
      }),
    );
    expect(heartbeat.message).toContain("HeartbeatSeconds (5) must be smaller than TimeoutSeconds");
  });

  test("is idempotent for the same definition and refuses a different one under the same name", async () => {
    const service = new LocalStepFunctions({ known: () => null });
    const first = await service.createStateMachine({ name: "m", definition: callbackState("known") });
    const again = await service.createStateMachine({
      name: "m",
      definition: JSON.stringify(callbackState("known")),
    });
    expect(again.stateMachineArn).toBe(first.stateMachineArn);
    expect(first.stateMachineArn).toBe("arn:aws:states:local:000000000000:stateMachine:m");
    const other = await refusal(
      service.createStateMachine({
        name: "m",
        definition: { StartAt: "P", States: { P: { Type: "Pass", End: true } } },
      }),
    );
    expect(other.code).toBe("StateMachineAlreadyExists");
  });
});

describe.concurrent("executions", () => {
  test("$$.Execution, $$.State and $$.StateMachine mean the execution, state and machine in every state", async () => {
    const seen: JsonValue[] = [];
    const { service, stateMachineArn } = await machineWith(
      { probe: (p) => void seen.push(p) },
      {
        StartAt: "First",
        States: {
          First: { Type: "Pass", Result: { replaced: true }, Next: "Probe" },
          Probe: {
            Type: "Task",
            Resource: LAMBDA_INVOKE,
            Parameters: {
              FunctionName: "probe",
              Payload: {
                "input.$": "$$.Execution.Input",
                "name.$": "$$.Execution.Name",
                "id.$": "$$.Execution.Id",
                "startTime.$": "$$.Execution.StartTime",
                "state.$": "$$.State.Name",
                "enteredTime.$": "$$.State.EnteredTime",
                "retryCount.$": "$$.State.RetryCount",
                "machine.$": "$$.StateMachine.Name",
                "formatted.$": "States.Format('{}/{}', $$.Execution.Name, $$.Execution.Input.n)",
              },
            },
            End: true,
          },
        },
      },
    );
    const { executionArn, startDate } = await service.startExecution({
      stateMachineArn,
      name: "ctx",
      input: '{"n":7}',
    });
    const done = await service.waitForExecution(executionArn!);
    expect(done.status).toBe("SUCCEEDED");
    const probe = seen[0] as Record<string, JsonValue>;
    expect(probe).toMatchObject({
      input: { n: 7 },
      name: "ctx",
      id: executionArn,
      startTime: startDate!.toISOString(),
      state: "Probe",
      retryCount: 0,
      machine: "engine-test",
      formatted: "ctx/7",
    });
    expect(Date.parse(probe["enteredTime"] as string)).toBeGreaterThanOrEqual(startDate!.getTime());
    await service.close();
  });

  test("a retried callback task gets a new token; the old one is closed; retries count as transitions", async () => {
    const tokens: string[] = [];
    class StoreUnavailableError extends Error {
      override readonly name = "StoreUnavailableError";
    }
    const { service, stateMachineArn } = await machineWith(
      {
        enter: (p) => {
          tokens.push((p as { token: string }).token);
          if (tokens.length === 1) throw new StoreUnavailableError("store is down");
          return null;
        },
      },
      {
        StartAt: "Stage",
        States: {
          Stage: {
            Type: "Task",
            Resource: CALLBACK,
            Parameters: { FunctionName: "enter", Payload: { "token.$": "$$.Task.Token" } },
            Retry: [{ ErrorEquals: ["StoreUnavailableError"], IntervalSeconds: 1, MaxAttempts: 2 }],
            End: true,
          },
        },
      },
    );
    const { executionArn } = await service.startExecution({ stateMachineArn, input: "{}" });
    await until(() => (tokens.length === 2 ? true : undefined));
    expect(tokens[1]).not.toBe(tokens[0]);
    expect((await refusal(service.sendTaskSuccess({ taskToken: tokens[0]!, output: "{}" }))).code).toBe(
      "TaskTimedOut",
    );
    await service.sendTaskSuccess({ taskToken: tokens[1]!, output: '{"ok":1}' });

    const done = await service.waitForExecution(executionArn!);
    expect(done).toMatchObject({ status: "SUCCEEDED", output: '{"ok":1}', stateTransitions: 2 });
    const { events } = await service.getExecutionHistory({ executionArn });
    expect(events!.map((e) => e.type)).toEqual([
      "ExecutionStarted",
      "TaskStateEntered",
      "TaskScheduled",
      "TaskStarted",
      "TaskFailed",
      "TaskScheduled",
      "TaskStarted",
      "TaskSubmitted",
      "TaskSucceeded",
      "TaskStateExited",
      "ExecutionSucceeded",
    ]);
    expect(events![4]!.taskFailedEventDetails?.error).toBe("StoreUnavailableError");
    await service.close();
  });

  test("a state whose Catch loops back to itself runs again each time (one-state runs stop at the hand-over)", async () => {
    let calls = 0;
    class NotYet extends Error {
      override readonly name = "NotYet";
    }
    const { service, stateMachineArn } = await machineWith(
      {
        poll: () => {
          calls++;
          if (calls < 3) throw new NotYet(`call ${calls}`);
          return { ready: true };
        },
      },
      {
        StartAt: "Poll",
        States: {
          Poll: {
            Type: "Task",
            Resource: "arn:aws:lambda:local:000000000000:function:poll",
            Catch: [{ ErrorEquals: ["NotYet"], ResultPath: "$.last", Next: "Poll" }],
            End: true,
          },
        },
      },
    );
    const { executionArn } = await service.startExecution({ stateMachineArn, input: "{}" });
    const done = await service.waitForExecution(executionArn!);
    expect(done).toMatchObject({ status: "SUCCEEDED", output: '{"ready":true}', stateTransitions: 3 });
    const { events } = await service.getExecutionHistory({ executionArn });
    const types = events!.map((e) => e.type);
    expect(types.filter((t) => t === "TaskStateEntered")).toHaveLength(3);
    expect(types.slice(1, 7)).toEqual([
      "TaskStateEntered",
      "LambdaFunctionScheduled",
      "LambdaFunctionStarted",
      "LambdaFunctionFailed",
      "TaskStateExited",
      "TaskStateEntered",
    ]);
    expect(events![2]!.lambdaFunctionScheduledEventDetails?.resource).toBe(
      "arn:aws:lambda:local:000000000000:function:poll",
    );
    await service.close();
  });

  test("an uncaught Lambda error fails the execution with the error name and Lambda's error JSON", async () => {
    const { service, stateMachineArn } = await machineWith(
      {
        boom: () => {
          throw new RangeError("out of range");
        },
      },
      {
        StartAt: "Call",
        States: {
          Call: { Type: "Task", Resource: LAMBDA_INVOKE, Parameters: { FunctionName: "boom" }, End: true },
        },
      },
    );
    const { executionArn } = await service.startExecution({ stateMachineArn });
    const done = await service.waitForExecution(executionArn!);
    expect(done.status).toBe("FAILED");
    expect(done.error).toBe("RangeError");
    expect(JSON.parse(done.cause!)).toMatchObject({ errorType: "RangeError", errorMessage: "out of range" });
    const { events } = await service.getExecutionHistory({ executionArn, reverseOrder: true, maxResults: 2 });
    expect(events!.map((e) => e.type)).toEqual(["ExecutionFailed", "TaskFailed"]);
    await service.close();
  });

  test("a task result over 256 KiB fails the execution with States.DataLimitExceeded, which States.ALL cannot catch", async () => {
    const { service, stateMachineArn } = await machineWith(
      { big: () => "x".repeat(300 * 1024) },
      {
        StartAt: "Big",
        States: {
          Big: {
            Type: "Task",
            Resource: LAMBDA_INVOKE,
            Parameters: { FunctionName: "big" },
            Catch: [{ ErrorEquals: ["States.ALL"], Next: "Caught" }],
            End: true,
          },
          Caught: { Type: "Succeed" },
        },
      },
    );
    const { executionArn } = await service.startExecution({ stateMachineArn });
    const done = await service.waitForExecution(executionArn!);
    expect(done).toMatchObject({ status: "FAILED", error: "States.DataLimitExceeded" });

    const tooBig = await refusal(
      service.startExecution({ stateMachineArn, input: JSON.stringify("y".repeat(262_145)) }),
    );
    expect(tooBig.code).toBe("ValidationException");
    const badOutput = await refusal(
      service.sendTaskSuccess({ taskToken: "LocalTaskToken-" + "A".repeat(43), output: "{" }),
    );
    expect(badOutput.code).toBe("InvalidOutput");
    await service.close();
  });

  test("the machine's TimeoutSeconds times the execution out, mid-Wait", async () => {
    const { service, stateMachineArn } = await machineWith(
      {},
      {
        StartAt: "Nap",
        TimeoutSeconds: 1,
        States: { Nap: { Type: "Wait", Seconds: 30, Next: "Done" }, Done: { Type: "Succeed" } },
      },
    );
    const { executionArn } = await service.startExecution({ stateMachineArn });
    const done = await service.waitForExecution(executionArn!);
    expect(done).toMatchObject({ status: "TIMED_OUT" });
    const { events } = await service.getExecutionHistory({ executionArn });
    // (Whether the Wait state was entered first depends on how busy the machine is.)
    expect(events![0]!.type).toBe("ExecutionStarted");
    expect(events!.at(-1)).toMatchObject({
      type: "ExecutionTimedOut",
      executionTimedOutEventDetails: { error: "States.Timeout" },
    });
    await service.close();
  });

  test("many executions wait at once and complete in any order; transitions are counted per execution", async () => {
    const tokens = new Map<string, string>();
    const { service, stateMachineArn } = await machineWith(
      { enter: (p) => void tokens.set((p as { id: string }).id, (p as { t: string }).t) },
      {
        StartAt: "In",
        States: {
          In: { Type: "Pass", Next: "Wait" },
          Wait: {
            Type: "Task",
            Resource: CALLBACK,
            Parameters: {
              FunctionName: "enter",
              Payload: { "id.$": "$$.Execution.Name", "t.$": "$$.Task.Token" },
            },
            ResultPath: "$.answer",
            Next: "Out",
          },
          Out: { Type: "Succeed" },
        },
      },
    );
    const names = Array.from({ length: 20 }, (_, i) => `wait-${i}`);
    const arns = await Promise.all(
      names.map(
        async (name) => (await service.startExecution({ stateMachineArn, name, input: "{}" })).executionArn!,
      ),
    );
    await until(() => (tokens.size === names.length ? true : undefined));
    for (const name of [...names].reverse()) {
      await service.sendTaskSuccess({ taskToken: tokens.get(name)!, output: JSON.stringify(name) });
    }
    for (const [i, arn] of arns.entries()) {
      const done = await service.waitForExecution(arn);
      expect(done).toMatchObject({
        status: "SUCCEEDED",
        output: JSON.stringify({ answer: names[i] }),
        stateTransitions: 3,
      });
    }
    const running = await service.listExecutions({ stateMachineArn, statusFilter: "RUNNING" });
    expect(running.executions).toEqual([]);
    const page = await service.listExecutions({ stateMachineArn, maxResults: 15 });
    expect(page.executions).toHaveLength(15);
    expect(page.executions![0]!.name).toBe("wait-19");
    const rest = await service.listExecutions({ stateMachineArn, maxResults: 15, nextToken: page.nextToken });
    expect(rest.executions).toHaveLength(5);
    expect(rest.nextToken).toBeUndefined();
    await service.close();
  });

  test("a Map state runs its nested Lambda task per item", async () => {
    const { service, stateMachineArn } = await machineWith(
      { double: (p) => (p as number) * 2 },
      {
        StartAt: "Each",
        States: {
          Each: {
            Type: "Map",
            ItemsPath: "$.items",
            ItemProcessor: {
              StartAt: "Double",
              States: {
                Double: {
                  Type: "Task",
                  Resource: "arn:aws:lambda:local:000000000000:function:double",
                  End: true,
                },
              },
            },
            End: true,
          },
        },
      },
    );
    const { executionArn } = await service.startExecution({ stateMachineArn, input: '{"items":[1,2,3]}' });
    expect(await service.waitForExecution(executionArn!)).toMatchObject({
      status: "SUCCEEDED",
      output: "[2,4,6]",
    });
    await service.close();
  });

  test("close() aborts running executions, closes their tokens and refuses new calls", async () => {
    let token = "";
    const { service, stateMachineArn } = await machineWith(
      { enter: (p) => void (token = (p as { t: string }).t) },
      {
        StartAt: "Wait",
        States: {
          Wait: {
            Type: "Task",
            Resource: CALLBACK,
            Parameters: { FunctionName: "enter", Payload: { "t.$": "$$.Task.Token" } },
            HeartbeatSeconds: 600,
            End: true,
          },
        },
      },
    );
    const { executionArn } = await service.startExecution({ stateMachineArn });
    await until(() => token || undefined);
    await service.close();
    expect((await service.describeExecution({ executionArn })).status).toBe("ABORTED");
    expect((await refusal(service.sendTaskSuccess({ taskToken: token, output: "{}" }))).code).toBe(
      "TaskTimedOut",
    );
    expect((await refusal(service.startExecution({ stateMachineArn }))).code).toBe("ServiceClosed");
  });
});

// Alone, after the rest: it keeps the event loop busy for a while.
describe("history quota", () => {
  test("an execution that reaches 25,000 history events fails, with ExecutionFailed as event 25,000", async () => {
    const { service, stateMachineArn } = await machineWith(
      {},
      {
        StartAt: "Spin",
        States: {
          Spin: { Type: "Pass", Next: "Again" },
          Again: {
            Type: "Choice",
            Choices: [{ Variable: "$.stop", IsPresent: true, Next: "End" }],
            Default: "Spin",
          },
          End: { Type: "Succeed" },
        },
      },
    );
    const { executionArn } = await service.startExecution({ stateMachineArn, input: "{}" });
    const done = await service.waitForExecution(executionArn!, 20_000);
    expect(done.status).toBe("FAILED");
    expect(done.error).toBe("States.Runtime");
    expect(done.cause).toContain("maximum number of history events (25000)");
    const { events } = await service.getExecutionHistory({ executionArn, reverseOrder: true, maxResults: 1 });
    expect(events![0]).toMatchObject({ id: MAX_HISTORY_EVENTS, type: "ExecutionFailed" });
    // ExecutionStarted, then an Entered/Exited pair per state, then ExecutionFailed.
    expect(done.stateTransitions).toBe((MAX_HISTORY_EVENTS - 2) / 2);
    await service.close();
  });
});

describe("fault injection", () => {
  /** One callback state entered through a Lambda that records each attempt's token and $$.State. */
  function callbackMachine(
    retry: object[],
    catchers: object[] = [{ ErrorEquals: ["Test.NeverRaised"], Next: "Caught" }],
  ): object {
    return {
      StartAt: "Stage",
      States: {
        Stage: {
          Type: "Task",
          Resource: CALLBACK,
          Parameters: {
            FunctionName: "enter",
            Payload: {
              "token.$": "$$.Task.Token",
              "entered.$": "$$.State.EnteredTime",
              "retry.$": "$$.State.RetryCount",
            },
          },
          TimeoutSeconds: 30,
          Retry: retry,
          Catch: catchers,
          End: true,
        },
        Caught: { Type: "Pass", End: true },
      },
    };
  }
  interface Call {
    token: string;
    entered: string;
    retry: number;
  }

  test("a lost Lambda response: the function ran, the caller sees Lambda.ServiceException, the retry brings a new token for the same entry", async () => {
    const calls: Call[] = [];
    const service = new LocalStepFunctions(
      { enter: (p) => (calls.push(p as unknown as Call), null) },
      { faults: { rules: [{ fault: "lose-lambda-response", state: "Stage", function: "enter" }] } },
    );
    const { stateMachineArn } = await service.createStateMachine({
      name: "faults",
      definition: callbackMachine([
        { ErrorEquals: ["Lambda.ServiceException"], IntervalSeconds: 1, MaxAttempts: 2 },
      ]),
    });
    const { executionArn } = await service.startExecution({ stateMachineArn, input: "{}" });
    await until(() => (calls.length === 2 ? true : undefined));
    // Both attempts ran; one state entry, two attempts, two tokens.
    expect(calls.map((c) => c.retry)).toEqual([0, 1]);
    expect(calls[1]!.entered).toBe(calls[0]!.entered);
    expect(calls[1]!.token).not.toBe(calls[0]!.token);
    expect((await refusal(service.sendTaskSuccess({ taskToken: calls[0]!.token, output: "{}" }))).code).toBe(
      "TaskTimedOut",
    );
    await service.sendTaskSuccess({ taskToken: calls[1]!.token, output: "{}" });
    expect(await service.waitForExecution(executionArn!)).toMatchObject({ status: "SUCCEEDED" });
    const { events } = await service.getExecutionHistory({ executionArn });
    expect(events!.find((e) => e.type === "TaskFailed")?.taskFailedEventDetails?.error).toBe(
      "Lambda.ServiceException",
    );
    expect(service.faults.fired).toEqual([
      { fault: "lose-lambda-response", state: "Stage", function: "enter" },
    ]);
    await service.close();
  });

  test("Lambda.Unknown: the function did not get to run; uncaught, the execution fails with it", async () => {
    const calls: Call[] = [];
    const service = new LocalStepFunctions(
      { enter: (p) => (calls.push(p as unknown as Call), null) },
      { faults: { rules: [{ fault: "lambda-unknown", function: "enter", count: 2 }] } },
    );
    const { stateMachineArn } = await service.createStateMachine({
      name: "faults",
      definition: callbackMachine([{ ErrorEquals: ["Lambda.Unknown"], IntervalSeconds: 1, MaxAttempts: 1 }]),
    });
    const { executionArn } = await service.startExecution({ stateMachineArn, input: "{}" });
    const done = await service.waitForExecution(executionArn!);
    expect(done).toMatchObject({ status: "FAILED", error: "Lambda.Unknown" });
    expect(calls).toEqual([]);
    await service.close();
  });

  test("task-timeout: the callback task times out once its token is out (States.Timeout, caught); the token is closed", async () => {
    const calls: Call[] = [];
    const service = new LocalStepFunctions(
      { enter: (p) => (calls.push(p as unknown as Call), null) },
      { faults: { rules: [{ fault: "task-timeout", state: "Stage" }] } },
    );
    const { stateMachineArn } = await service.createStateMachine({
      name: "faults",
      definition: callbackMachine(
        [],
        [{ ErrorEquals: ["States.Timeout"], ResultPath: "$.error", Next: "Caught" }],
      ),
    });
    const { executionArn } = await service.startExecution({ stateMachineArn, input: "{}" });
    const done = await service.waitForExecution(executionArn!);
    expect(done.status).toBe("SUCCEEDED");
    expect(JSON.parse(done.output!)).toMatchObject({ error: { Error: "States.Timeout" } });
    expect(calls).toHaveLength(1);
    expect((await refusal(service.sendTaskSuccess({ taskToken: calls[0]!.token, output: "{}" }))).code).toBe(
      "TaskTimedOut",
    );
    await service.close();
  });

  test("send-task-success-timed-out: the task times out just before the callback, which gets TaskTimedOut", async () => {
    const calls: Call[] = [];
    const service = new LocalStepFunctions(
      { enter: (p) => (calls.push(p as unknown as Call), null) },
      { faults: { rules: [{ fault: "send-task-success-timed-out", state: "Stage", count: 1 }] } },
    );
    const { stateMachineArn } = await service.createStateMachine({
      name: "faults",
      definition: callbackMachine(
        [],
        [{ ErrorEquals: ["States.Timeout"], ResultPath: "$.error", Next: "Caught" }],
      ),
    });
    const { executionArn } = await service.startExecution({ stateMachineArn, input: "{}" });
    await until(() => (calls.length === 1 ? true : undefined));
    expect((await refusal(service.sendTaskSuccess({ taskToken: calls[0]!.token, output: "{}" }))).code).toBe(
      "TaskTimedOut",
    );
    const done = await service.waitForExecution(executionArn!);
    expect(JSON.parse(done.output!)).toMatchObject({ error: { Error: "States.Timeout" } });
    await service.close();
  });

  test("probability draws from a seeded generator: the same seed fires the same calls", async () => {
    const firedWith = async (seed: number): Promise<number[]> => {
      let n = 0;
      const fired: number[] = [];
      const service = new LocalStepFunctions(
        { f: () => null },
        { faults: { seed, rules: [{ fault: "lambda-unknown", function: "f", probability: 0.5 }] } },
      );
      const { stateMachineArn } = await service.createStateMachine({
        name: "p",
        definition: {
          StartAt: "T",
          States: {
            T: { Type: "Task", Resource: LAMBDA_INVOKE, Parameters: { FunctionName: "f" }, End: true },
          },
        },
      });
      for (let i = 0; i < 16; i++) {
        const { executionArn } = await service.startExecution({ stateMachineArn, input: "{}" });
        const done = await service.waitForExecution(executionArn!);
        if (done.status === "FAILED") fired.push(n);
        n++;
      }
      await service.close();
      return fired;
    };
    const a = await firedWith(7);
    expect(await firedWith(7)).toEqual(a);
    expect(a.length).toBeGreaterThan(0);
    expect(a.length).toBeLessThan(16);
  });

  test("bad switches are refused with the field and the reason", () => {
    const make = (faults: unknown) => () => new LocalStepFunctions({}, { faults: faults as FaultOptions });
    expect(make({ rules: [{ fault: "explode" }] })).toThrow(
      "faults.rules[0].fault: must be one of lose-lambda-response, lambda-unknown, task-timeout, send-task-success-timed-out, lambda-throttle",
    );
    expect(make({ rules: [{ fault: "task-timeout", probability: 2 }] })).toThrow(
      "faults.rules[0].probability: must be a number in (0, 1], got 2",
    );
    expect(make({ rules: [{ fault: "task-timeout", error: "Lambda.ServiceException" }] })).toThrow(
      "faults.rules[0].error: applies to lose-lambda-response only",
    );
    expect(make({ rules: [{ fault: "task-timeout", count: 0 }] })).toThrow(
      "faults.rules[0].count: must be an integer ≥ 1, got 0",
    );
    expect(make({ rules: [{ fault: "task-timeout", stat: "x" }] })).toThrow(
      "faults.rules[0].stat: is not a known field",
    );
    expect(() => faultOptionsFromEnv({ CAIRN_FAULTS: '[{"fault":"task-timeout","state":""}]' })).toThrow(
      "CAIRN_FAULTS[0].state: must be a non-empty string",
    );
    expect(() => faultOptionsFromEnv({ CAIRN_FAULTS: "[]", CAIRN_FAULT_SEED: "x" })).toThrow(
      'CAIRN_FAULT_SEED: must be an integer, got "x"',
    );
    expect(
      faultOptionsFromEnv({ CAIRN_FAULTS: '[{"fault":"lambda-unknown","count":3}]', CAIRN_FAULT_SEED: "5" }),
    ).toEqual({
      rules: [{ fault: "lambda-unknown", count: 3 }],
      seed: 5,
    });
    expect(faultOptionsFromEnv({})).toBeUndefined();
  });

  test("SendTaskSuccess output and a state's input are held to 256 KiB of UTF-8, multibyte counted as bytes", async () => {
    const calls: Call[] = [];
    const service = new LocalStepFunctions({ enter: (p) => (calls.push(p as unknown as Call), null) });
    const { stateMachineArn } = await service.createStateMachine({
      name: "limits",
      definition: callbackMachine([]),
    });
    await service.startExecution({ stateMachineArn, input: "{}" });
    await until(() => (calls.length === 1 ? true : undefined));
    // 87,382 three-byte characters: 262,146 bytes of output, under 256 Ki characters.
    const output = JSON.stringify({ m: "€".repeat(87_382) });
    expect(output.length).toBeLessThan(MAX_PAYLOAD_BYTES);
    expect((await refusal(service.sendTaskSuccess({ taskToken: calls[0]!.token, output }))).code).toBe(
      "ValidationException",
    );
    const input = JSON.stringify({ m: "€".repeat(87_382) });
    expect((await refusal(service.startExecution({ stateMachineArn, input }))).code).toBe(
      "ValidationException",
    );
    await service.close();
  });
});
