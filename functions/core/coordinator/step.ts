/**
 * The coordinator's one pure step. A run of the coordinator is parse → load → step → carry
 * out, at each point where what it decides next depends on what it has read or done:
 *
 *   events        a batch's events: what each asks for, what it refuses, what it wakes
 *   applied       what the events' actions came to (a job created, an agent's incarnation
 *                 retired): what that wakes or refuses in turn
 *   reports       one session's kernel reports: which apply, what they write
 *   pass-targets  a pass's targets: which end at once, which go to the handler
 *   pass-result   the handler's result (or a promotion): the decisions, and which to carry out
 *   carry-out     one decision on the session as it is now: the write and the callback,
 *                 with a finished run's retry judged
 *   cancels       sessions with a cancel request: the stages to complete, and how
 *
 * Given the input (the sessions it reads are in it, as is the time), `step` returns the effects;
 * it reads no clock and does no I/O, so every rule here is tested without a store
 * (test/core/coordinator-step.test.ts). The application (functions/app/coordinator.ts) loads
 * what an input needs and carries the effects out.
 */
import {
  stepApplied,
  stepEvents,
  stepReports,
  type AppliedEffects,
  type AppliedInput,
  type EventsEffects,
  type EventsInput,
  type ReportsEffects,
  type ReportsInput,
} from "./inbound.ts";
import {
  stepCancels,
  stepCarryOut,
  stepPassResult,
  stepPassTargets,
  type CancelPlan,
  type CancelsInput,
  type CarryOutInput,
  type CarryOutPlan,
  type PassResultEffects,
  type PassResultInput,
  type PassTargetsEffects,
  type PassTargetsInput,
} from "./passes.ts";

export type StepInput =
  | EventsInput
  | AppliedInput
  | ReportsInput
  | PassTargetsInput
  | PassResultInput
  | CarryOutInput
  | CancelsInput;

/** The effects `step` returns for each kind of input. */
export interface StepEffects {
  readonly events: EventsEffects;
  readonly applied: AppliedEffects;
  readonly reports: ReportsEffects;
  readonly "pass-targets": PassTargetsEffects;
  readonly "pass-result": PassResultEffects;
  readonly "carry-out": CarryOutPlan;
  readonly cancels: readonly CancelPlan[];
}

export function step<I extends StepInput>(input: I): StepEffects[I["kind"]];
export function step(input: StepInput): StepEffects[StepInput["kind"]] {
  switch (input.kind) {
    case "events":
      return stepEvents(input);
    case "applied":
      return stepApplied(input);
    case "reports":
      return stepReports(input);
    case "pass-targets":
      return stepPassTargets(input);
    case "pass-result":
      return stepPassResult(input);
    case "carry-out":
      return stepCarryOut(input);
    case "cancels":
      return stepCancels(input);
  }
}
