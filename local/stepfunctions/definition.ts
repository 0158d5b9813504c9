/**
 * Compiles an ASL definition (JSONPath) for the local service, once, at CreateStateMachine:
 * validates it (asl-validator, as the interpreter does, plus what this runtime needs: known
 * resources and functions, timeout fields), and prepares the in-memory copy the interpreter
 * runs. The ASL file itself is never changed.
 */
import { StateMachine, type StateMachineDefinition } from "aws-local-stepfunctions";
import { EXECUTION_CONTEXT_KEY, rewriteExecutionContextPaths } from "./context-paths.ts";
import { SfnApiError } from "./errors.ts";
import { isJsonObject, type JsonObject } from "./json.ts";
import { MAX_TASK_TIMEOUT_SECONDS, MAX_TIMER_SECONDS } from "./limits.ts";
import { parseReferencePath } from "./reference-path.ts";
import { lambdaFunctionName, parseTaskResource, type TaskResource } from "./resources.ts";

export const STATE_TYPES = ["Task", "Parallel", "Map", "Pass", "Wait", "Choice", "Succeed", "Fail"] as const;
export type StateType = (typeof STATE_TYPES)[number];

/** State names the runtime uses for its one-state runs (state-runner.ts). */
export const CURRENT_STATE = "__local_sfn_current__";
export const END_STATE = "__local_sfn_end__";

export const LAMBDA_INVOKE_KEY = "lambda:invoke";

export interface TaskSpec {
  readonly name: string;
  readonly resource: TaskResource;
  /** Inside a Map or Parallel: the interpreter runs it, so no dynamic timeouts. */
  readonly nested: boolean;
  readonly timeoutSeconds: number | undefined;
  readonly timeoutSecondsPath: string | undefined;
  readonly heartbeatSeconds: number | undefined;
  readonly heartbeatSecondsPath: string | undefined;
}

export interface CompiledState {
  readonly name: string;
  readonly type: StateType;
  /** The state as the interpreter runs it: context paths rewritten, task timeout fields removed. */
  readonly runtimeDefinition: JsonObject;
  /** Every state this one can hand over to (Next, Choice targets, Catch targets). */
  readonly successors: readonly string[];
  readonly isEnd: boolean;
  readonly task: TaskSpec | undefined;
}

export interface CompiledDefinition {
  readonly startAt: string;
  readonly timeoutSeconds: number | undefined;
  readonly states: ReadonlyMap<string, CompiledState>;
  /** Every Task state, nested ones included (ASL state names are unique machine-wide). */
  readonly tasks: ReadonlyMap<string, TaskSpec>;
}

export interface DefinitionEnvironment {
  hasFunction(name: string): boolean;
  hasIntegration(key: string): boolean;
}

function invalid(message: string): SfnApiError {
  return new SfnApiError("InvalidDefinition", `Invalid State Machine Definition: ${message}`);
}

export function compileDefinition(definition: unknown, env: DefinitionEnvironment): CompiledDefinition {
  if (!isJsonObject(definition)) throw invalid("the definition must be a JSON object");
  rejectJsonata(definition, "the definition");
  validateWithInterpreter(definition);

  const runtime = structuredClone(definition);
  rewriteExecutionContextPaths(runtime);

  const tasks = new Map<string, TaskSpec>();
  const seenNames = new Set<string>();
  collectNestedTasks(runtime, false, tasks, seenNames, env);

  const states = new Map<string, CompiledState>();
  const topStates = runtime["States"] as JsonObject;
  for (const [name, value] of Object.entries(topStates)) {
    const state = value as JsonObject;
    const type = state["Type"] as StateType;
    states.set(name, {
      name,
      type,
      runtimeDefinition: state,
      successors: successorsOf(state),
      isEnd: state["End"] === true,
      task: type === "Task" ? tasks.get(name) : undefined,
    });
  }

  const timeoutSeconds = definition["TimeoutSeconds"];
  return {
    startAt: definition["StartAt"] as string,
    timeoutSeconds: typeof timeoutSeconds === "number" ? timeoutSeconds : undefined,
    states,
    tasks,
  };
}

/**
 * The interpreter's own validation (asl-validator), so nothing it would reject gets in. It
 * builds and compiles its JSON schemas on every call (about 0.3 s, more on a busy machine), so
 * verdicts are remembered per definition text: test suites create the same machine often.
 */
const validationVerdicts = new Map<string, string | null>();
const MAX_REMEMBERED_VERDICTS = 64;

function validateWithInterpreter(definition: JsonObject): void {
  const text = JSON.stringify(definition);
  let verdict = validationVerdicts.get(text);
  if (verdict === undefined) {
    verdict = null;
    try {
      // On a copy: the validator writes QueryLanguage into every state it checks.
      new StateMachine(structuredClone(definition) as unknown as StateMachineDefinition, {
        validationOptions: { checkArn: true, checkPaths: true },
      });
    } catch (error) {
      verdict = (error as Error).message.replace(/\s+/g, " ").trim();
    }
    if (validationVerdicts.size >= MAX_REMEMBERED_VERDICTS) {
      validationVerdicts.delete(validationVerdicts.keys().next().value as string);
    }
    validationVerdicts.set(text, verdict);
  }
  if (verdict !== null) throw invalid(verdict);
}

function rejectJsonata(node: JsonObject, where: string): void {
  if (node["QueryLanguage"] !== undefined && node["QueryLanguage"] !== "JSONPath") {
    throw invalid(
      `${where}: QueryLanguage ${JSON.stringify(node["QueryLanguage"])} is not supported (JSONPath only)`,
    );
  }
  const states = node["States"];
  if (!isJsonObject(states)) return;
  for (const [name, state] of Object.entries(states)) {
    if (!isJsonObject(state)) continue;
    rejectJsonata(state, `state '${name}'`);
    for (const sub of [state["Iterator"], state["ItemProcessor"]])
      if (isJsonObject(sub)) rejectJsonata(sub, name);
    const branches = state["Branches"];
    if (Array.isArray(branches)) for (const b of branches) if (isJsonObject(b)) rejectJsonata(b, name);
  }
}

/** Walks a (sub-)machine: checks names and Task states, and prepares Task states for the interpreter. */
function collectNestedTasks(
  machine: JsonObject,
  nested: boolean,
  tasks: Map<string, TaskSpec>,
  seenNames: Set<string>,
  env: DefinitionEnvironment,
): void {
  const states = machine["States"] as JsonObject;
  for (const [name, value] of Object.entries(states)) {
    if (name === CURRENT_STATE || name === END_STATE || name === EXECUTION_CONTEXT_KEY) {
      throw invalid(`state name '${name}' is reserved by the local runtime`);
    }
    if (seenNames.has(name)) throw invalid(`state name '${name}' is used more than once`);
    seenNames.add(name);
    const state = value as JsonObject;
    if (state["Type"] === "Task") tasks.set(name, compileTask(name, state, nested, env));
    for (const field of ["Iterator", "ItemProcessor"]) {
      const sub = state[field];
      if (isJsonObject(sub)) collectNestedTasks(sub, true, tasks, seenNames, env);
    }
    const branches = state["Branches"];
    if (Array.isArray(branches)) {
      for (const branch of branches)
        if (isJsonObject(branch)) collectNestedTasks(branch, true, tasks, seenNames, env);
    }
  }
}

function compileTask(name: string, state: JsonObject, nested: boolean, env: DefinitionEnvironment): TaskSpec {
  let resource: TaskResource;
  try {
    resource = parseTaskResource(state["Resource"]);
  } catch (error) {
    throw invalid(`state '${name}': ${(error as Error).message}`);
  }
  if (resource.kind === "lambda-function" && !env.hasFunction(resource.functionName)) {
    throw invalid(
      `state '${name}': Resource names function '${resource.functionName}', which has no local handler`,
    );
  }
  if (resource.kind === "integration") {
    if (!env.hasIntegration(resource.key)) {
      throw invalid(
        `state '${name}': Resource '${resource.arn}' (${resource.key}) has no local integration; pass one in the 'integrations' option`,
      );
    }
    const parameters = state["Parameters"];
    const functionName = isJsonObject(parameters) ? parameters["FunctionName"] : undefined;
    if (resource.key === LAMBDA_INVOKE_KEY && typeof functionName === "string") {
      const fn = lambdaFunctionName(functionName);
      if (!fn || !env.hasFunction(fn)) {
        throw invalid(`state '${name}': Parameters.FunctionName '${functionName}' has no local handler`);
      }
    }
  }

  const timeoutSeconds = seconds(name, state, "TimeoutSeconds");
  const timeoutSecondsPath = referencePath(name, state, "TimeoutSecondsPath");
  const heartbeatSeconds = seconds(name, state, "HeartbeatSeconds");
  const heartbeatSecondsPath = referencePath(name, state, "HeartbeatSecondsPath");
  if (timeoutSeconds !== undefined && timeoutSecondsPath !== undefined) {
    throw invalid(`state '${name}': TimeoutSeconds and TimeoutSecondsPath are mutually exclusive`);
  }
  if (heartbeatSeconds !== undefined && heartbeatSecondsPath !== undefined) {
    throw invalid(`state '${name}': HeartbeatSeconds and HeartbeatSecondsPath are mutually exclusive`);
  }
  if (heartbeatSeconds !== undefined && timeoutSeconds !== undefined && heartbeatSeconds >= timeoutSeconds) {
    throw invalid(
      `state '${name}': HeartbeatSeconds (${heartbeatSeconds}) must be smaller than TimeoutSeconds`,
    );
  }
  if (nested && (timeoutSecondsPath !== undefined || heartbeatSecondsPath !== undefined)) {
    throw invalid(
      `state '${name}': TimeoutSecondsPath/HeartbeatSecondsPath inside a Map or Parallel state are not supported by the local runtime`,
    );
  }

  // The interpreter must not apply its own timeout rules (a 60 s default; the path read after
  // Parameters): top-level tasks get TimeoutSeconds per entry (state-runner.ts); nested ones
  // get the static value, or no practical limit, as AWS has none by default.
  delete state["TimeoutSecondsPath"];
  delete state["HeartbeatSeconds"];
  delete state["HeartbeatSecondsPath"];
  if (nested) state["TimeoutSeconds"] = Math.min(timeoutSeconds ?? MAX_TIMER_SECONDS, MAX_TIMER_SECONDS);
  else delete state["TimeoutSeconds"];

  return {
    name,
    resource,
    nested,
    timeoutSeconds,
    timeoutSecondsPath,
    heartbeatSeconds,
    heartbeatSecondsPath,
  };
}

function seconds(name: string, state: JsonObject, field: string): number | undefined {
  const value = state[field];
  if (value === undefined) return undefined;
  if (
    typeof value !== "number" ||
    !Number.isInteger(value) ||
    value < 1 ||
    value > MAX_TASK_TIMEOUT_SECONDS
  ) {
    throw invalid(`state '${name}': ${field} must be an integer from 1 to ${MAX_TASK_TIMEOUT_SECONDS}`);
  }
  return value;
}

function referencePath(name: string, state: JsonObject, field: string): string | undefined {
  const value = state[field];
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw invalid(`state '${name}': ${field} must be a reference path string`);
  try {
    parseReferencePath(value);
  } catch (error) {
    throw invalid(`state '${name}': ${field}: ${(error as Error).message}`);
  }
  return value;
}

function successorsOf(state: JsonObject): string[] {
  const names = new Set<string>();
  if (typeof state["Next"] === "string") names.add(state["Next"]);
  if (typeof state["Default"] === "string") names.add(state["Default"]);
  for (const field of ["Choices", "Catch"]) {
    const list = state[field];
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      if (isJsonObject(item) && typeof item["Next"] === "string") names.add(item["Next"]);
    }
  }
  return [...names];
}
