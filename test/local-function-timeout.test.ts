/**
 * The embedded runtime runs each function under its timeout, as Lambda does (local/function-timeout.ts):
 * an invocation still running at the timeout fails. From an SQS trigger the whole batch fails and
 * comes back after its visibility timeout (the late answer of the first run deletes nothing);
 * from Step Functions the failure is `Lambda.Unknown`, which the lifecycle's own retrier retries.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, test, vi } from "vitest";
import { FUNCTIONS, FunctionName } from "../functions/topology/index.ts";
import {
  FunctionTimedOutError,
  withFunctionTimeout,
  withTopologyTimeouts,
} from "../local/function-timeout.ts";
import { LocalQueue, type SqsRecord } from "../local/queue.ts";
import { LocalStepFunctions, type JsonValue } from "../local/stepfunctions/index.ts";

/** A promise the test settles when it chooses: a handler blocked on it runs as long as the test wants. */
function gate(): { readonly wait: Promise<void>; open(): void } {
  let open = () => {};
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("a function under its timeout", () => {
  test("given the topology's functions, each fails at its own timeout, in Lambda's words, and not a moment before", async () => {
    vi.useFakeTimers();
    const never = () => new Promise<never>(() => {});
    const handlers = withTopologyTimeouts(new Map(FUNCTIONS.map((f) => [f.name, never])));
    const coordinator = FUNCTIONS.find((f) => f.name === FunctionName.Coordinator)!;
    let outcome: unknown;
    handlers.get(FunctionName.Coordinator)!({}).catch((error: unknown) => (outcome = error));
    await vi.advanceTimersByTimeAsync(coordinator.timeoutSeconds * 1000 - 1);
    expect(outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome).toBeInstanceOf(FunctionTimedOutError);
    expect((outcome as Error).message).toBe(
      `Coordinator: Task timed out after ${coordinator.timeoutSeconds}.00 seconds`,
    );
  });

  test("given a handler that answers in time or throws, its answer or its error is passed on unchanged", async () => {
    const quick = withFunctionTimeout("Quick", 1_000, (n: number) => Promise.resolve(n + 1));
    await expect(quick(1)).resolves.toBe(2);
    const throws = withFunctionTimeout("Throws", 1_000, (): Promise<never> => {
      throw new TypeError("bad input");
    });
    await expect(throws(undefined)).rejects.toThrow(TypeError);
    expect(() => withFunctionTimeout("Zero", 0, quick)).toThrow(
      "Zero: the timeout must be a whole number of ms ≥ 1, got 0",
    );
  });
});

describe("a queue's batch that outlives its function's timeout", () => {
  function slowFirstRun(timeoutMs: number | undefined) {
    const receives: number[] = [];
    const errors: unknown[] = [];
    const firstRun = gate();
    const consumer = async (event: { Records: SqsRecord[] }) => {
      const receive = Number(event.Records[0]!.attributes.ApproximateReceiveCount);
      receives.push(receive);
      // The first run takes as long as the test lets it; a later one answers at once.
      if (receive === 1) await firstRun.wait;
      return { batchItemFailures: [] };
    };
    const queue = new LocalQueue({
      name: "TimeoutQueue",
      consumer: timeoutMs === undefined ? consumer : withFunctionTimeout("Consumer", timeoutMs, consumer),
      batchSize: 10,
      batchingWindowMs: 0,
      maxConcurrency: 2,
      visibilityTimeoutMs: 300,
      onError: (error) => errors.push(error),
    });
    return { queue, receives, errors, firstRun };
  }

  test("given a 50 ms function, when its first run answers success only after the timeout, then the batch failed all the same: the message comes back after its visibility timeout", async () => {
    const { queue, receives, errors, firstRun } = slowFirstRun(50);
    queue.send("work");
    await vi.waitFor(() => expect(errors).toHaveLength(1), { timeout: 5_000 });
    expect(errors[0]).toBeInstanceOf(FunctionTimedOutError);
    // The first run answers now, within the visibility timeout: too late, it deletes nothing.
    firstRun.open();
    await vi.waitFor(() => expect(receives).toEqual([1, 2]), { timeout: 5_000 });
    await queue.idle();
    expect(queue.stats()).toMatchObject({ sent: 1, batches: 2, redelivered: 1, deadLettered: 0 });
    await queue.close();
  });

  test("given no timeout, the same slow first run succeeds: delivered once (what the embedded runtime did before, kinder than Lambda)", async () => {
    const { queue, receives, errors, firstRun } = slowFirstRun(undefined);
    queue.send("work");
    await vi.waitFor(() => expect(receives).toEqual([1]), { timeout: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    firstRun.open();
    await queue.idle();
    expect(errors).toEqual([]);
    expect(queue.stats()).toMatchObject({ sent: 1, batches: 1, redelivered: 0 });
    await queue.close();
  });
});

describe("a Step Functions task whose function outlives its timeout", () => {
  test("given the lifecycle's own Retry block, when the first invocation times out, then it fails as Lambda.Unknown and the retry succeeds", async () => {
    // The retrier of the session lifecycle's Lambda tasks, as written in its ASL.
    const lifecycle = JSON.parse(readFileSync("statemachines/session-lifecycle.asl.json", "utf8")) as {
      States: Record<string, { Retry?: unknown }>;
    };
    const retry = lifecycle.States["Requeued"]!.Retry;
    const firstRun = gate();
    let calls = 0;
    const slowOnce = withFunctionTimeout("SlowOnce", 50, async (_payload: JsonValue) => {
      calls++;
      if (calls === 1) await firstRun.wait;
      return { call: calls };
    });
    const service = new LocalStepFunctions({ SlowOnce: slowOnce });
    try {
      const { stateMachineArn } = await service.createStateMachine({
        name: "timeout-flow",
        definition: JSON.stringify({
          StartAt: "Call",
          States: {
            Call: {
              Type: "Task",
              Resource: "arn:aws:states:::lambda:invoke",
              Parameters: { FunctionName: "SlowOnce", Payload: {} },
              OutputPath: "$.Payload",
              Retry: retry,
              End: true,
            },
          },
        }),
      });
      const { executionArn } = await service.startExecution({ stateMachineArn, name: "slow-once" });
      const done = await service.waitForExecution(executionArn!, 15_000);
      expect(done.status).toBe("SUCCEEDED");
      expect(JSON.parse(done.output ?? "null")).toEqual({ call: 2 });
      const events = (await service.getExecutionHistory({ executionArn: executionArn! })).events ?? [];
      const failed = events.filter((e) => e.type === "TaskFailed");
      expect(failed).toHaveLength(1);
      expect(failed[0]!.taskFailedEventDetails?.error).toBe("Lambda.Unknown");
      expect(failed[0]!.taskFailedEventDetails?.cause).toBe(
        'The cause could not be determined because Lambda did not return an error type. Returned payload: {"errorMessage":"SlowOnce: Task timed out after 0.05 seconds"}',
      );
    } finally {
      firstRun.open();
      await service.close();
    }
  });
});
