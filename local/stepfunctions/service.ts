/**
 * LocalStepFunctions: an in-process Step Functions service (Standard workflows) that runs the
 * real ASL with aws-local-stepfunctions, invokes Lambda handlers in-process, and answers the
 * Step Functions API with AWS's shapes and error codes (the SDK's own input/output types).
 * server.ts puts it behind the AWS JSON 1.0 protocol for `@aws-sdk/client-sfn`.
 */
/* eslint-disable @typescript-eslint/require-await -- the API methods are async like the SDK's, so every refusal is a rejection, never a synchronous throw */
import { randomUUID } from "node:crypto";
import type {
  DescribeExecutionInput,
  DescribeExecutionOutput,
  DescribeStateMachineInput,
  DescribeStateMachineOutput,
  ExecutionListItem,
  ExecutionStatus,
  GetExecutionHistoryInput,
  GetExecutionHistoryOutput,
  HistoryEvent,
  ListExecutionsInput,
  ListExecutionsOutput,
  ListStateMachinesInput,
  ListStateMachinesOutput,
  SendTaskFailureInput,
  SendTaskHeartbeatInput,
  SendTaskSuccessInput,
  StartExecutionInput,
  StartExecutionOutput,
  StopExecutionInput,
  StopExecutionOutput,
} from "@aws-sdk/client-sfn";
import {
  LOCAL_ROLE_ARN,
  executionArn,
  parseExecutionArn,
  parseStateMachineArn,
  stateMachineArn,
  validateName,
} from "./arns.ts";
import { LAMBDA_INVOKE_KEY, compileDefinition, type CompiledDefinition } from "./definition.ts";
import { AslError, SfnApiError } from "./errors.ts";
import { Execution, type ExecutionHost } from "./execution.ts";
import { FaultInjector, FaultKind, type FaultOptions } from "./faults.ts";
import { invokedFunction, type IntegrationHandler, type Invokers, type LambdaHandler } from "./invoke.ts";
import { utf8Bytes, type JsonValue } from "./json.ts";
import { MAX_CAUSE_CHARS, MAX_ERROR_CHARS, MAX_PAYLOAD_BYTES } from "./limits.ts";
import { page } from "./pagination.ts";
import type { TaskAttempt } from "./task-attempt.ts";
import { isWellFormedTaskToken } from "./task-tokens.ts";

export interface LocalStepFunctionsOptions {
  /**
   * Handlers for service integrations other than Lambda, keyed `service:action` as in the
   * Resource `arn:aws:states:::service:action` (e.g. `events:putEvents`, `aws-sdk:dynamodb:putItem`).
   * @default none: a definition using another integration is rejected at createStateMachine.
   */
  readonly integrations?: Readonly<Record<string, IntegrationHandler>>;
  /** Epoch milliseconds for history timestamps and execution dates. @default Date.now */
  readonly clock?: () => number;
  /** AWS faults to inject (faults.ts). @default none */
  readonly faults?: FaultOptions;
}

export interface CreateStateMachineInput {
  readonly name: string;
  /** The ASL definition, as an object or as JSON text (already substituted). */
  readonly definition: object | string;
}

export interface CreateStateMachineOutput {
  readonly stateMachineArn: string;
  readonly creationDate: Date;
}

/** DescribeExecution's answer plus the local metric: state transitions so far (AWS bills per transition). */
export type LocalDescribeExecutionOutput = DescribeExecutionOutput & { stateTransitions: number };

interface MachineRecord {
  readonly name: string;
  readonly arn: string;
  readonly definitionText: string;
  readonly compiled: CompiledDefinition;
  readonly creationMs: number;
  readonly executions: Execution[];
}

export class LocalStepFunctions {
  /**
   * The fault switches (none unless `options.faults`), and the faults that fired. Tests switch
   * them per scenario with `faults.set(...)`.
   */
  readonly faults: FaultInjector;
  readonly #machines = new Map<string, MachineRecord>();
  readonly #executions = new Map<string, Execution>();
  readonly #tokens = new Map<string, TaskAttempt>();
  readonly #invokers: Invokers;
  readonly #clock: () => number;
  readonly #host: ExecutionHost;
  #closed = false;

  /** @param functions Lambda handlers by function name (`FunctionName` may name them by name or ARN). */
  constructor(functions: Readonly<Record<string, LambdaHandler>>, options: LocalStepFunctionsOptions = {}) {
    this.faults = new FaultInjector(options.faults);
    this.#invokers = {
      functions: new Map(Object.entries(functions)),
      integrations: new Map(Object.entries(options.integrations ?? {})),
      faults: this.faults,
    };
    this.#clock = options.clock ?? Date.now;
    this.#host = {
      invokers: this.#invokers,
      clock: this.#clock,
      registerToken: (token, attempt) => this.#tokens.set(token, attempt),
      releaseToken: (token) => this.#tokens.delete(token),
    };
  }

  // --- state machines -----------------------------------------------------------------------

  async createStateMachine(input: CreateStateMachineInput): Promise<CreateStateMachineOutput> {
    this.#assertOpen();
    const name = validateName(input?.name, "name");
    let definition: unknown = input.definition;
    if (typeof definition === "string") {
      try {
        definition = JSON.parse(definition);
      } catch (error) {
        throw new SfnApiError(
          "InvalidDefinition",
          `Invalid State Machine Definition: ${(error as Error).message}`,
        );
      }
    }
    const definitionText = JSON.stringify(definition);
    const existing = this.#machines.get(name);
    if (existing) {
      // AWS: creating the same machine again is idempotent; a different definition conflicts.
      if (existing.definitionText === definitionText) {
        return { stateMachineArn: existing.arn, creationDate: new Date(existing.creationMs) };
      }
      throw new SfnApiError("StateMachineAlreadyExists", `State Machine Already Exists: '${existing.arn}'`);
    }
    const compiled = compileDefinition(definition, {
      hasFunction: (fn) => this.#invokers.functions.has(fn),
      hasIntegration: (key) => key === LAMBDA_INVOKE_KEY || this.#invokers.integrations.has(key),
    });
    const record: MachineRecord = {
      name,
      arn: stateMachineArn(name),
      definitionText,
      compiled,
      creationMs: this.#clock(),
      executions: [],
    };
    this.#machines.set(name, record);
    return { stateMachineArn: record.arn, creationDate: new Date(record.creationMs) };
  }

  async describeStateMachine(input: DescribeStateMachineInput): Promise<DescribeStateMachineOutput> {
    const machine = this.#machine(input?.stateMachineArn);
    return {
      stateMachineArn: machine.arn,
      name: machine.name,
      status: "ACTIVE",
      definition: machine.definitionText,
      roleArn: LOCAL_ROLE_ARN,
      type: "STANDARD",
      creationDate: new Date(machine.creationMs),
    };
  }

  async listStateMachines(input: ListStateMachinesInput = {}): Promise<ListStateMachinesOutput> {
    const all = [...this.#machines.values()];
    const { items, nextToken } = page(all, "ListStateMachines", input.maxResults, input.nextToken);
    return {
      stateMachines: items.map((m) => ({
        stateMachineArn: m.arn,
        name: m.name,
        type: "STANDARD",
        creationDate: new Date(m.creationMs),
      })),
      nextToken,
    };
  }

  // --- executions ---------------------------------------------------------------------------

  async startExecution(input: StartExecutionInput): Promise<StartExecutionOutput> {
    this.#assertOpen();
    const machine = this.#machine(input?.stateMachineArn);
    const name = input.name === undefined ? randomUUID() : validateName(input.name, "name");
    const inputText = input.input ?? "{}";
    if (typeof inputText !== "string") {
      throw new SfnApiError(
        "InvalidExecutionInput",
        "Invalid State Machine Execution Input: input must be a JSON string",
      );
    }
    if (utf8Bytes(inputText) > MAX_PAYLOAD_BYTES) {
      throw new SfnApiError(
        "ValidationException",
        `1 validation error detected: Value at 'input' failed to satisfy constraint: Member must have length less than or equal to ${MAX_PAYLOAD_BYTES}`,
      );
    }
    let parsed: JsonValue;
    try {
      parsed = JSON.parse(inputText) as JsonValue;
    } catch (error) {
      throw new SfnApiError(
        "InvalidExecutionInput",
        `Invalid State Machine Execution Input: ${(error as Error).message}`,
      );
    }

    const arn = executionArn(machine.name, name);
    const existing = this.#executions.get(arn);
    if (existing) {
      // AWS Standard: the same name and input while the execution is open returns it (idempotent
      // start); a different input, or a closed execution, is ExecutionAlreadyExists.
      if (!existing.isClosed && existing.inputText === inputText) {
        return { executionArn: existing.arn, startDate: new Date(existing.startMs) };
      }
      throw new SfnApiError("ExecutionAlreadyExists", `Execution Already Exists: '${arn}'`);
    }
    const execution = new Execution(this.#host, machine, arn, name, inputText, parsed);
    this.#executions.set(arn, execution);
    machine.executions.push(execution);
    execution.start();
    return { executionArn: arn, startDate: new Date(execution.startMs) };
  }

  async describeExecution(input: DescribeExecutionInput): Promise<LocalDescribeExecutionOutput> {
    return describe(this.#execution(input?.executionArn));
  }

  async listExecutions(input: ListExecutionsInput): Promise<ListExecutionsOutput> {
    const machine = this.#machine(input?.stateMachineArn);
    const filter = input.statusFilter;
    const statuses: readonly string[] = [
      "RUNNING",
      "SUCCEEDED",
      "FAILED",
      "TIMED_OUT",
      "ABORTED",
      "PENDING_REDRIVE",
    ];
    if (filter !== undefined && !statuses.includes(filter)) {
      throw new SfnApiError("ValidationException", `statusFilter must be one of ${statuses.join(", ")}`);
    }
    // Newest first, as AWS lists them.
    const matching = machine.executions.filter((e) => filter === undefined || e.status === filter).reverse();
    const scope = `ListExecutions:${machine.arn}:${filter ?? ""}`;
    const { items, nextToken } = page(matching, scope, input.maxResults, input.nextToken);
    return { executions: items.map(listItem), nextToken };
  }

  async getExecutionHistory(input: GetExecutionHistoryInput): Promise<GetExecutionHistoryOutput> {
    const execution = this.#execution(input?.executionArn);
    let events = execution.history.all();
    if (input.reverseOrder) events.reverse();
    if (input.includeExecutionData === false) events = events.map(withoutData);
    const scope = `GetExecutionHistory:${execution.arn}:${input.reverseOrder ? "r" : "f"}`;
    const { items, nextToken } = page(events, scope, input.maxResults, input.nextToken);
    return { events: items, nextToken };
  }

  async stopExecution(input: StopExecutionInput): Promise<StopExecutionOutput> {
    const execution = this.#execution(input?.executionArn);
    checkLength(input.error, "error", MAX_ERROR_CHARS);
    checkLength(input.cause, "cause", MAX_CAUSE_CHARS);
    execution.stop(input.error, input.cause);
    return { stopDate: new Date(execution.stopMs ?? this.#clock()) };
  }

  /** Local helper (not an AWS API): resolves once the execution has ended. */
  async waitForExecution(
    executionArnValue: string,
    timeoutMs = 30_000,
  ): Promise<LocalDescribeExecutionOutput> {
    const execution = this.#execution(executionArnValue);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`execution ${execution.arn} still ${execution.status} after ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([execution.done, timedOut]);
    } finally {
      clearTimeout(timer);
    }
    return describe(execution);
  }

  // --- task tokens --------------------------------------------------------------------------

  async sendTaskSuccess(input: SendTaskSuccessInput): Promise<Record<string, never>> {
    const token = checkToken(input?.taskToken);
    const outputText = input.output;
    if (typeof outputText !== "string")
      throw new SfnApiError("ValidationException", "output is required and must be a string");
    if (utf8Bytes(outputText) > MAX_PAYLOAD_BYTES) {
      throw new SfnApiError(
        "ValidationException",
        `1 validation error detected: Value at 'output' failed to satisfy constraint: Member must have length less than or equal to ${MAX_PAYLOAD_BYTES}`,
      );
    }
    let output: JsonValue;
    try {
      output = JSON.parse(outputText) as JsonValue;
    } catch (error) {
      throw new SfnApiError("InvalidOutput", `Invalid Output: ${(error as Error).message}`);
    }
    const attempt = this.#openAttempt(token);
    const fault = this.faults.take([FaultKind.SendTaskSuccessTimedOut], {
      state: attempt.settings.stateName,
      function: invokedFunction(attempt.settings.resource, attempt.settings.parameters),
    });
    if (fault) {
      // The task's timer fired just before this call arrived: AWS closes the task, then refuses.
      attempt.timeOutNow();
      this.#openAttempt(token);
    }
    attempt.succeed(output);
    return {};
  }

  async sendTaskFailure(input: SendTaskFailureInput): Promise<Record<string, never>> {
    const token = checkToken(input?.taskToken);
    checkLength(input.error, "error", MAX_ERROR_CHARS);
    checkLength(input.cause, "cause", MAX_CAUSE_CHARS);
    this.#openAttempt(token).fail(new AslError(input.error ?? "", input.cause ?? ""));
    return {};
  }

  async sendTaskHeartbeat(input: SendTaskHeartbeatInput): Promise<Record<string, never>> {
    this.#openAttempt(checkToken(input?.taskToken)).heartbeat();
    return {};
  }

  // --- lifecycle ----------------------------------------------------------------------------

  /** Aborts every running execution, clears every timer, and refuses further calls. */
  async close(): Promise<void> {
    this.#closed = true;
    const running = [...this.#executions.values()].filter((e) => !e.isClosed);
    for (const execution of running)
      execution.stop("Local.ServiceClosed", "the local Step Functions service was closed");
    await Promise.all(running.map((e) => e.done));
    this.#tokens.clear();
  }

  // --- lookups ------------------------------------------------------------------------------

  #assertOpen(): void {
    if (this.#closed) throw new SfnApiError("ServiceClosed", "the local Step Functions service is closed");
  }

  #machine(arn: unknown): MachineRecord {
    const name = parseStateMachineArn(arn);
    const machine = this.#machines.get(name);
    if (!machine || machine.arn !== arn) {
      throw new SfnApiError("StateMachineDoesNotExist", `State Machine Does Not Exist: '${String(arn)}'`);
    }
    return machine;
  }

  #execution(arn: unknown): Execution {
    parseExecutionArn(arn);
    const execution = this.#executions.get(arn as string);
    if (!execution)
      throw new SfnApiError("ExecutionDoesNotExist", `Execution Does Not Exist: '${String(arn)}'`);
    return execution;
  }

  #openAttempt(token: string): TaskAttempt {
    const attempt = this.#tokens.get(token);
    if (!attempt?.isOpen) {
      // AWS answers a completed, timed-out or stopped task's token this way.
      throw new SfnApiError("TaskTimedOut", "Task Timed Out: 'Provided task does not exist anymore'");
    }
    return attempt;
  }
}

function checkToken(token: unknown): string {
  if (typeof token !== "string" || token.length === 0 || token.length > 2048) {
    throw new SfnApiError("ValidationException", "taskToken is required: a string of 1 to 2048 characters");
  }
  if (!isWellFormedTaskToken(token)) throw new SfnApiError("InvalidToken", "Invalid Token: 'Invalid token'");
  return token;
}

function checkLength(value: unknown, field: string, max: number): void {
  if (value === undefined) return;
  if (typeof value !== "string" || value.length > max) {
    throw new SfnApiError("ValidationException", `${field} must be a string of at most ${max} characters`);
  }
}

function describe(execution: Execution): LocalDescribeExecutionOutput {
  return {
    executionArn: execution.arn,
    stateMachineArn: execution.machine.arn,
    name: execution.name,
    status: execution.status,
    startDate: new Date(execution.startMs),
    stopDate: execution.stopMs === undefined ? undefined : new Date(execution.stopMs),
    input: execution.inputText,
    inputDetails: { included: true },
    output: execution.outputText,
    outputDetails: execution.outputText === undefined ? undefined : { included: true },
    error: execution.error,
    cause: execution.cause,
    stateTransitions: execution.stateTransitions,
  };
}

function listItem(execution: Execution): ExecutionListItem {
  return {
    executionArn: execution.arn,
    stateMachineArn: execution.machine.arn,
    name: execution.name,
    status: execution.status satisfies ExecutionStatus,
    startDate: new Date(execution.startMs),
    stopDate: execution.stopMs === undefined ? undefined : new Date(execution.stopMs),
  };
}

/** includeExecutionData=false: the events without their inputs and outputs. */
function withoutData(event: HistoryEvent): HistoryEvent {
  const copy: Record<string, unknown> = { ...event };
  for (const [key, value] of Object.entries(copy)) {
    if (key.endsWith("EventDetails") && value && typeof value === "object") {
      const details: Record<string, unknown> = { ...(value as Record<string, unknown>) };
      delete details["input"];
      delete details["output"];
      copy[key] = details;
    }
  }
  return copy as unknown as HistoryEvent;
}
