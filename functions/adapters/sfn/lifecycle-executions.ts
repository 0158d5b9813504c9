/**
 * The Step Functions side of the lifecycle: start a session's execution (named by its id, so a
 * duplicate start is idempotent) and complete a stage's callback. A late or duplicate callback
 * (`TaskTimedOut`, `InvalidToken`, `TaskDoesNotExist`) means the stage already closed.
 */
import { SendTaskSuccessCommand, StartExecutionCommand, type SFNClient } from "@aws-sdk/client-sfn";
import type { StageTransition } from "../../core/model.ts";

export type CompletionOutcome = "completed" | "already-closed";

const CLOSED_TOKEN_ERRORS = new Set(["TaskTimedOut", "InvalidToken", "TaskDoesNotExist"]);

export class LifecycleExecutions {
  readonly #client: SFNClient;
  readonly #stateMachineArn: string;

  constructor(client: SFNClient, stateMachineArn: string) {
    this.#client = client;
    this.#stateMachineArn = stateMachineArn;
  }

  /** Starts the session's execution; an existing one with the same input is returned as is. */
  async start(
    sessionId: string,
    input: { sessionId: string; timeouts: Record<string, number> },
  ): Promise<string> {
    try {
      const out = await this.#client.send(
        new StartExecutionCommand({
          stateMachineArn: this.#stateMachineArn,
          name: sessionId,
          input: JSON.stringify(input),
        }),
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

  async complete(taskToken: string, transition: StageTransition): Promise<CompletionOutcome> {
    try {
      await this.#client.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(transition) }));
      return "completed";
    } catch (error) {
      if (CLOSED_TOKEN_ERRORS.has(errorName(error))) return "already-closed";
      throw error;
    }
  }
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : "";
}
