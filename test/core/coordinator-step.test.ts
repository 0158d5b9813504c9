/**
 * The coordinator's one pure step (core/coordinator/step.ts), case by case: every inbound
 * event's rules, what applied actions wake, kernel reports, a pass's judgment, carrying a
 * decision out (a finished run's retry included) and cancels. No store, no clock.
 */
import { describe, expect, test } from "vitest";
import type { Decision } from "../../functions/core/coordinator/decide.ts";
import {
  jobsToCheck,
  queuesNamed,
  type BatchEvent,
  type EventAction,
} from "../../functions/core/coordinator/inbound.ts";
import { MAX_CARRIED_RUN_CHARS, needsRetryCatalog } from "../../functions/core/coordinator/passes.ts";
import { step } from "../../functions/core/coordinator/step.ts";
import { PROMOTION_HANDLERS, LIFECYCLE_HANDLERS } from "../../functions/core/handlers.ts";
import { parseInboundEvent, type InboundEvent } from "../../functions/core/events.ts";
import type { Queue, SessionWithKernels } from "../../functions/core/model.ts";
import { RETRY_CONFIG_DEFAULTS } from "../../functions/core/retry/config.ts";
import { SchedulingResult } from "../../functions/core/scheduling.ts";
import {
  AttemptOutcome,
  KernelStatus,
  SESSION_STATUSES,
  SessionStatus,
} from "../../functions/core/status.ts";
import { kernel, NOW_MS, result, session } from "./fixtures.ts";

const INCARNATION = "0b7c1e2a-3f4d-4c5e-8a9b-0c1d2e3f4a5b";

function inbound(detailType: string, source: string, detail: unknown, id = "ev-1"): BatchEvent {
  const parsed = parseInboundEvent({
    version: "0",
    id,
    "detail-type": detailType,
    source,
    account: "123456789012",
    time: "2026-01-01T00:00:00Z",
    region: "local",
    resources: [],
    detail,
  });
  if (!parsed.ok) throw parsed.error;
  return { kind: "inbound", event: parsed.event };
}

const submitted = (spec: Record<string, unknown>, sessionId = "job-1"): BatchEvent =>
  inbound("Session Submitted", "cairn.client", {
    sessionId,
    spec: { name: "n", command: ["true"], ...spec },
  });

const report = (over: Record<string, unknown> = {}): BatchEvent =>
  inbound("Kernel Status Changed", "cairn.agent", {
    agentId: "agent-1",
    incarnation: INCARNATION,
    signature: "ab".repeat(32),
    sessionId: "ses-1",
    kernelIndex: 0,
    runIndex: 0,
    status: "RUNNING",
    atMs: NOW_MS,
    ...over,
  });

const queue = (name: string, priority: number): Queue => ({
  name,
  priority,
  retryPolicies: [],
  createdAtMs: NOW_MS,
  updatedAtMs: NOW_MS,
});

function eventsStep(events: BatchEvent[], queues: Queue[] = [], existingJobs: string[] = []) {
  return step({
    kind: "events",
    events,
    queues: new Map(queues.map((q) => [q.name, q])),
    existingJobs: new Set(existingJobs),
  });
}

function only(actions: readonly EventAction[]): EventAction {
  expect(actions).toHaveLength(1);
  return actions[0]!;
}

describe("events: what each inbound event asks for", () => {
  test.each([
    // [from, to, wakes the whole PENDING queue, ends the session]
    [SessionStatus.PREPARING, SessionStatus.PREPARED, false, false],
    [SessionStatus.RUNNING, SessionStatus.TERMINATING, false, false],
    [SessionStatus.TERMINATING, SessionStatus.TERMINATED, true, true],
    [SessionStatus.PENDING, SessionStatus.CANCELLED, true, true],
    [SessionStatus.TERMINATING, SessionStatus.PENDING, true, false],
    [SessionStatus.PENDING, SessionStatus.PENDING, false, false],
  ])("the control plane's own change %s → %s wakes its session", (from, to, wakesQueue, ends) => {
    const { actions, wake } = eventsStep([{ kind: "status-changed", sessionId: "s1", from, to }]);
    expect(only(actions)).toEqual({ kind: "none", index: 0 });
    expect(wake.touched).toEqual([[to, "s1"]]);
    expect(wake.cancelCheck).toEqual(["s1"]);
    expect(wake.full).toEqual(wakesQueue ? [SessionStatus.PENDING] : []);
    expect(wake.ended).toEqual(ends ? [["s1", 0]] : []);
  });

  test("an event that did not parse is rejected; a submission's refusal is also stored", () => {
    const { actions } = eventsStep([
      {
        kind: "invalid",
        eventId: "e1",
        detailType: "Session Submitted",
        message: "detail.spec: bad",
        submission: { id: "job-1", eventId: "e1" },
      },
      { kind: "invalid", eventId: "e2", detailType: "Agent Heartbeat", message: "detail.atMs: bad" },
    ]);
    expect(actions).toEqual([
      {
        kind: "reject",
        index: 0,
        rejection: { eventId: "e1", detailType: "Session Submitted", reason: "detail.spec: bad" },
        refuse: { id: "job-1", eventId: "e1" },
      },
      {
        kind: "reject",
        index: 1,
        rejection: { eventId: "e2", detailType: "Agent Heartbeat", reason: "detail.atMs: bad" },
      },
    ]);
  });

  test("an event whose data could not be read is redelivered", () => {
    expect(only(eventsStep([{ kind: "unloaded" }]).actions)).toEqual({ kind: "redeliver", index: 0 });
  });

  test.each([
    // [spec queue, stored queues, existing jobs, expected: priority queued by, or the refusal]
    ["default", [], [], { priority: 3 }],
    ["default", [queue("default", 10)], [], { priority: 13 }],
    ["gpu", [queue("gpu", -2)], [], { priority: 1 }],
    ["gpu", [queue("gpu", 0)], [], { priority: 3 }],
    ["gone", [], ["job-1"], { priority: 3 }],
    [
      "gone",
      [],
      [],
      { refused: 'detail.spec.queue: no queue named "gone" (create it with `cairn queue create`)' },
    ],
  ] as const)("a submission to queue %s", (name, queues, jobs, expected) => {
    const action = only(
      eventsStep([submitted({ queue: name, priority: 3 })], [...queues], [...jobs]).actions,
    );
    if ("refused" in expected) {
      expect(action).toMatchObject({
        kind: "reject",
        rejection: { eventId: "ev-1", reason: expected.refused },
        refuse: { id: "job-1", eventId: "ev-1" },
      });
    } else {
      expect(action).toMatchObject({
        kind: "submit",
        jobId: "job-1",
        spec: { queue: name, priority: expected.priority },
      });
    }
  });

  test("a submission whose kernel commands could never be sent is refused, naming the field", () => {
    const action = only(eventsStep([submitted({ env: { BIG: "x".repeat(300_000) } })]).actions);
    expect(action).toMatchObject({ kind: "reject", refuse: { id: "job-1" } });
    expect(action.kind === "reject" && action.rejection.reason).toMatch(/^detail\.spec\.env/);
  });

  test("a submission without an id takes one made from the event's", () => {
    const event = inbound(
      "Session Submitted",
      "cairn.client",
      { spec: { name: "n", command: ["true"] } },
      "EV-9",
    );
    expect(only(eventsStep([event]).actions)).toMatchObject({ kind: "submit", jobId: "s-ev-9" });
  });

  test("the queues and jobs the rules read are named before the step", () => {
    const events = [
      submitted({ queue: "gpu" }, "job-a"),
      submitted({ queue: "cpu" }, "job-b"),
      submitted({}, "job-c"),
      report(),
    ];
    expect(queuesNamed(events)).toEqual(["gpu", "cpu", "default"]);
    // A missing queue other than default is refused unless the job exists: only those are read.
    expect(jobsToCheck(events, new Map([["gpu", queue("gpu", 0)]]))).toEqual(["job-b"]);
  });

  test("a cancel names its session and a reason, the default one when none is given", () => {
    const { actions } = eventsStep([
      inbound("Session Cancel Requested", "cairn.client", { sessionId: "ses-1" }),
      inbound("Session Cancel Requested", "cairn.client", { sessionId: "ses-2", reason: "budget" }),
    ]);
    expect(actions).toMatchObject([
      { kind: "cancel", sessionId: "ses-1", reason: "cancel requested" },
      { kind: "cancel", sessionId: "ses-2", reason: "budget" },
    ]);
  });

  test("reports, heartbeats and registrations are handed to the application in order", () => {
    const { actions, wake } = eventsStep([
      report(),
      inbound("Agent Heartbeat", "cairn.agent", {
        agentId: "agent-1",
        incarnation: INCARNATION,
        capacity: { cpu: 8, memoryMiB: 16_384 },
        atMs: NOW_MS,
        signature: "ab".repeat(32),
      }),
      inbound("Agent Registration Requested", "cairn.agent", {
        agentId: "agent-2",
        incarnation: INCARNATION,
        capacity: { cpu: 8, memoryMiB: 16_384 },
        atMs: NOW_MS,
      }),
    ]);
    expect(actions.map((a) => [a.kind, a.index])).toEqual([
      ["report", 0],
      ["heartbeat", 1],
      ["register", 2],
    ]);
    // What they wake depends on what applying them finds: the "applied" step says.
    expect(wake.full).toEqual([]);
  });

  test("a heartbeat or registration under a Fargate pool's id is refused, naming detail.agentId", () => {
    const { actions } = eventsStep([
      inbound("Agent Heartbeat", "cairn.agent", {
        agentId: "fargate_batch",
        incarnation: INCARNATION,
        capacity: { cpu: 8, memoryMiB: 16_384 },
        atMs: NOW_MS,
        signature: "ab".repeat(32),
      }),
      inbound("Agent Registration Requested", "cairn.agent", {
        agentId: "fargate_batch",
        incarnation: INCARNATION,
        capacity: { cpu: 8, memoryMiB: 16_384 },
        atMs: NOW_MS,
      }),
    ]);
    const reason =
      'detail.agentId: fargate_batch starts with "fargate_", which is reserved for queues\' ' +
      "Fargate capacity: an agent must take another id";
    expect(actions).toEqual([
      { kind: "reject", index: 0, rejection: { eventId: "ev-1", detailType: "Agent Heartbeat", reason } },
      {
        kind: "reject",
        index: 1,
        rejection: { eventId: "ev-1", detailType: "Agent Registration Requested", reason },
      },
    ]);
  });
});

describe("applied: what the events' actions came to", () => {
  const submit = only(eventsStep([submitted({})]).actions) as Extract<EventAction, { kind: "submit" }>;
  const cancel = only(
    eventsStep([inbound("Session Cancel Requested", "cairn.client", { sessionId: "job-2" })]).actions,
  ) as Extract<EventAction, { kind: "cancel" }>;

  test("created and cancelled sessions are checked for a cancel request", () => {
    const { rejected, wake } = step({
      kind: "applied",
      applied: [
        { kind: "submitted", action: submit, sessionIds: ["job-1-t0", "job-1-t1"] },
        { kind: "cancel-requested", action: cancel, sessionIds: ["job-2"] },
      ],
    });
    expect(rejected).toEqual([]);
    expect(wake.cancelCheck).toEqual(["job-1-t0", "job-1-t1", "job-2"]);
    expect(wake.full).toEqual([]);
  });

  test("a submission the store refused, and a cancel of nothing, are rejected", () => {
    const { rejected } = step({
      kind: "applied",
      applied: [
        { kind: "submit-refused", action: submit, reason: "detail.sessionId: job-1 is taken" },
        { kind: "cancel-requested", action: cancel, sessionIds: undefined },
      ],
    });
    expect(rejected).toEqual([
      {
        kind: "reject",
        index: 0,
        rejection: {
          eventId: "ev-1",
          detailType: "Session Submitted",
          reason: "detail.sessionId: job-1 is taken",
        },
        refuse: { id: "job-1", eventId: "ev-1" },
      },
      {
        kind: "reject",
        index: 0,
        rejection: {
          eventId: "ev-1",
          detailType: "Session Cancel Requested",
          reason: "detail.sessionId: no session or job job-2",
        },
      },
    ]);
  });

  test.each([
    // [outcome, the statuses whose whole queue is read, forget what the run read]
    [{ kind: "heartbeat", index: 0, capacityChanged: false }, [], false],
    [{ kind: "heartbeat", index: 0, capacityChanged: true }, [SessionStatus.PENDING], false],
    [{ kind: "registered", index: 0, retired: false }, [SessionStatus.PENDING], false],
    [{ kind: "registered", index: 0, retired: true }, [...SESSION_STATUSES], true],
  ] as const)("an agent's %o", (applied, full, forget) => {
    const { wake } = step({ kind: "applied", applied: [applied] });
    expect(wake.agentsHeard).toBe(true);
    expect([...wake.full].sort()).toEqual([...full].sort());
    expect(wake.forgetReads).toBe(forget);
  });
});

describe("reports: which apply, and what they write", () => {
  const running = (over: Partial<SessionWithKernels["session"]> = {}): SessionWithKernels => ({
    session: session("ses-1", SessionStatus.CREATING, over),
    kernels: [kernel("ses-1", 0, KernelStatus.CREATING, { agentId: "agent-1", version: 4 })],
  });
  const reports = (...events: BatchEvent[]) =>
    events.map((e) => ({ event: (e as { event: InboundEvent }).event as never }));

  test("no session: every report is rejected", () => {
    const { outcomes, effect } = step({
      kind: "reports",
      sessionId: "ses-1",
      session: undefined,
      reports: reports(report(), report()),
      nowMs: NOW_MS,
    });
    expect(outcomes.map((o) => o?.reason)).toEqual([
      "detail.sessionId: no session ses-1",
      "detail.sessionId: no session ses-1",
    ]);
    expect(effect).toEqual({ kind: "none" });
  });

  test.each([
    [{ kernelIndex: 3 }, "detail.kernelIndex: session ses-1 has no kernel 3"],
    [
      { agentId: "agent-9" },
      "detail.agentId: kernel 0 of session ses-1 is placed on agent agent-1, not on agent-9",
    ],
    [{ runIndex: 1 }, "detail.runIndex: run 1 of session ses-1 has ended (the session is on run 0)"],
    [
      { placement: 2 },
      "detail.placement: placement 2 of run 0 of session ses-1 has ended (the session is on placement 0)",
    ],
  ])("a report %o is refused", (over, reason) => {
    const { outcomes, effect } = step({
      kind: "reports",
      sessionId: "ses-1",
      session: running(),
      reports: reports(report(over)),
      nowMs: NOW_MS,
    });
    expect(outcomes).toEqual([{ eventId: "ev-1", detailType: "Kernel Status Changed", reason }]);
    expect(effect).toEqual({ kind: "none" });
  });

  test("an agent the application could not authenticate is refused with its reason", () => {
    const [r] = reports(report());
    const { outcomes } = step({
      kind: "reports",
      sessionId: "ses-1",
      session: running(),
      reports: [{ ...r!, refused: "detail.signature: does not match" }],
      nowMs: NOW_MS,
    });
    expect(outcomes[0]?.reason).toBe("detail.signature: does not match");
  });

  test("a report that makes the stage's promotion due claims it with the kernels, in one write", () => {
    const { outcomes, effect } = step({
      kind: "reports",
      sessionId: "ses-1",
      session: running(),
      reports: reports(report()),
      nowMs: NOW_MS,
    });
    expect(outcomes).toEqual([undefined]);
    expect(effect).toMatchObject({ kind: "claim", token: "token-old", write: { claimStage: true } });
  });

  test("without a token to claim, the kernels alone are patched", () => {
    const copy = running({ stage: { enteredAtMs: NOW_MS, expiresAtMs: NOW_MS + 1 } });
    const { effect } = step({
      kind: "reports",
      sessionId: "ses-1",
      session: copy,
      reports: reports(report()),
      nowMs: NOW_MS,
    });
    expect(effect).toMatchObject({
      kind: "patch",
      patches: [{ index: 0, status: KernelStatus.RUNNING, expectedVersion: 4 }],
    });
  });
});

describe("pass-targets and pass-result: a pass's judgment", () => {
  const pending = (id: string, over = {}): SessionWithKernels => ({
    session: session(id, SessionStatus.PENDING, over),
    kernels: [kernel(id, 0, KernelStatus.PENDING)],
  });

  test("a session back in PENDING more often than its spec allows ends FAILED before the handler", () => {
    const worn = pending("ses-2", { retry: { pendingReturns: 99, freeReturns: 0 } as never });
    const { ending, rest } = step({
      kind: "pass-targets",
      handler: "ScheduleNewSessions",
      targets: [pending("ses-1"), worn],
      nowMs: NOW_MS,
    });
    expect(rest.map((t) => t.session.id)).toEqual(["ses-1"]);
    expect(ending).toMatchObject([{ sessionId: "ses-2", toStatus: SessionStatus.TERMINATED }]);
  });

  test("a skip repeating the session's latest record is judged but not carried out", () => {
    const last = {
      sessionId: "ses-1",
      handler: "ScheduleNewSessions",
      result: SchedulingResult.SKIPPED,
      fromStatus: SessionStatus.PENDING,
      message: "no agent fits",
      atMs: NOW_MS - 5_000,
      lastAtMs: NOW_MS - 5_000,
      count: 3,
    };
    const targets = [pending("ses-1", { lastHistory: last }), pending("ses-2")];
    const { decisions, toCarryOut } = step({
      kind: "pass-result",
      pass: {
        kind: "lifecycle",
        spec: LIFECYCLE_HANDLERS.ScheduleNewSessions,
        result: result({
          skipped: ["ses-1", "ses-2"],
          messages: { "ses-1": "no agent fits", "ses-2": "no agent fits" },
        }),
      },
      targets,
      nowMs: NOW_MS,
      skipRecordIntervalMs: 30_000,
    });
    expect(decisions.map((d) => d.sessionId)).toEqual(["ses-1", "ses-2"]);
    expect(toCarryOut.map((d) => d.sessionId)).toEqual(["ses-2"]);
  });

  test("a promotion moves the sessions whose kernels all reached the status", () => {
    const prepared = (id: string, k: KernelStatus): SessionWithKernels => ({
      session: session(id, SessionStatus.PREPARING),
      kernels: [kernel(id, 0, k)],
    });
    const { toCarryOut } = step({
      kind: "pass-result",
      pass: { kind: "promotion", spec: PROMOTION_HANDLERS.PromoteToPrepared },
      targets: [prepared("ses-1", KernelStatus.PREPARED), prepared("ses-2", KernelStatus.PREPARING)],
      nowMs: NOW_MS,
      skipRecordIntervalMs: 30_000,
    });
    expect(toCarryOut).toMatchObject([{ sessionId: "ses-1", toStatus: SessionStatus.PREPARED }]);
  });
});

describe("carry-out: one decision on the session as it is now", () => {
  const terminating = (
    over: Partial<SessionWithKernels["session"]> = {},
    exitCode = 0,
  ): SessionWithKernels => ({
    session: session("ses-1", SessionStatus.TERMINATING, over),
    kernels: [
      kernel("ses-1", 0, KernelStatus.TERMINATED, {
        agentId: "agent-1",
        exitCode,
        startedAtMs: NOW_MS - 10_000,
        finishedAtMs: NOW_MS - 1_000,
        outcome: exitCode === 0 ? AttemptOutcome.SUCCEEDED : AttemptOutcome.FAILED,
      }),
    ],
  });
  const ended: Decision = {
    sessionId: "ses-1",
    result: SchedulingResult.SUCCESS,
    fromStatus: SessionStatus.TERMINATING,
    toStatus: SessionStatus.TERMINATED,
    spendsTry: false,
    history: {
      sessionId: "ses-1",
      handler: "PromoteToTerminated",
      result: SchedulingResult.SUCCESS,
      fromStatus: SessionStatus.TERMINATING,
      toStatus: SessionStatus.TERMINATED,
      atMs: NOW_MS,
    },
    complete: {
      from: SessionStatus.TERMINATING,
      to: SessionStatus.TERMINATED,
      result: "SUCCESS",
      handler: "PromoteToTerminated",
    },
  };
  const retried: Decision = {
    sessionId: "ses-1",
    result: SchedulingResult.NEED_RETRY,
    fromStatus: SessionStatus.TERMINATING,
    spendsTry: true,
    history: {
      sessionId: "ses-1",
      handler: "TerminateSessions",
      result: SchedulingResult.NEED_RETRY,
      fromStatus: SessionStatus.TERMINATING,
      atMs: NOW_MS,
    },
  };
  const carry = (decision: Decision, s: SessionWithKernels | undefined, ownClaim = false) =>
    step({
      kind: "carry-out",
      decision,
      session: s,
      ownClaim,
      catalog: undefined,
      nowMs: NOW_MS,
      skipRecordIntervalMs: 30_000,
    });

  test("a session gone, or moved on since it was read, is left to the next run", () => {
    expect(carry(ended, undefined)).toEqual({ kind: "none" });
    expect(carry(ended, { ...terminating(), session: session("ses-1", SessionStatus.TERMINATED) })).toEqual({
      kind: "none",
    });
  });

  test("with the token in the table: write (claiming), then complete with the run's index and the copy", () => {
    const plan = carry(ended, terminating());
    expect(plan.kind).toBe("write");
    if (plan.kind !== "write") return;
    expect(plan.write).toMatchObject({
      expected: { status: SessionStatus.TERMINATING, version: 7 },
      claimStage: true,
      claimedToken: "token-old",
      run: { runIndex: 0 },
    });
    expect(plan.complete).toMatchObject({
      token: "token-old",
      transition: { to: SessionStatus.TERMINATED, runIndex: 0 },
    });
    expect(plan.complete?.known.session.version).toBe(8);
    // The claim keeps the token in the table, for the sweep should this run die before completing.
    expect(plan.complete?.known.session.stage).toMatchObject({
      claimedToken: "token-old",
      claimedAtMs: NOW_MS,
    });
    expect(plan.complete?.known.session.stage).not.toHaveProperty("taskToken");
    expect(plan.complete?.transition).not.toHaveProperty("run");
  });

  test("a status change without a token to complete writes nothing", () => {
    const s = terminating({ stage: { enteredAtMs: NOW_MS, expiresAtMs: NOW_MS + 1 } });
    expect(carry(ended, s)).toEqual({ kind: "none" });
  });

  /** A stage this run claimed itself (a placement, reports that decided it): its token under the claim. */
  const claimedStage = {
    enteredAtMs: NOW_MS,
    expiresAtMs: NOW_MS + 1,
    claimedToken: "token-claimed",
    claimedAtMs: NOW_MS - 5,
  };

  test("a decision that keeps the session waiting is written; one on the run's own claim gives the token back", () => {
    expect(carry(retried, terminating())).toMatchObject({ kind: "write", write: { tries: "increment" } });
    const claimed = terminating({ stage: claimedStage });
    const plan = carry(retried, claimed, true);
    expect(plan).toMatchObject({
      kind: "give-back",
      write: { tries: "increment", stage: { taskToken: "token-claimed" } },
    });
    expect(plan.kind === "give-back" && plan.write.stage).not.toHaveProperty("claimedToken");
  });

  test("another run's claim is not this run's to use: nothing is done with it", () => {
    expect(carry(ended, terminating({ stage: claimedStage }), false)).toEqual({ kind: "none" });
  });

  test("the run's own claim that changes status is completed at once, its small run record carried", () => {
    const claimed = terminating({ stage: claimedStage });
    const plan = carry(ended, claimed, true);
    expect(plan).toMatchObject({
      kind: "claimed-complete",
      token: "token-claimed",
      transition: { run: { runIndex: 0 } },
    });
    expect(plan.kind === "claimed-complete" && plan.write).toBeFalsy();
    expect(plan.kind === "claimed-complete" && plan.transition).not.toHaveProperty("runIndex");
  });

  test(`a run record over ${MAX_CARRIED_RUN_CHARS} characters is written first; the transition names its index`, () => {
    const claimed = terminating({ stage: claimedStage });
    const noisy: SessionWithKernels = {
      ...claimed,
      kernels: claimed.kernels.map((k) => ({ ...k, message: "x".repeat(MAX_CARRIED_RUN_CHARS) })),
    };
    const plan = carry(ended, noisy, true);
    expect(plan).toMatchObject({
      kind: "claimed-complete",
      transition: { runIndex: 0 },
      write: { run: { runIndex: 0 } },
    });
  });

  test("a failed run asks for the retry catalog, and is judged with it", () => {
    const failed = terminating({}, 1);
    expect(needsRetryCatalog(ended, failed)).toBe(true);
    expect(needsRetryCatalog(ended, terminating())).toBe(false);
    expect(() => carry(ended, failed)).toThrow(/needs the retry catalog/);
    const plan = step({
      kind: "carry-out",
      decision: ended,
      session: failed,
      ownClaim: false,
      catalog: { config: RETRY_CONFIG_DEFAULTS, policies: [] },
      nowMs: NOW_MS,
      skipRecordIntervalMs: 30_000,
    });
    expect(plan).toMatchObject({ kind: "write", complete: { transition: { to: SessionStatus.TERMINATED } } });
  });
});

describe("cancels: a waiting stage with a cancel request", () => {
  const asked = (status: SessionStatus, over = {}): SessionWithKernels => ({
    session: session(`s-${status}`, status, { cancelRequestedAtMs: NOW_MS - 1, ...over }),
    kernels: [],
  });

  test.each([
    [SessionStatus.PENDING, SessionStatus.CANCELLED],
    [SessionStatus.PREPARING, SessionStatus.CANCELLED],
    [SessionStatus.RUNNING, SessionStatus.TERMINATING],
  ])("%s → %s, claimed first when the token is in the table", (from, to) => {
    const [plan] = step({ kind: "cancels", candidates: [asked(from)], ownClaims: new Set(), nowMs: NOW_MS });
    expect(plan).toMatchObject({
      token: "token-old",
      transition: { from, to, result: "CANCELLED", handler: "Cancel" },
      claim: { claimStage: true, expected: { status: from, version: 7 } },
    });
    expect(plan?.known.session.version).toBe(8);
  });

  test("a stage the run claimed needs no claim; no request, no token or a terminal status, nothing", () => {
    const held = asked(SessionStatus.PREPARING, {
      stage: {
        enteredAtMs: NOW_MS,
        expiresAtMs: NOW_MS + 1,
        claimedToken: "token-held",
        claimedAtMs: NOW_MS,
      },
    });
    const plans = step({
      kind: "cancels",
      candidates: [
        held,
        { ...asked(SessionStatus.PENDING), session: session("s-x", SessionStatus.PENDING) },
        asked(SessionStatus.SCHEDULED, { stage: { enteredAtMs: NOW_MS, expiresAtMs: NOW_MS + 1 } }),
        asked(SessionStatus.TERMINATED),
      ],
      ownClaims: new Set([held.session.id]),
      nowMs: NOW_MS,
    });
    expect(plans).toHaveLength(1);
    expect(plans[0]).toMatchObject({ sessionId: held.session.id, token: "token-held" });
    expect(plans[0]).not.toHaveProperty("claim");
  });
});
