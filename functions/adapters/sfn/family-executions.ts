/**
 * The deployment and route lifecycles' executions on Step Functions: start one named
 * by the entity's id (or `<id>-g<n>`), and complete a waiting state's callback. A duplicate start
 * (the same name) is the same execution; a token already used or timed out means the state has
 * closed already.
 */
import {
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  StartExecutionCommand,
  type SFNClient,
} from "@aws-sdk/client-sfn";
import type { FamilyExecutionsPort } from "../../core/ports/family-executions.ts";
import type { FamilyExecution, FamilyLeaving } from "../../core/deployments/model.ts";
import { CLOSED_TOKEN_ERRORS, errorName } from "./lifecycle-executions.ts";

export interface FamilyStateMachineArns {
  readonly deploymentArn: string;
  readonly routeArn: string;
}

export class FamilyExecutions implements FamilyExecutionsPort {
  readonly #client: SFNClient;
  readonly #arns: FamilyStateMachineArns;

  constructor(client: SFNClient, arns: FamilyStateMachineArns) {
    this.#client = client;
    this.#arns = arns;
  }

  startDeployment(deploymentId: string, execution: FamilyExecution): Promise<void> {
    return this.#start(this.#arns.deploymentArn, execution.name, {
      deploymentId,
      generation: execution.generation,
    });
  }

  startRoute(routeId: string, execution: FamilyExecution): Promise<void> {
    return this.#start(this.#arns.routeArn, execution.name, { routeId, generation: execution.generation });
  }

  async #start(stateMachineArn: string, name: string, input: Record<string, unknown>): Promise<void> {
    try {
      await this.#client.send(
        new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify(input) }),
      );
    } catch (error) {
      if (errorName(error) !== "ExecutionAlreadyExists") throw error;
    }
  }

  async complete(taskToken: string, leaving: FamilyLeaving): Promise<"completed" | "already-closed"> {
    const payload = JSON.stringify(leaving.transition);
    try {
      if (leaving.error === undefined) {
        await this.#client.send(new SendTaskSuccessCommand({ taskToken, output: payload }));
      } else {
        await this.#client.send(
          new SendTaskFailureCommand({ taskToken, error: leaving.error, cause: payload }),
        );
      }
      return "completed";
    } catch (error) {
      if (CLOSED_TOKEN_ERRORS.has(errorName(error))) return "already-closed";
      throw error;
    }
  }
}
