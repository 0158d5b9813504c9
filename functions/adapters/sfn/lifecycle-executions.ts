/**
 * The Step Functions side of the lifecycle: start a session's execution (named by its id, so a
 * duplicate start is idempotent), complete a stage's callback, and read an execution's status
 * (the sweep's repair of sessions without a live execution). A late or duplicate callback
 * (`TaskTimedOut`, `InvalidToken`, `TaskDoesNotExist`) means the stage already closed.
 */
import {
  DescribeExecutionCommand,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  StartExecutionCommand,
  type SFNClient,
} from "@aws-sdk/client-sfn";
import type { StageTransition } from "../../core/model.ts";
import { stageCompletion } from "../../core/transitions.ts";
import type { ExecutionInput, ExecutionState } from "../../core/ports/lifecycle-executions.ts";

export type CompletionOutcome = "completed" | "already-closed";

export const CLOSED_TOKEN_ERRORS: ReadonlySet<string> = new Set([
  "TaskTimedOut",
  "InvalidToken",
  "TaskDoesNotExist",
]);

export class LifecycleExecutions {
  readonly #client: SFNClient;
  readonly #stateMachineArn: string;

  constructor(client: SFNClient, stateMachineArn: string) {
    this.#client = client;
    this.#stateMachineArn = stateMachineArn;
  }

  /** Starts the session's execution; an existing one with the same input is returned as is. */
  async start(sessionId: string, input: ExecutionInput): Promise<string> {
    let json = JSON.stringify(input);
    if (input.known !== null && Buffer.byteLength(json) > MAX_KNOWN_OUTPUT_BYTES) {
      json = JSON.stringify({ ...input, known: null });
    }
    try {
      const out = await this.#client.send(
        new StartExecutionCommand({ stateMachineArn: this.#stateMachineArn, name: sessionId, input: json }),
      );
      return out.executionArn ?? "";
    } catch (error) {
      // Same name, different input: the session exists with another spec. The store's
      // create is the idempotency guard, so this only happens on a genuine id clash.
      if (errorName(error) === "ExecutionAlreadyExists") {
        return `${this.#stateMachineArn.replace(":stateMachine:", ":execution:")}:${sessionId}`;
      }
      throw error;
    }
  }

  /** The execution's status (DescribeExecution); undefined when no execution has the name. */
  async describe(executionName: string): Promise<ExecutionState | undefined> {
    const executionArn = `${this.#stateMachineArn.replace(":stateMachine:", ":execution:")}:${executionName}`;
    try {
      const out = await this.#client.send(new DescribeExecutionCommand({ executionArn }));
      const status = out.status ?? "";
      if (!EXECUTION_STATUSES.has(status))
        throw new Error(`execution ${executionArn}: unknown status "${status}"`);
      return {
        status: status as ExecutionState["status"],
        ...(out.error !== undefined ? { error: out.error } : {}),
        ...(out.cause !== undefined ? { cause: out.cause } : {}),
      };
    } catch (error) {
      if (errorName(error) === "ExecutionDoesNotExist") return undefined;
      throw error;
    }
  }

  async complete(taskToken: string, transition: StageTransition): Promise<CompletionOutcome> {
    try {
      const how = stageCompletion(transition);
      if (how.kind === "success") {
        const output = payloadWithin(transition, MAX_KNOWN_OUTPUT_BYTES, (p) => Buffer.byteLength(p));
        await this.#client.send(new SendTaskSuccessCommand({ taskToken, output }));
      } else {
        const cause = payloadWithin(transition, MAX_CAUSE_CHARS, (p) => p.length);
        await this.#client.send(new SendTaskFailureCommand({ taskToken, error: how.error, cause }));
      }
      return "completed";
    } catch (error) {
      if (CLOSED_TOKEN_ERRORS.has(errorName(error))) return "already-closed";
      throw error;
    }
  }
}

/**
 * A callback's output (or an execution's input) carries the session's copy (`known`) only up to
 * this size: it becomes a state's input, and a state's data is at most 256 KiB in all. Larger
 * sessions are read by the entry instead.
 */
const MAX_KNOWN_OUTPUT_BYTES = 64 * 1024;
/** SendTaskFailure's `cause` is at most 32,768 characters. */
const MAX_CAUSE_CHARS = 32_768;

/** The transition as JSON, without its session copy when the copy would not fit within `limit`. */
function payloadWithin(
  transition: StageTransition,
  limit: number,
  size: (payload: string) => number,
): string {
  const payload = JSON.stringify(transition);
  if (transition.known === undefined || size(payload) <= limit) return payload;
  const { known: _tooLarge, ...rest } = transition;
  return JSON.stringify(rest);
}

const EXECUTION_STATUSES: ReadonlySet<string> = new Set([
  "RUNNING",
  "SUCCEEDED",
  "FAILED",
  "TIMED_OUT",
  "ABORTED",
  "PENDING_REDRIVE",
]);

export function errorName(error: unknown): string {
  return error instanceof Error ? error.name : "";
}
