/**
 * The session lifecycle state machine's executions (statemachines/session-lifecycle.asl.json):
 * started per session, completed through the stage's task token. Implemented by
 * functions/adapters/sfn/lifecycle-executions.ts.
 */
import type { SessionWithKernels, StageTransition } from "../model.ts";
import type { ObservedExecution } from "../repair.ts";

/** A lifecycle execution as DescribeExecution reports it (AWS's statuses). */
export type ExecutionState = ObservedExecution;

/** A lifecycle execution's input (statemachines/session-lifecycle.asl.json). */
export interface ExecutionInput {
  readonly sessionId: string;
  /** The stages' timers, in seconds (each callback state's TimeoutSecondsPath). */
  readonly timeouts: Record<string, number>;
  /**
   * The session as it was created, for the first entry to start from (it reaches EnterStage as
   * StageTransition.start.known); null when unknown. The adapter leaves it out (null) when too
   * large for the input.
   */
  readonly known: SessionWithKernels | null;
}

export interface LifecycleExecutionsPort {
  start(sessionId: string, input: ExecutionInput): Promise<string>;
  complete(taskToken: string, transition: StageTransition): Promise<"completed" | "already-closed">;
  /**
   * The execution named `executionName`, undefined when there is none (the sweep's repair).
   * Optional so fakes that never sweep need not answer it: without it nothing is repaired.
   */
  describe?(executionName: string): Promise<ExecutionState | undefined>;
}
