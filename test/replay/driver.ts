/**
 * The lifecycle execution, stood in by a small interpreter of the real ASL
 * (statemachines/session-lifecycle.asl.json) on a simulated clock: the states the file uses
 * (Pass, callback and plain Lambda Task, Wait, Choice on StringEquals, Fail), the JSONPath it
 * uses, OutputPath, Catch by error name, and TimeoutSecondsPath as the callback's timer. It answers the SDK commands the real
 * LifecycleExecutions adapter sends (StartExecution, SendTaskSuccess/Failure, DescribeExecution),
 * so the coordinator talks to it through that adapter exactly as it talks to Step Functions.
 *
 * Nothing runs by itself: a start or a completion only queues the execution; `drain()` carries
 * the queued ones forward (entering states calls EnterStage) until each waits again or ends, and
 * `fire(atMs)` runs the timers due. No Lambda retries (RetryCount is always 0): an EnterStage
 * error goes straight to the state's Catch, and is logged.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { EnterStageInput } from "../../functions/app/enter-stage.ts";
import type { ExpiryJudgement } from "../../functions/app/expiry-judge.ts";

type Json = unknown;
type Data = Record<string, Json>;

interface AslState {
  /** Pass, Task, Wait or Fail: the types this file uses. */
  readonly Type: string;
  readonly Parameters?: Data;
  readonly Result?: Json;
  readonly ResultPath?: string | null;
  readonly ResultSelector?: Data;
  readonly OutputPath?: string;
  readonly Resource?: string;
  readonly TimeoutSecondsPath?: string;
  readonly SecondsPath?: string;
  readonly Catch?: readonly { ErrorEquals: readonly string[]; ResultPath?: string; Next: string }[];
  readonly Choices?: readonly { Variable: string; StringEquals: string; Next: string }[];
  readonly Default?: string;
  readonly Next?: string;
  readonly End?: boolean;
}

interface Asl {
  readonly StartAt: string;
  readonly States: Readonly<Record<string, AslState>>;
}

export const ASL: Asl = JSON.parse(
  readFileSync(resolve(import.meta.dirname, "../../statemachines/session-lifecycle.asl.json"), "utf8"),
) as Asl;

/** What a callback state is waiting for. */
interface OpenCallback {
  readonly token: string;
  readonly state: string;
  readonly enteredAtMs: number;
  /** When TimeoutSecondsPath's timer fires (States.Timeout). */
  readonly timeoutAtMs: number | undefined;
}

type Completion =
  | { readonly kind: "success"; readonly output: Json }
  | { readonly kind: "failure"; readonly error: string; readonly cause: string };

export interface Execution {
  readonly name: string;
  readonly input: string;
  status: "RUNNING" | "SUCCEEDED" | "FAILED";
  /** The state it is in (or about to run). */
  state: string;
  data: Data;
  open?: OpenCallback;
  /** A Wait state's end. */
  waitUntilMs?: number;
  /** How the open callback was closed, to be carried forward by drain(). */
  closed?: Completion;
  /** The states it has been through, in order. */
  readonly trail: string[];
  error?: { Error: string; Cause: string };
}

export interface DriverDeps {
  readonly nowMs: () => number;
  /** Every plain or callback Lambda Task's payload: a state's entry, or a judgment (expiry-judge.ts). */
  readonly enterStage: (input: EnterStageInput | ExpiryJudgement) => Promise<unknown>;
  readonly log: (line: string) => void;
}

/** An SDK-shaped error, as the adapter branches on `name`. */
function sdkError(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

export class LifecycleDriver {
  readonly executions = new Map<string, Execution>();
  /** Every StartExecution call, duplicates included. */
  readonly startCalls: string[] = [];
  readonly #deps: DriverDeps;
  readonly #runnable: Execution[] = [];
  #tokens = 0;

  constructor(deps: DriverDeps) {
    this.#deps = deps;
  }

  /** The SFNClient the real adapter is built with: answers the four commands it sends. */
  readonly client = {
    send: (command: { constructor: { name: string }; input: Record<string, unknown> }): Promise<unknown> => {
      const input = command.input;
      switch (command.constructor.name) {
        case "StartExecutionCommand":
          return Promise.resolve(this.#start(String(input["name"]), String(input["input"])));
        case "SendTaskSuccessCommand":
          return Promise.resolve(
            this.#close(String(input["taskToken"]), {
              kind: "success",
              output: JSON.parse(String(input["output"])) as Json,
            }),
          );
        case "SendTaskFailureCommand":
          return Promise.resolve(
            this.#close(String(input["taskToken"]), {
              kind: "failure",
              error: String(input["error"]),
              cause: String(input["cause"]),
            }),
          );
        case "DescribeExecutionCommand": {
          const name = String(input["executionArn"]).split(":").at(-1) ?? "";
          const e = this.executions.get(name);
          if (!e) return Promise.reject(sdkError("ExecutionDoesNotExist", `no execution ${name}`));
          return Promise.resolve({ status: e.status });
        }
        default:
          return Promise.reject(new Error(`the replay driver does not answer ${command.constructor.name}`));
      }
    },
  };

  #start(name: string, input: string): { executionArn: string } {
    this.startCalls.push(name);
    const existing = this.executions.get(name);
    if (existing) {
      // Standard workflows: the same name and input is the same execution; other input is a clash.
      if (existing.input !== input) throw sdkError("ExecutionAlreadyExists", `execution ${name} exists`);
      return { executionArn: `arn:replay:execution:${name}` };
    }
    const execution: Execution = {
      name,
      input,
      status: "RUNNING",
      state: ASL.StartAt,
      data: JSON.parse(input) as Data,
      trail: [],
    };
    this.executions.set(name, execution);
    this.#runnable.push(execution);
    this.#deps.log(`  sfn: start ${name}`);
    return { executionArn: `arn:replay:execution:${name}` };
  }

  #close(token: string, completion: Completion): object {
    const e = [...this.executions.values()].find((x) => x.open?.token === token && x.closed === undefined);
    // Step Functions: a token that is no longer open answers TaskTimedOut.
    if (!e) throw sdkError("TaskTimedOut", `task ${token} is closed`);
    e.closed = completion;
    this.#runnable.push(e);
    return {};
  }

  /** Timers due by `atMs` (callback timeouts, Wait ends), earliest first. */
  due(atMs: number): { atMs: number; execution: Execution; kind: "timeout" | "wait" }[] {
    const due: { atMs: number; execution: Execution; kind: "timeout" | "wait" }[] = [];
    for (const e of this.executions.values()) {
      if (e.status !== "RUNNING") continue;
      const t = e.open?.timeoutAtMs;
      if (e.open && e.closed === undefined && t !== undefined && t <= atMs) {
        due.push({ atMs: t, execution: e, kind: "timeout" });
      }
      if (e.waitUntilMs !== undefined && e.waitUntilMs <= atMs) {
        due.push({ atMs: e.waitUntilMs, execution: e, kind: "wait" });
      }
    }
    return due.sort((a, b) => a.atMs - b.atMs || a.execution.name.localeCompare(b.execution.name));
  }

  /** The earliest timer after now, if any. */
  nextTimerMs(): number | undefined {
    return this.due(Number.POSITIVE_INFINITY)[0]?.atMs;
  }

  /** Fires one due timer: the callback's States.Timeout, or a Wait's end. */
  fire(timer: { execution: Execution; kind: "timeout" | "wait" }): void {
    const e = timer.execution;
    if (timer.kind === "timeout") {
      this.#deps.log(`  sfn: ${e.name} ${e.state} timed out (States.Timeout)`);
      e.closed = { kind: "failure", error: "States.Timeout", cause: "the state's timer ran out" };
    } else {
      this.#deps.log(`  sfn: ${e.name} ${e.state} wait over`);
      e.waitUntilMs = undefined;
      e.state = this.#next(ASL.States[e.state]!, e);
    }
    this.#runnable.push(e);
  }

  /** Whether anything is queued to run. */
  get busy(): boolean {
    return this.#runnable.length > 0;
  }

  /** Carries every queued execution forward until each waits again or ends. */
  async drain(): Promise<void> {
    while (this.#runnable.length > 0) {
      const e = this.#runnable.shift()!;
      await this.#resume(e);
    }
  }

  /**
   * Carries forward only the executions queued now, each to its next wait: one queued while they
   * run (a callback completed meanwhile) waits for the next call, as a slow state transition
   * would, so whatever the bus holds can be delivered first.
   */
  async drainOnce(): Promise<void> {
    for (const e of new Set(this.#runnable.splice(0))) await this.#resume(e);
  }

  async #resume(e: Execution): Promise<void> {
    if (e.status !== "RUNNING") return;
    if (e.open) {
      const closed = e.closed;
      // Still waiting (queued twice, or not yet closed).
      if (!closed) return;
      const state = ASL.States[e.open.state]!;
      e.open = undefined;
      e.closed = undefined;
      if (closed.kind === "success") {
        e.data = setPath(e.data, state.ResultPath, closed.output);
        e.state = this.#next(state, e);
      } else {
        e.state = this.#catch(state, e, closed.error, closed.cause);
      }
    } else if (e.waitUntilMs !== undefined) {
      return;
    }
    await this.#run(e);
  }

  /** Runs states from `e.state` until one waits (callback, Wait) or the execution ends. */
  async #run(e: Execution): Promise<void> {
    for (let steps = 0; steps < 1000; steps++) {
      const name = e.state;
      const state = ASL.States[name];
      if (!state) throw new Error(`ASL has no state ${name}`);
      e.trail.push(name);
      switch (state.Type) {
        case "Pass": {
          const value =
            state.Parameters !== undefined
              ? resolveTemplate(state.Parameters, e.data, {})
              : state.Result !== undefined
                ? state.Result
                : e.data;
          e.data =
            state.Parameters !== undefined ? (value as Data) : setPath(e.data, state.ResultPath, value);
          e.state = this.#next(state, e);
          break;
        }
        case "Wait": {
          const seconds = Number(readPath(state.SecondsPath ?? "", e.data, {}));
          e.waitUntilMs = this.#deps.nowMs() + seconds * 1000;
          this.#deps.log(`  sfn: ${e.name} ${name} waits ${seconds} s`);
          return;
        }
        case "Fail": {
          e.status = "FAILED";
          this.#deps.log(`  sfn: ${e.name} failed at ${name}`);
          return;
        }
        case "Task": {
          const callback = state.Resource?.endsWith(".waitForTaskToken") === true;
          const nowMs = this.#deps.nowMs();
          const token = callback ? `tok-${e.name}-${++this.#tokens}` : undefined;
          const context = {
            Task: { Token: token },
            Execution: { Name: e.name },
            State: { Name: name, EnteredTime: new Date(nowMs).toISOString(), RetryCount: 0 },
          };
          const params = state.Parameters ?? {};
          const payload = resolveTemplate(params["Payload"] as Data, e.data, context) as
            EnterStageInput | ExpiryJudgement;
          if (callback) {
            const timeoutSec =
              state.TimeoutSecondsPath !== undefined
                ? Number(readPath(state.TimeoutSecondsPath, e.data, context))
                : undefined;
            // Open before the invoke: the coordinator may complete it while EnterStage runs.
            e.open = {
              token: token!,
              state: name,
              enteredAtMs: nowMs,
              timeoutAtMs: timeoutSec !== undefined ? nowMs + timeoutSec * 1000 : undefined,
            };
          }
          this.#deps.log(
            `  sfn: ${e.name} ${name} → EnterStage ${"judge" in payload ? `judge ${payload.judge}` : payload.status} (${payload.transition.handler} ${payload.transition.result})`,
          );
          let out: unknown;
          try {
            out = await this.#deps.enterStage(payload);
          } catch (error) {
            const err = error as Error;
            this.#deps.log(`  sfn: ${e.name} ${name} EnterStage FAILED ${err.name}: ${err.message}`);
            e.open = undefined;
            e.closed = undefined;
            e.state = this.#catch(state, e, err.name, err.message);
            break;
          }
          if (callback) {
            // Completed during the invoke: carried forward by drain().
            if (e.closed) this.#runnable.push(e);
            return;
          }
          const result = state.ResultSelector
            ? resolveTemplate(state.ResultSelector, { Payload: out }, {})
            : { Payload: out };
          e.data = setPath(e.data, state.ResultPath, result);
          if (state.OutputPath !== undefined) e.data = readPath(state.OutputPath, e.data, {}) as Data;
          e.state = this.#next(state, e);
          break;
        }
        case "Choice": {
          const chosen = state.Choices?.find((c) => readPath(c.Variable, e.data, {}) === c.StringEquals);
          const next = chosen?.Next ?? state.Default;
          if (next === undefined) throw new Error(`Choice ${name} matched nothing and has no Default`);
          e.state = next;
          break;
        }
        default:
          throw new Error(`the replay driver does not run ${state.Type} states (${name})`);
      }
      if (e.status !== "RUNNING") return;
    }
    throw new Error(`execution ${e.name} ran 1000 states without waiting`);
  }

  #next(state: AslState, e: Execution): string {
    if (state.End) {
      e.status = "SUCCEEDED";
      this.#deps.log(`  sfn: ${e.name} succeeded`);
      return e.state;
    }
    if (!state.Next) throw new Error(`state ${e.state} has neither Next nor End`);
    return state.Next;
  }

  #catch(state: AslState, e: Execution, error: string, cause: string): string {
    // Catchers are tried in order; States.ALL matches any error.
    const handler = state.Catch?.find(
      (c) => c.ErrorEquals.includes(error) || c.ErrorEquals.includes("States.ALL"),
    );
    if (!handler) {
      e.status = "FAILED";
      e.error = { Error: error, Cause: cause };
      this.#deps.log(`  sfn: ${e.name} failed: ${error}`);
      return e.state;
    }
    e.data = setPath(e.data, handler.ResultPath, { Error: error, Cause: cause });
    return handler.Next;
  }
}

// --- the JSONPath the ASL uses ------------------------------------------------------------------

function readPath(path: string, data: Json, context: Json): Json {
  const fn = /^States\.StringToJson\((.+)\)$/.exec(path);
  if (fn) return JSON.parse(String(readPath(fn[1]!, data, context))) as Json;
  const root = path.startsWith("$$") ? context : path.startsWith("$") ? data : undefined;
  if (root === undefined) throw new Error(`the replay driver does not evaluate ${path}`);
  const keys = path
    .replace(/^\$\$?/, "")
    .split(".")
    .filter((k) => k !== "");
  let value: Json = root;
  for (const key of keys) {
    if (typeof value !== "object" || value === null) throw new Error(`${path}: no ${key}`);
    value = (value as Data)[key];
  }
  return value;
}

function resolveTemplate(template: Data, data: Json, context: Json): Json {
  const out: Data = {};
  for (const [key, value] of Object.entries(template)) {
    if (key.endsWith(".$")) out[key.slice(0, -2)] = readPath(String(value), data, context);
    else if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      out[key] = resolveTemplate(value as Data, data, context);
    } else out[key] = value;
  }
  return out;
}

/** ResultPath: `null` discards the result, `$` replaces the input, `$.a.b` sets a field. */
function setPath(data: Data, path: string | null | undefined, value: Json): Data {
  if (path === null) return data;
  if (path === undefined || path === "$") return value as Data;
  const keys = path.replace(/^\$\./, "").split(".");
  const copy: Data = structuredClone(data);
  let at: Data = copy;
  for (const key of keys.slice(0, -1)) {
    if (typeof at[key] !== "object" || at[key] === null) at[key] = {};
    at = at[key] as Data;
  }
  at[keys.at(-1)!] = value;
  return copy;
}
