/**
 * The interpreter builds `$$.Execution` itself and overwrites `Input` and `StartTime` with the
 * input and start of each run. The embedded runtime runs one state at a time (see
 * state-runner.ts), so those would be the state's input and entry time. To keep
 * `$$.Execution.*` meaning the execution, every context path that reads it is rewritten, in
 * the in-memory copy of the definition only, to a context key the runtime fills and the
 * interpreter leaves alone.
 */
import { isJsonObject, type JsonObject, type JsonValue } from "./json.ts";

export const EXECUTION_CONTEXT_KEY = "LocalExecution";

const EXECUTION_REFERENCE = /\$\$\.Execution(?=$|[.[\s,)])/g;

/** State fields that hold a path (never payload data). ResultPath cannot read the context. */
const PATH_FIELDS = [
  "InputPath",
  "OutputPath",
  "ItemsPath",
  "TimeoutSecondsPath",
  "HeartbeatSecondsPath",
  "SecondsPath",
  "TimestampPath",
  "ErrorPath",
  "CausePath",
  "MaxConcurrencyPath",
  "ToleratedFailureCountPath",
  "ToleratedFailurePercentagePath",
] as const;

const TEMPLATE_FIELDS = ["Parameters", "ResultSelector", "ItemSelector"] as const;

function rewritePath(path: string): string {
  return path.replace(EXECUTION_REFERENCE, `$$$$.${EXECUTION_CONTEXT_KEY}`);
}

/** Rewrites the states of a (sub-)machine in place. */
export function rewriteExecutionContextPaths(machine: JsonObject): void {
  const states = machine["States"];
  if (!isJsonObject(states)) return;
  for (const state of Object.values(states)) {
    if (isJsonObject(state)) rewriteState(state);
  }
}

function rewriteState(state: JsonObject): void {
  for (const field of PATH_FIELDS) {
    const value = state[field];
    if (typeof value === "string") state[field] = rewritePath(value);
  }
  for (const field of TEMPLATE_FIELDS) {
    const template = state[field];
    if (template !== undefined) state[field] = rewriteTemplate(template);
  }
  const choices = state["Choices"];
  if (Array.isArray(choices)) choices.forEach(rewriteChoiceRule);
  for (const field of ["Iterator", "ItemProcessor"]) {
    const sub = state[field];
    if (isJsonObject(sub)) rewriteExecutionContextPaths(sub);
  }
  const branches = state["Branches"];
  if (Array.isArray(branches)) {
    for (const branch of branches) if (isJsonObject(branch)) rewriteExecutionContextPaths(branch);
  }
}

/** In payload templates only `"key.$"` values are paths (or intrinsic functions taking paths). */
function rewriteTemplate(template: JsonValue): JsonValue {
  if (Array.isArray(template)) return template.map(rewriteTemplate);
  if (!isJsonObject(template)) return template;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(template)) {
    out[key] = key.endsWith(".$") && typeof value === "string" ? rewritePath(value) : rewriteTemplate(value);
  }
  return out;
}

function rewriteChoiceRule(rule: JsonValue): void {
  if (!isJsonObject(rule)) return;
  for (const [key, value] of Object.entries(rule)) {
    if (typeof value === "string" && (key === "Variable" || key.endsWith("Path")))
      rule[key] = rewritePath(value);
  }
  for (const key of ["And", "Or"]) {
    const list = rule[key];
    if (Array.isArray(list)) list.forEach(rewriteChoiceRule);
  }
  const not = rule["Not"];
  if (not !== undefined) rewriteChoiceRule(not);
}
