/**
 * The state machine and the core's transition tables are one source of truth: this test derives
 * the lifecycle graph from statemachines/session-lifecycle.asl.json and checks it, edge by edge,
 * against LIFECYCLE_HANDLERS, PROMOTION_HANDLERS and STAGES.
 */
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { LIFECYCLE_FAILURE, StageEntryError } from "../functions/app/enter-stage.ts";
import { PublishError } from "../functions/adapters/eventbridge/publisher.ts";
import { ConflictError, StoreUnavailableError } from "../functions/core/ports/errors.ts";
import { isTransient, TransientError } from "../functions/handlers/enter-stage.ts";
import { LIFECYCLE_HANDLERS, PROMOTION_HANDLERS, STAGES } from "../functions/core/handlers.ts";
import { SESSION_STATUSES, WAITING_SESSION_STATUSES, type SessionStatus } from "../functions/core/status.ts";
import { routeError, stageCompletion } from "../functions/core/transitions.ts";

interface AslState {
  Type: string;
  Resource?: string;
  OutputPath?: string;
  Parameters?: Record<string, unknown> & { Payload?: Record<string, unknown> & { status?: string } };
  Retry?: { ErrorEquals: string[]; MaxAttempts?: number }[];
  Error?: string;
  Result?: { from?: string; to?: string; result?: string } | null;
  ResultPath?: string | null;
  SecondsPath?: string;
  TimeoutSecondsPath?: string;
  TimeoutSeconds?: number;
  Catch?: { ErrorEquals: string[]; Next: string; ResultPath?: string }[];
  Choices?: { Variable: string; StringEquals: string; Next: string }[];
  Default?: string;
  Next?: string;
  End?: boolean;
}
const asl = JSON.parse(readFileSync("statemachines/session-lifecycle.asl.json", "utf8")) as {
  StartAt: string;
  States: Record<string, AslState>;
};
const states = asl.States;

function state(name: string): AslState {
  const s = states[name];
  if (!s) throw new Error(`state ${name} is referenced but not defined`);
  return s;
}

/** The session status a state records on entry (its Payload.status), if any. */
function statusOf(name: string): string | undefined {
  return state(name).Parameters?.Payload?.status;
}

/** The failure recorder: the one state that hands EnterStage a Catch's error output. */
function isFailureRecorder(name: string): boolean {
  return state(name).Parameters?.Payload?.["failure.$"] !== undefined;
}

const CALLBACK = "arn:aws:states:::lambda:invoke.waitForTaskToken";
const TERMINAL: readonly string[] = ["TERMINATED", "CANCELLED"];

/**
 * The state where a session waits in `status` (a callback state), or records a terminal status.
 * Other states may record a status on the way (the requeue entry records PENDING before the
 * backoff), but each status has exactly one such home state.
 */
function stateFor(status: string): string {
  const found = Object.keys(states).filter(
    (n) =>
      statusOf(n) === status &&
      !isFailureRecorder(n) &&
      (TERMINAL.includes(status) || state(n).Resource === CALLBACK),
  );
  expect(found, `exactly one callback or terminal state records ${status}`).toHaveLength(1);
  return found[0]!;
}

/** The state a retried run records PENDING in before its backoff (TERMINATING's requeue route). */
function requeuedState(): string {
  const catcher = state(stateFor("TERMINATING")).Catch?.find((c) =>
    c.ErrorEquals.includes(routeError(STAGES.TERMINATING.onRequeue!)),
  );
  return state(catcher!.Next).Next!;
}

/**
 * Edges of the ASL, from status to status: a callback state's own `Next` (its first success
 * status, completed with SendTaskSuccess), and each `Cairn.To.<STATUS>` it catches, through the
 * Pass that reads the transition back from the error's cause (stageCompletion in core).
 */
function aslEdges(): Set<string> {
  const edges = new Set<string>();
  for (const status of WAITING_SESSION_STATUSES) {
    const home = state(stateFor(status));
    const happy = STAGES[status].onSuccess[0]!;
    expect(statusOf(home.Next!), `${status}'s Next records its first success status`).toBe(happy);
    expect(stageCompletion({ from: status, to: happy, result: "SUCCESS", handler: "Lifecycle" })).toEqual({
      kind: "success",
    });
    edges.add(`${status}->${happy}`);
    for (const catcher of home.Catch ?? []) {
      const routed = catcher.ErrorEquals.find((e) => e.startsWith("Cairn.To."));
      if (routed === undefined) continue;
      expect(catcher.ErrorEquals).toHaveLength(1);
      const to = routed.slice("Cairn.To.".length);
      expect(
        stageCompletion({ from: status, to: to as SessionStatus, result: "SUCCESS", handler: "Lifecycle" }),
      ).toEqual({ kind: "route", error: routeError(to as SessionStatus) });
      const reader = state(catcher.Next);
      expect(reader.Type).toBe("Pass");
      expect(reader.Parameters).toMatchObject({
        "transition.$": `States.StringToJson(${catcher.ResultPath}.Cause)`,
      });
      expect(statusOf(reader.Next!), `${catcher.Next} leads to a state that records ${to}`).toBe(to);
      edges.add(`${status}->${to}`);
    }
  }
  return edges;
}

/** Edges the core's tables allow: handler outcomes, promotions, cancels, expiry. */
function coreEdges(): Set<string> {
  const edges = new Set<string>();
  const add = (from: SessionStatus, to: SessionStatus | undefined) => {
    if (to !== undefined && to !== from) edges.add(`${from}->${to}`);
  };
  for (const handler of Object.values(LIFECYCLE_HANDLERS)) {
    for (const from of handler.targetSessionStatuses) {
      const t = handler.transitions;
      for (const transition of [t.success, t.needRetry, t.expired, t.giveUp]) add(from, transition?.session);
    }
  }
  for (const promotion of Object.values(PROMOTION_HANDLERS)) {
    for (const from of promotion.targetSessionStatuses) add(from, promotion.successSessionStatus);
  }
  for (const stage of Object.values(STAGES)) {
    add(stage.status, stage.onCancel);
    add(stage.status, stage.onExpired);
    // A retried run goes back to PENDING through Requeued: from PENDING too (a run never placed).
    if (stage.onRequeue !== undefined) edges.add(`${stage.status}->${stage.onRequeue}`);
    add(stage.status, stage.onPreempt);
    add(stage.status, stage.onFail);
  }
  return edges;
}

describe("session-lifecycle.asl.json against the core's tables", () => {
  test("starts by recording the submission, then waits in PENDING", () => {
    const start = state(asl.StartAt);
    expect(start.Type).toBe("Pass");
    expect(statusOf(start.Next!)).toBe("PENDING");
  });

  test("every session status has exactly one state that records it", () => {
    for (const status of SESSION_STATUSES) stateFor(status);
  });

  test("the status edges of the ASL are exactly the edges of the core's tables", () => {
    expect([...aslEdges()].sort()).toEqual([...coreEdges()].sort());
  });

  test.each(WAITING_SESSION_STATUSES)("%s is a callback state whose timeout is its stage timer", (status) => {
    const s = state(stateFor(status));
    expect(s.Resource).toBe("arn:aws:states:::lambda:invoke.waitForTaskToken");
    expect(s.TimeoutSecondsPath).toBe(`$.timeouts.${status.toLowerCase()}`);
  });

  test.each(WAITING_SESSION_STATUSES.filter((s) => s !== "PENDING"))(
    "a %s timeout routes as EXPIRED to the stage's expiry status",
    (status) => {
      const catcher = state(stateFor(status)).Catch?.find((c) => c.ErrorEquals.includes("States.Timeout"));
      expect(catcher, `${status} catches States.Timeout`).toBeDefined();
      const expired = state(catcher!.Next);
      expect(expired.Type).toBe("Pass");
      expect(expired.Result).toMatchObject({ from: status, to: STAGES[status].onExpired, result: "EXPIRED" });
      expect(statusOf(expired.Next!)).toBe(STAGES[status].onExpired);
    },
  );

  test("a PENDING timeout is judged as EXPIRED, then leads to CANCELLED or, retried, to Requeued", () => {
    const catcher = state(stateFor("PENDING")).Catch?.find((c) => c.ErrorEquals.includes("States.Timeout"));
    expect(catcher, "PENDING catches States.Timeout").toBeDefined();
    const expired = state(catcher!.Next);
    expect(expired.Type).toBe("Pass");
    expect(expired.Result).toMatchObject({
      from: "PENDING",
      to: STAGES.PENDING.onExpired,
      result: "EXPIRED",
    });
    expect(expired.ResultPath).toBe("$.transition");
    // The judgment (functions/app/expiry-judge.ts) gets the execution's data and returns it.
    const judge = state(expired.Next!);
    expect(judge.Resource).toBe("arn:aws:states:::lambda:invoke");
    expect(judge.Parameters?.Payload).toEqual({
      judge: "expiry",
      "sessionId.$": "$.sessionId",
      "timeouts.$": "$.timeouts",
      "transition.$": "$.transition",
    });
    expect(judge.OutputPath).toBe("$.Payload");
    expect(judge.Catch?.map((c) => c.Next)).toEqual(["RecordFailure"]);
    const route = state(judge.Next!);
    expect(route.Type).toBe("Choice");
    expect(route.Choices).toEqual([
      { Variable: "$.transition.to", StringEquals: STAGES.PENDING.onRequeue, Next: requeuedState() },
    ]);
    expect(statusOf(route.Default!)).toBe(STAGES.PENDING.onExpired);
  });

  test("the coordinator retries a run never placed through the same Requeued state", () => {
    const catcher = state(stateFor("PENDING")).Catch?.find((c) =>
      c.ErrorEquals.includes(routeError(STAGES.PENDING.onRequeue!)),
    );
    expect(catcher, "PENDING routes a requeue").toBeDefined();
    expect(state(catcher!.Next).Next).toBe(requeuedState());
  });

  test("STAGES agrees with the handler that governs each stage", () => {
    for (const stage of Object.values(STAGES)) {
      if (!stage.governedBy) continue;
      const t = LIFECYCLE_HANDLERS[stage.governedBy].transitions;
      expect(stage.onExpired, `${stage.status} expiry`).toBe(t.expired?.session);
      expect(stage.onGiveUp, `${stage.status} give-up`).toBe(t.giveUp?.session);
    }
  });

  test("TERMINATED and CANCELLED are recorded by plain tasks that end the execution", () => {
    for (const status of ["TERMINATED", "CANCELLED"]) {
      const s = state(stateFor(status));
      expect(s.Resource).toBe("arn:aws:states:::lambda:invoke");
      expect(s.End).toBe(true);
    }
  });

  test("a requeued run records PENDING, waits its backoff durably, then waits in Pending", () => {
    const catcher = state(stateFor("TERMINATING")).Catch?.find((c) =>
      c.ErrorEquals.includes(routeError(STAGES.TERMINATING.onRequeue!)),
    );
    expect(catcher, "TERMINATING routes a requeue").toBeDefined();
    const requeuedName = state(catcher!.Next).Next!;
    const requeued = state(requeuedName);
    expect(requeued.Resource).toBe("arn:aws:states:::lambda:invoke");
    expect(statusOf(requeuedName)).toBe("PENDING");
    const backoff = state(requeued.Next!);
    expect(backoff.Type).toBe("Wait");
    expect(backoff.SecondsPath).toBe("$.transition.requeue.delaySeconds");
    const elapsed = state(backoff.Next!);
    expect(elapsed).toMatchObject({
      Type: "Pass",
      Result: { from: "PENDING", to: "PENDING", result: "REQUEUED" },
      ResultPath: "$.transition",
    });
    expect(elapsed.Next).toBe(stateFor("PENDING"));
  });

  test("the happy path is one state per stage: the only Choice is after PENDING's timer", () => {
    const choices = Object.entries(states).filter(([, st]) => st.Type === "Choice");
    expect(choices.map(([name]) => name)).toEqual(["PendingExpiryJudged"]);
    const happy = new Set<string>();
    for (let at: string | undefined = asl.StartAt; at !== undefined && !happy.has(at); at = state(at).Next) {
      happy.add(at);
    }
    expect([...happy].filter((name) => state(name).Type === "Choice")).toEqual([]);
  });

  test("every state is reachable from StartAt", () => {
    const seen = new Set<string>();
    const visit = (name: string) => {
      if (seen.has(name)) return;
      seen.add(name);
      const s = state(name);
      for (const next of [
        s.Next,
        s.Default,
        ...(s.Choices ?? []).map((c) => c.Next),
        ...(s.Catch ?? []).map((c) => c.Next),
      ]) {
        if (next) visit(next);
      }
    };
    visit(asl.StartAt);
    expect([...seen].sort()).toEqual(Object.keys(states).sort());
  });
});

/**
 * What no retry clears is caught and recorded on the session, never left to fail the
 * execution silently; what is transient is retried (AWS's Lambda best-practice list, plus the
 * handler's own transient errors, named by their data: see functions/handlers/enter-stage.ts).
 */
describe("session-lifecycle.asl.json: retries and the failure recorder", () => {
  const AWS_TRANSIENT_LAMBDA = [
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
  ];
  const tasks = Object.keys(states).filter((n) => state(n).Type === "Task");
  const recorders = tasks.filter(isFailureRecorder);

  test("exactly one state records failures, as the code's LIFECYCLE_FAILURE says, then fails the execution", () => {
    expect(recorders).toHaveLength(1);
    const recorder = state(recorders[0]!);
    expect(recorder.Resource).toBe("arn:aws:states:::lambda:invoke");
    expect(recorder.Parameters?.Payload).toMatchObject({
      status: LIFECYCLE_FAILURE.status,
      transition: {
        to: LIFECYCLE_FAILURE.status,
        result: LIFECYCLE_FAILURE.result,
        handler: LIFECYCLE_FAILURE.handler,
      },
      "failure.$": "$.error",
    });
    // Recorded or not, the execution ends FAILED: the failed-executions alarm fires.
    const end = state(recorder.Next!);
    expect(end.Type).toBe("Fail");
    expect(end.Error).toBe("Cairn.LifecycleFailed");
    expect(recorder.Catch).toEqual([
      { ErrorEquals: ["States.ALL"], ResultPath: "$.recordError", Next: recorder.Next },
    ]);
  });

  test.each(tasks)(
    "%s retries every transient error: AWS's Lambda list, Lambda.Unknown, Cairn.Transient",
    (name) => {
      const retried = (state(name).Retry ?? []).flatMap((r) => r.ErrorEquals);
      for (const error of [...AWS_TRANSIENT_LAMBDA, "Lambda.Unknown", new TransientError("x").name]) {
        expect(retried, `${name} retries ${error}`).toContain(error);
      }
      expect(retried, "nothing is retried blindly").not.toContain("States.ALL");
      // A function that timed out or ran out of memory is tried again, but not six times.
      const unknown = state(name).Retry!.find((r) => r.ErrorEquals.includes("Lambda.Unknown"))!;
      expect(unknown.MaxAttempts).toBeLessThanOrEqual(2);
    },
  );

  test.each(tasks.filter((n) => !isFailureRecorder(n)))(
    "%s catches everything else into the failure recorder, keeping its input",
    (name) => {
      const catchers = state(name).Catch ?? [];
      const last = catchers.at(-1);
      expect(last).toEqual({ ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: recorders[0] });
      // The stage timer keeps its own route (EXPIRED) ahead of the catch-all.
      if (state(name).Resource === CALLBACK) expect(catchers[0]!.ErrorEquals).toEqual(["States.Timeout"]);
    },
  );

  test.each(WAITING_SESSION_STATUSES)(
    "%s names its entry and attempt, so a retried attempt replaces the token idempotently",
    (status) => {
      expect(state(stateFor(status)).Parameters?.Payload?.["entry"]).toEqual({
        "state.$": "$$.State.Name",
        "enteredTime.$": "$$.State.EnteredTime",
        "retryCount.$": "$$.State.RetryCount",
      });
    },
  );
});

describe("which EnterStage errors the state machine retries (read from the error's data)", () => {
  const sdkError = (fields: Record<string, unknown>) => Object.assign(new Error("sdk"), fields);
  test.each([
    ["a publish that may succeed later", new PublishError("PutEvents failed", true), true],
    ["an event too large for any request", new PublishError("too large", false), false],
    [
      "the store's throttling outlasting its retries",
      new StoreUnavailableError("write", 8, new Error("x")),
      true,
    ],
    ["SDK throttling", sdkError({ name: "ThrottlingException", $retryable: { throttling: true } }), true],
    ["an SDK 5xx", sdkError({ name: "InternalServerError", $fault: "server" }), true],
    ["a dropped connection", sdkError({ code: "ECONNRESET" }), true],
    ["an SDK 4xx", sdkError({ name: "ValidationException", $fault: "client" }), false],
    ["a stage entry the flow does not allow", new StageEntryError("cannot apply"), false],
  ])("%s: %s", (_what, error, transient) => {
    expect(isTransient(error)).toBe(transient);
  });

  test("a conflict that outlasted the entry's own re-reads is transient", () => {
    const conflict = new ConflictError(
      "s",
      { status: "PENDING", version: 1 },
      { status: "PENDING", version: 2 },
    );
    expect(isTransient(conflict)).toBe(true);
  });
});
