/**
 * One Standard-workflow execution: the state-by-state loop, its history, status and
 * transition count, its task attempts and timers, and how it ends (succeeded, failed, timed
 * out, aborted). The service (service.ts) owns the set of executions and the token registry.
 */
import type { ExecutionStatus, HistoryEventType } from "@aws-sdk/client-sfn";
import { LOCAL_ROLE_ARN } from "./arns.ts";
import { EXECUTION_CONTEXT_KEY } from "./context-paths.ts";
import type { CompiledDefinition, TaskSpec } from "./definition.ts";
import { AslError, EXECUTION_CLOSED_ERROR, StatesErrorName } from "./errors.ts";
import { EMPTY_DATA_DETAILS, HistoryLog, stateEventType, type HistoryDetails } from "./history.ts";
import { FaultKind } from "./faults.ts";
import { invokedFunction, invokeResource, type Invokers } from "./invoke.ts";
import { toJsonText, utf8Bytes, type JsonValue } from "./json.ts";
import {
  MAX_HISTORY_EVENTS,
  MAX_PAYLOAD_BYTES,
  MAX_TASK_TIMEOUT_SECONDS,
  MAX_TIMER_SECONDS,
} from "./limits.ts";
import { evaluateReferencePath } from "./reference-path.ts";
import { runState, type StateEntry, type StateRunHost, type TaskRunner } from "./state-runner.ts";
import { TaskAttempt, type AttemptHost } from "./task-attempt.ts";
import { mintTaskToken } from "./task-tokens.ts";

export interface ExecutionHost {
  readonly invokers: Invokers;
  readonly clock: () => number;
  registerToken(token: string, attempt: TaskAttempt): void;
  releaseToken(token: string): void;
}

export interface MachineRef {
  readonly name: string;
  readonly arn: string;
  readonly compiled: CompiledDefinition;
}

/** Yield to the event loop this often, so a tight Pass/Choice loop cannot starve the HTTP endpoint. */
const TRANSITIONS_PER_YIELD = 64;

export class Execution implements StateRunHost, AttemptHost {
  readonly arn: string;
  readonly name: string;
  readonly machine: MachineRef;
  readonly inputText: string;
  readonly startMs: number;
  readonly history: HistoryLog;
  readonly context: Record<string, unknown>;
  readonly nestedTasks: readonly TaskSpec[];
  /** States entered plus task retries: what AWS bills a Standard workflow for. */
  stateTransitions = 0;
  status: ExecutionStatus = "RUNNING";
  stopMs: number | undefined;
  outputText: string | undefined;
  error: string | undefined;
  cause: string | undefined;
  /** Settles when the execution has ended, however it ended. */
  readonly done: Promise<void>;

  readonly #host: ExecutionHost;
  readonly #input: JsonValue;
  readonly #openAttempts = new Set<TaskAttempt>();
  #resolveDone!: () => void;
  #entry: StateEntry | undefined;
  #pendingToken: string | undefined;
  #currentRun: { abort(): void } | undefined;
  #machineTimer: NodeJS.Timeout | undefined;

  constructor(
    host: ExecutionHost,
    machine: MachineRef,
    arn: string,
    name: string,
    inputText: string,
    input: JsonValue,
  ) {
    this.#host = host;
    this.machine = machine;
    this.arn = arn;
    this.name = name;
    this.inputText = inputText;
    this.#input = input;
    this.startMs = host.clock();
    this.history = new HistoryLog(host.clock);
    this.nestedTasks = [...machine.compiled.tasks.values()].filter((t) => t.nested);
    this.context = this.#buildContext();
    this.done = new Promise((resolve) => (this.#resolveDone = resolve));
    this.history.append("ExecutionStarted", {
      executionStartedEventDetails: {
        input: inputText,
        inputDetails: EMPTY_DATA_DETAILS,
        roleArn: LOCAL_ROLE_ARN,
      },
    });
  }

  get isClosed(): boolean {
    return this.status !== "RUNNING";
  }

  /** Starts the loop on a later turn, so StartExecution answers before the first state runs. */
  start(): void {
    const timeoutSeconds = this.machine.compiled.timeoutSeconds;
    if (timeoutSeconds !== undefined) {
      this.#machineTimer = setTimeout(
        () =>
          this.#end("TIMED_OUT", "ExecutionTimedOut", {
            executionTimedOutEventDetails: {
              error: StatesErrorName.Timeout,
              cause: "The execution timed out",
            },
          }),
        Math.min(timeoutSeconds, MAX_TIMER_SECONDS) * 1000,
      );
    }
    setImmediate(() => {
      this.#loop().catch((error: unknown) =>
        this.#fail(StatesErrorName.Runtime, `local runtime error: ${String(error)}`),
      );
    });
  }

  /** StopExecution. */
  stop(error: string | undefined, cause: string | undefined): void {
    this.#end(
      "ABORTED",
      "ExecutionAborted",
      { executionAbortedEventDetails: { error, cause } },
      { error, cause },
    );
  }

  // --- StateRunHost -------------------------------------------------------------------------

  setCurrentRun(run: { abort(): void } | undefined): void {
    this.#currentRun = run;
  }

  taskRunner(spec: TaskSpec, entry: StateEntry | undefined): TaskRunner {
    return (effectiveInput) => this.#startAttempt(spec, entry, effectiveInput);
  }

  // --- AttemptHost --------------------------------------------------------------------------

  /** Appends to the history; the event that would leave no room for the final one fails the execution instead. */
  record(type: HistoryEventType, details: HistoryDetails): void {
    if (this.isClosed) return;
    if (this.history.length >= MAX_HISTORY_EVENTS - 1) {
      this.#fail(
        StatesErrorName.Runtime,
        `The execution reached the maximum number of history events (${MAX_HISTORY_EVENTS}).`,
      );
      return;
    }
    this.history.append(type, details);
  }

  closed(attempt: TaskAttempt): void {
    this.#openAttempts.delete(attempt);
    if (attempt.token !== undefined) this.#host.releaseToken(attempt.token);
  }

  // --- the loop -----------------------------------------------------------------------------

  async #loop(): Promise<void> {
    const { compiled } = this.machine;
    let name = compiled.startAt;
    let input = this.#input;
    let sinceYield = 0;
    while (!this.isClosed) {
      if (++sinceYield >= TRANSITIONS_PER_YIELD) {
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
        if (this.isClosed) return;
      }
      const state = compiled.states.get(name);
      if (!state) return this.#fail(StatesErrorName.Runtime, `state '${name}' does not exist`);
      this.record(stateEventType(state.type, "Entered"), {
        stateEnteredEventDetails: { name, input: toJsonText(input), inputDetails: EMPTY_DATA_DETAILS },
      });
      if (this.isClosed) return;
      this.stateTransitions++;

      const timeouts = state.task && !state.task.nested ? this.#taskTimeouts(state.task, input) : undefined;
      if (typeof timeouts === "string") return this.#fail(StatesErrorName.Runtime, timeouts);
      const entry: StateEntry = {
        state,
        input,
        enteredAtMs: this.#host.clock(),
        attempts: 0,
        timeoutSeconds: timeouts?.timeoutSeconds,
        heartbeatSeconds: timeouts?.heartbeatSeconds,
      };
      this.#entry = entry;
      this.#pendingToken = undefined;
      const outcome = await runState(this, entry);
      this.#entry = undefined;
      this.#pendingToken = undefined;
      for (const attempt of [...this.#openAttempts]) attempt.abandon();
      if (this.isClosed || outcome.kind === "aborted") return;
      if (outcome.kind === "failed") return this.#fail(outcome.error, outcome.cause);

      const outputText = toJsonText(outcome.output);
      if (utf8Bytes(outputText) > MAX_PAYLOAD_BYTES) {
        return this.#fail(
          StatesErrorName.DataLimitExceeded,
          `The state/task '${name}' returned a result with a size exceeding the maximum number of bytes service limit.`,
        );
      }
      this.record(stateEventType(state.type, "Exited"), {
        stateExitedEventDetails: { name, output: outputText, outputDetails: EMPTY_DATA_DETAILS },
      });
      if (outcome.kind === "end") {
        this.#end(
          "SUCCEEDED",
          "ExecutionSucceeded",
          { executionSucceededEventDetails: { output: outputText, outputDetails: EMPTY_DATA_DETAILS } },
          { output: outputText },
        );
        return;
      }
      name = outcome.next;
      input = outcome.output;
    }
  }

  /** TimeoutSeconds(Path) and HeartbeatSeconds(Path), the paths read from the state input as AWS does. */
  #taskTimeouts(
    spec: TaskSpec,
    stateInput: JsonValue,
  ): { timeoutSeconds: number | undefined; heartbeatSeconds: number | undefined } | string {
    const read = (path: string, field: string): number | string => {
      const value = evaluateReferencePath(path, stateInput, this.context);
      if (
        typeof value !== "number" ||
        !Number.isInteger(value) ||
        value < 1 ||
        value > MAX_TASK_TIMEOUT_SECONDS
      ) {
        return `state '${spec.name}': ${field} '${path}' must select an integer from 1 to ${MAX_TASK_TIMEOUT_SECONDS}, found ${toJsonText(value)}`;
      }
      return value;
    };
    const timeout = spec.timeoutSecondsPath
      ? read(spec.timeoutSecondsPath, "TimeoutSecondsPath")
      : spec.timeoutSeconds;
    if (typeof timeout === "string") return timeout;
    const heartbeat = spec.heartbeatSecondsPath
      ? read(spec.heartbeatSecondsPath, "HeartbeatSecondsPath")
      : spec.heartbeatSeconds;
    if (typeof heartbeat === "string") return heartbeat;
    return { timeoutSeconds: timeout, heartbeatSeconds: heartbeat };
  }

  /** Called by the interpreter for each attempt of a Task state, right after it evaluated Parameters. */
  #startAttempt(
    spec: TaskSpec,
    entry: StateEntry | undefined,
    effectiveInput: JsonValue,
  ): Promise<JsonValue> {
    // The token `$$.Task.Token` produced while this attempt's Parameters were evaluated (same tick).
    const mintedToken = this.#pendingToken;
    this.#pendingToken = undefined;
    if (this.isClosed) {
      return Promise.reject(
        new AslError(EXECUTION_CLOSED_ERROR, "the execution is no longer running", { terminal: true }),
      );
    }
    if (entry && entry.attempts++ > 0) this.stateTransitions++;
    const resource = spec.resource;
    const callback = resource.kind === "integration" && resource.pattern === "callback";
    if (utf8Bytes(toJsonText(effectiveInput)) > MAX_PAYLOAD_BYTES) {
      return Promise.reject(
        new AslError(
          StatesErrorName.DataLimitExceeded,
          `The input of state '${spec.name}' after Parameters exceeds the maximum number of bytes service limit.`,
          { terminal: true },
        ),
      );
    }
    const attempt = new TaskAttempt(this, {
      stateName: spec.name,
      resource,
      parameters: effectiveInput,
      token: callback ? (mintedToken ?? mintTaskToken()) : undefined,
      timeoutSeconds: entry ? entry.timeoutSeconds : spec.timeoutSeconds,
      heartbeatSeconds: callback ? (entry ? entry.heartbeatSeconds : spec.heartbeatSeconds) : undefined,
    });
    if (!attempt.isOpen) return attempt.promise; // recording its first events ended the execution
    this.#openAttempts.add(attempt);
    if (attempt.token !== undefined) this.#host.registerToken(attempt.token, attempt);

    // Invoke on a later microtask: the interpreter arms its timer for this attempt first.
    const timeoutFault = this.#host.invokers.faults?.take([FaultKind.TaskTimeout], {
      state: spec.name,
      function: invokedFunction(resource, effectiveInput),
    });
    void Promise.resolve()
      .then(() => invokeResource(resource, effectiveInput, this.#host.invokers, spec.name))
      .then(
        (result) => {
          // Injected: the task timed out once the call had returned (a callback task after its
          // token was handed out), so whatever the call did stands and its result is dropped.
          if (timeoutFault) return attempt.timeOutNow();
          if (callback) return attempt.submitted(result);
          if (utf8Bytes(toJsonText(result)) > MAX_PAYLOAD_BYTES) {
            return attempt.fail(
              new AslError(
                StatesErrorName.DataLimitExceeded,
                `The state/task '${spec.name}' returned a result with a size exceeding the maximum number of bytes service limit.`,
                { terminal: true },
              ),
            );
          }
          attempt.succeed(result);
        },
        (error: unknown) =>
          attempt.fail(error instanceof AslError ? error : new AslError("Error", String(error))),
      );
    return attempt.promise;
  }

  // --- the context object ($$) --------------------------------------------------------------

  /**
   * `$$` for the interpreter. `Task.Token` is a getter: evaluating `"x.$": "$$.Task.Token"`
   * mints the token of the attempt whose Parameters are being evaluated (the same token however
   * often it is read); #startAttempt, which the interpreter calls right after, claims it.
   * `State.*` follows the current state entry. `$$.Execution.*` is read through
   * EXECUTION_CONTEXT_KEY (see context-paths.ts).
   */
  #buildContext(): Record<string, unknown> {
    const execution = {
      Id: this.arn,
      Name: this.name,
      RoleArn: LOCAL_ROLE_ARN,
      StartTime: new Date(this.startMs).toISOString(),
      Input: this.#input,
      RedriveCount: 0,
    };
    const state = {};
    Object.defineProperties(state, {
      Name: { enumerable: true, get: () => this.#entry?.state.name },
      EnteredTime: {
        enumerable: true,
        get: () => (this.#entry ? new Date(this.#entry.enteredAtMs).toISOString() : undefined),
      },
      RetryCount: { enumerable: true, get: () => this.#entry?.attempts ?? 0 },
    });
    const task = {};
    Object.defineProperty(task, "Token", {
      enumerable: true,
      get: () => (this.#pendingToken ??= mintTaskToken()),
    });
    return {
      Execution: execution,
      [EXECUTION_CONTEXT_KEY]: execution,
      StateMachine: { Id: this.machine.arn, Name: this.machine.name },
      State: state,
      Task: task,
    };
  }

  // --- ending -------------------------------------------------------------------------------

  #fail(error: string | undefined, cause: string | undefined): void {
    this.#end(
      "FAILED",
      "ExecutionFailed",
      { executionFailedEventDetails: { error, cause } },
      { error, cause },
    );
  }

  #end(
    status: ExecutionStatus,
    type: HistoryEventType,
    details: HistoryDetails,
    fields: { output?: string; error?: string | undefined; cause?: string | undefined } = {},
  ): void {
    if (this.isClosed) return;
    this.status = status;
    this.stopMs = this.#host.clock();
    this.outputText = fields.output;
    this.error = fields.error;
    this.cause = fields.cause;
    this.history.append(type, details);
    clearTimeout(this.#machineTimer);
    const run = this.#currentRun;
    this.#currentRun = undefined;
    run?.abort();
    for (const attempt of [...this.#openAttempts]) attempt.abandon();
    this.#resolveDone();
  }
}
