/** The deployment and route state machines' executions. */
import type { FamilyExecution, FamilyLeaving } from "../deployments/model.ts";

/** The family state machines' executions (adapters/sfn/family-executions.ts). */
export interface FamilyExecutionsPort {
  /** Starts the execution `execution.name`; one that exists already is left as it is. */
  startDeployment(deploymentId: string, execution: FamilyExecution): Promise<void>;
  startRoute(routeId: string, execution: FamilyExecution): Promise<void>;
  /** Sends the callback; a token already used or timed out is "already-closed". */
  complete(taskToken: string, leaving: FamilyLeaving): Promise<"completed" | "already-closed">;
}
