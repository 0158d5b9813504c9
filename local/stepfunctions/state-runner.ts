/**
 * Runs ONE state of an execution with the interpreter (aws-local-stepfunctions), so the
 * execution loop (execution.ts) sees every state entry and exit as it happens. That is what
 * lets the runtime keep an AWS-shaped history, count transitions, mint a task token per
 * task entry, and evaluate timeout paths against the state input, none of which the
 * interpreter offers, while the interpreter still does all of ASL's data flow: InputPath,
 * Parameters (intrinsics), ResultSelector, ResultPath, OutputPath, Choice rules, Retry with
 * backoff, Catch, Wait, Fail, Map and Parallel.
 *
 * The one-state machine: the state is renamed CURRENT_STATE (so a state that loops to itself
 * still stops after one step); each state it can hand over to becomes a placeholder Task whose
 * local handler only notes its own name and passes its input through unchanged. `End: true`
 * hands over to the END_STATE placeholder. So the run's result is the state's output and the
 * noted name is where the execution goes next.
 */
import { StateMachine, type RunOptions, type StateMachineDefinition } from "aws-local-stepfunctions";
import { CURRENT_STATE, END_STATE, type CompiledState, type TaskSpec } from "./definition.ts";
import type { JsonObject, JsonValue } from "./json.ts";
import { MAX_TIMER_SECONDS } from "./limits.ts";

export type StateOutcome =
  | { readonly kind: "next"; readonly next: string; readonly output: JsonValue }
  | { readonly kind: "end"; readonly output: JsonValue }
  | { readonly kind: "failed"; readonly error: string | undefined; readonly cause: string | undefined }
  /** The run was aborted (execution stopped): nothing more to record. */
  | { readonly kind: "aborted" };

export interface StateEntry {
  readonly state: CompiledState;
  readonly input: JsonValue;
  readonly enteredAtMs: number;
  /** Attempts of this Task state so far (the first one and its retries). */
  attempts: number;
  readonly timeoutSeconds: number | undefined;
  readonly heartbeatSeconds: number | undefined;
}

export type TaskRunner = (effectiveInput: JsonValue) => Promise<JsonValue>;

export interface StateRunHost {
  /** The context object (`$$`) for this execution; see execution.ts. */
  readonly context: Record<string, unknown>;
  /** Every Task state of the machine, for Map/Parallel bodies. */
  readonly nestedTasks: readonly TaskSpec[];
  taskRunner(spec: TaskSpec, entry: StateEntry | undefined): TaskRunner;
  setCurrentRun(run: { abort(): void } | undefined): void;
}

const HANDOVER_PLACEHOLDER = {
  Type: "Task",
  Resource: "arn:aws:lambda:local:000000000000:function:local-sfn-handover",
  TimeoutSeconds: MAX_TIMER_SECONDS,
  End: true,
} as const;

type ResultCarrier = { name?: string; message?: string };

const machineCache = new WeakMap<CompiledState, Map<number, StateMachine>>();

function oneStateMachine(state: CompiledState, timeoutSeconds: number | undefined): StateMachine {
  const key = timeoutSeconds ?? 0;
  let byTimeout = machineCache.get(state);
  if (!byTimeout) machineCache.set(state, (byTimeout = new Map<number, StateMachine>()));
  const cached = byTimeout.get(key);
  if (cached) return cached;

  const current: JsonObject = { ...state.runtimeDefinition };
  if (state.type === "Task" && state.task && !state.task.nested) {
    current["TimeoutSeconds"] = Math.min(timeoutSeconds ?? MAX_TIMER_SECONDS, MAX_TIMER_SECONDS);
  }
  if (state.isEnd) {
    delete current["End"];
    current["Next"] = END_STATE;
  }
  const states: Record<string, JsonObject> = { [CURRENT_STATE]: current };
  for (const name of state.successors) states[name] = { ...HANDOVER_PLACEHOLDER };
  if (state.isEnd) states[END_STATE] = { ...HANDOVER_PLACEHOLDER };
  const definition = { StartAt: CURRENT_STATE, States: states } as unknown as StateMachineDefinition;
  // Validated whole at CreateStateMachine; this fragment is not a complete machine.
  const machine = new StateMachine(definition, { validationOptions: { noValidate: true } });
  byTimeout.set(key, machine);
  return machine;
}

export async function runState(host: StateRunHost, entry: StateEntry): Promise<StateOutcome> {
  const { state } = entry;
  const machine = oneStateMachine(state, entry.timeoutSeconds);

  let handedTo: string | undefined;
  type Handlers = NonNullable<NonNullable<RunOptions["overrides"]>["taskResourceLocalHandlers"]>;
  const handlers: Handlers = {};
  for (const name of [...state.successors, END_STATE]) {
    handlers[name] = (input) => {
      handedTo = name;
      return input;
    };
  }
  if (state.type === "Map" || state.type === "Parallel") {
    for (const spec of host.nestedTasks) {
      if (spec.nested) handlers[spec.name] = host.taskRunner(spec, undefined);
    }
  }
  if (state.task) handlers[CURRENT_STATE] = host.taskRunner(state.task, entry);

  const run = machine.run(entry.input, {
    overrides: { taskResourceLocalHandlers: handlers },
    context: host.context,
    noThrowOnAbort: true,
  });
  host.setCurrentRun(run);
  let output: JsonValue;
  try {
    output = await run.result;
  } catch (error) {
    return failure(state, (error as { cause?: ResultCarrier }).cause ?? (error as ResultCarrier));
  } finally {
    host.setCurrentRun(undefined);
  }
  if (handedTo === END_STATE || (handedTo === undefined && state.type === "Succeed"))
    return { kind: "end", output };
  if (handedTo !== undefined) return { kind: "next", next: handedTo, output };
  return { kind: "aborted" };
}

function failure(state: CompiledState, error: ResultCarrier): StateOutcome {
  const name = error.name;
  const message = error.message;
  if (state.type === "Fail") {
    // The interpreter invents "FailStateError" and a message when a Fail state names none; AWS leaves them out.
    const def = state.runtimeDefinition;
    const hasError = def["Error"] !== undefined || def["ErrorPath"] !== undefined;
    const hasCause = def["Cause"] !== undefined || def["CausePath"] !== undefined;
    return { kind: "failed", error: hasError ? name : undefined, cause: hasCause ? message : undefined };
  }
  return { kind: "failed", error: name, cause: message && message !== name ? message : undefined };
}
