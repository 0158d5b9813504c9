/**
 * Every session table of Backend.AI's Sokovan (001_d9b509ca94f26bf4.txt), one case per row, written
 * here as literal data copied from the seed text, never derived from the code under test. Where the
 * core deliberately departs from the literal text, the departure is listed next to the row with the
 * seed passage that justifies it, so any other drift fails.
 *
 * The seed's Deployment and Route tables are in deployment-tables.test.ts.
 */
import { describe, expect, test } from "vitest";
import { judge, judgePromotions } from "../../functions/core/coordinator/decide.ts";
import { stageEntryWrite } from "../../functions/core/effects.ts";
import {
  LIFECYCLE_HANDLERS,
  PROMOTION_HANDLERS,
  STAGES,
  type LifecycleHandlerName,
  type PromotionHandlerName,
} from "../../functions/core/handlers.ts";
import type { SessionWithKernels } from "../../functions/core/model.ts";
import { sessionsToPromote } from "../../functions/core/promotion.ts";
import {
  SchedulingResult,
  type HandlerResult,
  type KernelMatchType,
} from "../../functions/core/scheduling.ts";
import type { KernelStatus, SessionStatus, WaitingSessionStatus } from "../../functions/core/status.ts";
import { kernel, NOW_MS, result, session, target } from "./fixtures.ts";

// ---- Seed vocabulary, expanded from the seed's own text -------------------------------------

/** "PENDING~CREATING" is spelled out by the first promotion table's PromoteToRunning row. */
const PENDING_TO_CREATING: KernelStatus[] = [
  "PENDING",
  "SCHEDULED",
  "PREPARING",
  "PULLING",
  "PREPARED",
  "CREATING",
];
/** "non-terminal (PENDING~RUNNING)". */
const SEED_NON_TERMINAL: KernelStatus[] = [...PENDING_TO_CREATING, "RUNNING"];
/** "terminal (TERMINATED, CANCELLED, ERROR)". */
const SEED_TERMINAL: KernelStatus[] = ["TERMINATED", "CANCELLED", "ERROR"];
/**
 * Documented departure (functions/core/status.ts): a kernel still TERMINATING is not terminal, so
 * the core's non-terminal set is the seed's PENDING~RUNNING plus TERMINATING.
 */
const NON_TERMINAL_EXTRA: KernelStatus[] = ["TERMINATING"];

const sorted = <T extends string>(xs: Iterable<T>): T[] => [...xs].sort();

// ---- SchedulingResult table -------------------------------------------------------------------

describe("seed table: SchedulingResult (Result | Description | State Transition)", () => {
  test("the enum has exactly the seed's five values", () => {
    expect(sorted(Object.values(SchedulingResult))).toEqual(
      sorted(["SUCCESS", "NEED_RETRY", "EXPIRED", "GIVE_UP", "SKIPPED"]),
    );
  });

  // ScheduleNewSessions is used as the example handler: every transition it names is distinct.
  const spec = LIFECYCLE_HANDLERS.ScheduleNewSessions;
  const rows: {
    result: SchedulingResult;
    given: HandlerResult;
    expiresAtMs: number;
    tries: number;
    to?: string;
  }[] = [
    // "Transition to success status"
    {
      result: "SUCCESS",
      given: result({ successes: ["s"] }),
      expiresAtMs: NOW_MS + 1,
      tries: 0,
      to: "SCHEDULED",
    },
    // "Transition to need_retry status" — need_retry=None for every session handler: maintained
    { result: "NEED_RETRY", given: result({ failures: ["s"] }), expiresAtMs: NOW_MS + 1, tries: 0 },
    // "Transition to expired status"
    { result: "EXPIRED", given: result(), expiresAtMs: NOW_MS, tries: 0, to: "CANCELLED" },
    // "Transition to give_up status"
    {
      result: "GIVE_UP",
      given: result({ failures: ["s"] }),
      expiresAtMs: NOW_MS + 1,
      tries: 2,
      to: "CANCELLED",
    },
    // "Status maintained, only recorded in history"
    { result: "SKIPPED", given: result({ skipped: ["s"] }), expiresAtMs: NOW_MS + 1, tries: 0 },
  ];
  test.each(rows)("$result → $to", ({ result: expected, given, expiresAtMs, tries, to }) => {
    const [decision, ...rest] = judge({
      handler: spec,
      result: given,
      targets: [target("s", "PENDING", { tries, maxTries: 3, expiresAtMs })],
      nowMs: NOW_MS,
    });
    expect(rest).toEqual([]);
    expect(decision?.result).toBe(expected);
    expect(decision?.toStatus).toBe(to);
    expect(decision?.history.result).toBe(expected);
  });
});

// ---- Lifecycle handler table (Handler | Current | SUCCESS | NEED_RETRY | EXPIRED | GIVE_UP) ----

interface LifecycleRow {
  handler: LifecycleHandlerName;
  current: SessionStatus[];
  SUCCESS: SessionStatus;
  /** "(maintain)" for every row. */
  NEED_RETRY: "maintain";
  EXPIRED: SessionStatus;
  GIVE_UP: SessionStatus;
}
const LIFECYCLE_TABLE: LifecycleRow[] = [
  {
    handler: "ScheduleNewSessions",
    current: ["PENDING"],
    SUCCESS: "SCHEDULED",
    NEED_RETRY: "maintain",
    EXPIRED: "CANCELLED",
    GIVE_UP: "CANCELLED",
  },
  {
    handler: "PrepareSessions",
    current: ["SCHEDULED", "PREPARING"],
    SUCCESS: "PREPARING",
    NEED_RETRY: "maintain",
    EXPIRED: "PENDING",
    GIVE_UP: "PENDING",
  },
  {
    handler: "StartSessions",
    current: ["PREPARED"],
    SUCCESS: "CREATING",
    NEED_RETRY: "maintain",
    EXPIRED: "PENDING",
    GIVE_UP: "PENDING",
  },
  {
    handler: "TerminateSessions",
    current: ["TERMINATING"],
    SUCCESS: "TERMINATED",
    NEED_RETRY: "maintain",
    EXPIRED: "TERMINATED",
    GIVE_UP: "TERMINATED",
  },
];

// ---- StatusTransitions code block (kernel side included) --------------------------------------

interface SeedTransition {
  session: SessionStatus;
  kernel: KernelStatus;
}
interface SeedStatusTransitions {
  success: SeedTransition;
  need_retry: null;
  expired: SeedTransition;
  give_up: SeedTransition;
}
const STATUS_TRANSITIONS_BLOCK: Record<LifecycleHandlerName, SeedStatusTransitions> = {
  ScheduleNewSessions: {
    success: { session: "SCHEDULED", kernel: "SCHEDULED" },
    need_retry: null,
    expired: { session: "CANCELLED", kernel: "CANCELLED" },
    give_up: { session: "CANCELLED", kernel: "CANCELLED" },
  },
  PrepareSessions: {
    success: { session: "PREPARING", kernel: "PREPARING" },
    need_retry: null,
    expired: { session: "PENDING", kernel: "PENDING" },
    give_up: { session: "PENDING", kernel: "PENDING" },
  },
  StartSessions: {
    success: { session: "CREATING", kernel: "CREATING" },
    need_retry: null,
    expired: { session: "PENDING", kernel: "PENDING" },
    give_up: { session: "PENDING", kernel: "PENDING" },
  },
  TerminateSessions: {
    success: { session: "TERMINATED", kernel: "TERMINATED" },
    need_retry: null,
    expired: { session: "TERMINATED", kernel: "TERMINATED" },
    give_up: { session: "TERMINATED", kernel: "TERMINATED" },
  },
};

describe("seed code block: StatusTransitions of the four lifecycle handlers", () => {
  test.each(Object.entries(STATUS_TRANSITIONS_BLOCK))("%s", (name, seed) => {
    const t = LIFECYCLE_HANDLERS[name as LifecycleHandlerName].transitions;
    expect(t.success).toEqual(seed.success);
    expect(t.needRetry).toBeUndefined();
    expect(t.expired).toEqual(seed.expired);
    expect(t.giveUp).toEqual(seed.give_up);
  });

  test("there are exactly the seed's four lifecycle handlers", () => {
    expect(sorted(Object.keys(LIFECYCLE_HANDLERS))).toEqual(sorted(Object.keys(STATUS_TRANSITIONS_BLOCK)));
  });
});

describe("seed table: lifecycle handlers, judged by the coordinator", () => {
  const outcomes = ["SUCCESS", "NEED_RETRY", "EXPIRED", "GIVE_UP"] as const;
  const cases = LIFECYCLE_TABLE.flatMap((row) =>
    row.current.flatMap((current) => outcomes.map((outcome) => ({ row, current, outcome }))),
  );

  /** A handler result and target that make `judge()` reach `outcome` (maxTries 3). */
  function scenario(outcome: (typeof outcomes)[number]): {
    given: HandlerResult;
    tries: number;
    expiresAtMs: number;
  } {
    switch (outcome) {
      case "SUCCESS":
        return { given: result({ successes: ["s"] }), tries: 0, expiresAtMs: NOW_MS + 1 };
      case "NEED_RETRY":
        return { given: result({ failures: ["s"] }), tries: 0, expiresAtMs: NOW_MS + 1 };
      case "EXPIRED":
        return { given: result(), tries: 0, expiresAtMs: NOW_MS - 1 };
      case "GIVE_UP":
        return { given: result({ failures: ["s"] }), tries: 2, expiresAtMs: NOW_MS + 1 };
    }
  }

  test.each(cases)("$row.handler in $current: $outcome", ({ row, current, outcome }) => {
    const { given, tries, expiresAtMs } = scenario(outcome);
    const decisions = judge({
      handler: LIFECYCLE_HANDLERS[row.handler],
      result: given,
      targets: [target("s", current, { tries, maxTries: 3, expiresAtMs })],
      nowMs: NOW_MS,
    });
    expect(decisions).toHaveLength(1);
    const d = decisions[0]!;
    expect(d.result).toBe(outcome);
    const seedStatus = row[outcome];
    const seedKernel =
      outcome === "NEED_RETRY"
        ? undefined
        : STATUS_TRANSITIONS_BLOCK[row.handler][
            outcome === "GIVE_UP" ? "give_up" : outcome === "EXPIRED" ? "expired" : "success"
          ].kernel;
    expect(d.kernelStatus).toBe(seedKernel);
    if (seedStatus === "maintain" || seedStatus === current) {
      // (maintain), or PrepareSessions succeeding for a session already PREPARING: no change,
      // so the stage's callback is not completed and only history is written.
      expect(d.toStatus).toBeUndefined();
      expect(d.complete).toBeUndefined();
      expect(d.history.toStatus).toBeUndefined();
    } else {
      expect(d.toStatus).toBe(seedStatus);
      expect(d.complete).toEqual({ from: current, to: seedStatus, result: outcome, handler: row.handler });
      expect(d.history.toStatus).toBe(seedStatus);
    }
    expect(d.spendsTry).toBe(outcome === "NEED_RETRY" || outcome === "GIVE_UP");
  });

  test.each(LIFECYCLE_TABLE)("$handler targets the table's Current statuses", (row) => {
    expect(sorted(LIFECYCLE_HANDLERS[row.handler].targetSessionStatuses)).toEqual(sorted(row.current));
  });
});

// ---- Target table (Handler | target Session | target Kernel) ----------------------------------

interface TargetRow {
  handler: LifecycleHandlerName;
  targetSession: SessionStatus[];
  targetKernel: KernelStatus[];
  /**
   * Statuses the core targets beyond this table's row, each of which must appear in the lifecycle
   * table's Current column for the same handler (the two seed tables disagree; see the report).
   */
  alsoTargetedFromCurrentColumn: SessionStatus[];
  /** Kernel statuses beyond the literal row, each a documented departure. */
  alsoTargetedKernels: KernelStatus[];
}
const TARGET_TABLE: TargetRow[] = [
  {
    handler: "ScheduleNewSessions",
    targetSession: ["PENDING"],
    targetKernel: ["PENDING"],
    alsoTargetedFromCurrentColumn: [],
    alsoTargetedKernels: [],
  },
  {
    handler: "PrepareSessions",
    targetSession: ["SCHEDULED"],
    targetKernel: ["SCHEDULED"],
    // Lifecycle table: "PrepareSessions | SCHEDULED, PREPARING"; the flow diagram gives PREPARING
    // need_retry/expired/give_up edges, which need a handler that spends tries there.
    alsoTargetedFromCurrentColumn: ["PREPARING"],
    // Entering PREPARING moves every kernel to PREPARING, so a PREPARING session has no SCHEDULED
    // kernel: the kernel status it is selected by there is PREPARING (a failed preparation stays
    // PREPARING with its error, which PrepareSessions judges). docs/differences.md.
    alsoTargetedKernels: ["PREPARING"],
  },
  {
    handler: "StartSessions",
    targetSession: ["PREPARED"],
    targetKernel: ["PREPARED"],
    alsoTargetedFromCurrentColumn: [],
    alsoTargetedKernels: [],
  },
  {
    handler: "TerminateSessions",
    targetSession: ["TERMINATING"],
    targetKernel: SEED_NON_TERMINAL, // "non-terminal"
    alsoTargetedFromCurrentColumn: [],
    alsoTargetedKernels: NON_TERMINAL_EXTRA,
  },
];

describe("seed table: target Session / target Kernel", () => {
  test.each(TARGET_TABLE)("$handler", (row) => {
    const spec = LIFECYCLE_HANDLERS[row.handler];
    const current = LIFECYCLE_TABLE.find((r) => r.handler === row.handler)!.current;
    for (const extra of row.alsoTargetedFromCurrentColumn) expect(current).toContain(extra);
    expect(sorted(spec.targetSessionStatuses)).toEqual(
      sorted([...row.targetSession, ...row.alsoTargetedFromCurrentColumn]),
    );
    expect(spec.targetKernelStatuses).toBeDefined();
    expect(sorted(spec.targetKernelStatuses ?? [])).toEqual(
      sorted([...row.targetKernel, ...row.alsoTargetedKernels]),
    );
  });
});

// ---- Promotion table (Handler | Current | check_kernel_statuses | match | SUCCESS) ------------

interface PromotionRow {
  handler: PromotionHandlerName;
  current: SessionStatus[];
  check: KernelStatus[];
  checkExtra: KernelStatus[];
  match: KernelMatchType;
  success: SessionStatus;
  /** A kernel set that meets the condition and one that does not. */
  meets: KernelStatus[];
  fails: KernelStatus[];
}
const PROMOTION_TABLE: PromotionRow[] = [
  {
    handler: "PromoteToPrepared",
    current: ["SCHEDULED", "PREPARING"],
    check: ["PENDING", "SCHEDULED", "PREPARING", "PULLING"],
    checkExtra: [],
    match: "NOT_ANY",
    success: "PREPARED",
    meets: ["PREPARED", "PREPARED"],
    fails: ["PREPARED", "PULLING"],
  },
  {
    handler: "PromoteToRunning",
    current: ["CREATING"],
    check: ["PENDING", "SCHEDULED", "PREPARING", "PULLING", "PREPARED", "CREATING"],
    checkExtra: [],
    match: "NOT_ANY",
    success: "RUNNING",
    meets: ["RUNNING", "RUNNING"],
    fails: ["RUNNING", "CREATING"],
  },
  {
    handler: "PromoteToTerminated",
    current: ["TERMINATING"],
    check: SEED_NON_TERMINAL, // "non-terminal (PENDING~RUNNING)"
    checkExtra: NON_TERMINAL_EXTRA,
    match: "NOT_ANY",
    success: "TERMINATED",
    meets: ["TERMINATED", "ERROR"],
    // A kernel still shutting down holds the session (the documented TERMINATING departure).
    fails: ["TERMINATED", "TERMINATING"],
  },
  {
    handler: "DetectTermination",
    current: ["RUNNING"],
    check: SEED_TERMINAL, // "terminal (TERMINATED, CANCELLED, ERROR)"
    checkExtra: [],
    match: "ANY",
    success: "TERMINATING",
    meets: ["RUNNING", "ERROR"],
    fails: ["RUNNING", "RUNNING"],
  },
];

describe("seed table: promotion handlers", () => {
  test("the two promotion tables of the seed agree (PENDING~CREATING, non-terminal, terminal)", () => {
    expect(PROMOTION_TABLE.find((r) => r.handler === "PromoteToRunning")?.check).toEqual(PENDING_TO_CREATING);
    expect(sorted(Object.keys(PROMOTION_HANDLERS))).toEqual(sorted(PROMOTION_TABLE.map((r) => r.handler)));
  });

  test.each(PROMOTION_TABLE)("$handler: spec matches the row", (row) => {
    const spec = PROMOTION_HANDLERS[row.handler];
    expect(sorted(spec.targetSessionStatuses)).toEqual(sorted(row.current));
    expect(sorted(spec.checkKernelStatuses)).toEqual(sorted([...row.check, ...row.checkExtra]));
    expect(spec.matchType).toBe(row.match);
    expect(spec.successSessionStatus).toBe(row.success);
  });

  test.each(PROMOTION_TABLE)("$handler: promotes exactly the matching targets, kernels untouched", (row) => {
    const spec = PROMOTION_HANDLERS[row.handler];
    const current = row.current[0]!;
    const other: SessionStatus = current === "PENDING" ? "SCHEDULED" : "PENDING";
    const withKernels = (id: string, status: SessionStatus, ks: KernelStatus[]): SessionWithKernels => ({
      session: session(id, status),
      kernels: ks.map((k, i) => kernel(id, i, k)),
    });
    // Given: one session meets the condition, one does not, one meets it but is in another status.
    const targets = [
      withKernels("meets", current, row.meets),
      withKernels("fails", current, row.fails),
      withKernels("elsewhere", other, row.meets),
    ];
    // When
    const promoted = sessionsToPromote(spec, targets);
    const decisions = judgePromotions(spec, promoted, [target("meets", current)], NOW_MS);
    // Then
    expect(promoted).toEqual(["meets"]);
    expect(decisions).toHaveLength(1);
    const d = decisions[0]!;
    expect(d).toMatchObject({
      sessionId: "meets",
      result: "SUCCESS",
      fromStatus: current,
      toStatus: row.success,
    });
    expect(d.kernelStatus).toBeUndefined();
    expect(d.spendsTry).toBe(false);
    expect(d.complete).toEqual({ from: current, to: row.success, result: "SUCCESS", handler: row.handler });
    // "Kernel status is not changed (only Session is promoted)": the next state's entry patches none.
    const write = stageEntryWrite({
      session: session("meets", current),
      kernels: targets[0]!.kernels,
      transition: d.complete!,
      nowMs: NOW_MS,
    });
    expect(write.status).toBe(row.success);
    expect(write.kernels).toBeUndefined();
  });
});

// ---- Flow description bullets and the diagram's edges -----------------------------------------

/** The governing handler's judgment for a target in `status`. */
function judgeIn(status: WaitingSessionStatus, outcome: "EXPIRED" | "GIVE_UP" | "NEED_RETRY") {
  const governedBy = STAGES[status].governedBy;
  if (!governedBy) throw new Error(`no handler governs ${status}`);
  const given = outcome === "EXPIRED" ? result() : result({ failures: ["s"] });
  const tries = outcome === "GIVE_UP" ? 2 : 0;
  const expiresAtMs = outcome === "EXPIRED" ? NOW_MS : NOW_MS + 1;
  const decisions = judge({
    handler: LIFECYCLE_HANDLERS[governedBy],
    result: given,
    targets: [target("s", status, { tries, maxTries: 3, expiresAtMs })],
    nowMs: NOW_MS,
  });
  expect(decisions).toHaveLength(1);
  expect(decisions[0]?.result).toBe(outcome);
  return decisions[0]!;
}

describe("seed flow description", () => {
  test("PENDING: expired/give_up → CANCELLED (not started yet)", () => {
    expect(STAGES.PENDING.onExpired).toBe("CANCELLED");
    expect(STAGES.PENDING.onGiveUp).toBe("CANCELLED");
    expect(judgeIn("PENDING", "EXPIRED").toStatus).toBe("CANCELLED");
    expect(judgeIn("PENDING", "GIVE_UP").toStatus).toBe("CANCELLED");
  });

  // The diagram draws the re-scheduling edge from SCHEDULED, PREPARING, PREPARED and CREATING.
  test.each(["SCHEDULED", "PREPARING", "PREPARED", "CREATING"] as const)(
    "after SCHEDULED: %s expired/give_up → PENDING (re-scheduling)",
    (status) => {
      expect(STAGES[status].onExpired).toBe("PENDING");
      expect(STAGES[status].onGiveUp).toBe("PENDING");
      expect(judgeIn(status, "EXPIRED").toStatus).toBe("PENDING");
      expect(judgeIn(status, "GIVE_UP").toStatus).toBe("PENDING");
    },
  );

  // "need_retry: Maintain current status in all states (retry)": every stage a handler governs.
  test.each(["PENDING", "SCHEDULED", "PREPARING", "PREPARED", "CREATING", "TERMINATING"] as const)(
    "need_retry maintains %s",
    (status) => {
      const d = judgeIn(status, "NEED_RETRY");
      expect(d.toStatus).toBeUndefined();
      expect(d.complete).toBeUndefined();
      expect(d.spendsTry).toBe(true);
    },
  );

  test.each([
    ["PREPARING", "PREPARED"],
    ["CREATING", "RUNNING"],
  ] as const)("%s → %s: a SessionPromotionHandler promotes", (from, to) => {
    expect(STAGES[from].onSuccess).toContain(to);
    const promoters = Object.values(PROMOTION_HANDLERS).filter(
      (p) => p.targetSessionStatuses.includes(from) && p.successSessionStatus === to,
    );
    expect(promoters).toHaveLength(1);
    const [d] = judgePromotions(promoters[0]!, ["s"], [target("s", from)], NOW_MS);
    expect(d?.toStatus).toBe(to);
  });

  test("RUNNING: kernel failure → TERMINATING; TERMINATING: success/expired → TERMINATED", () => {
    expect(STAGES.RUNNING.onSuccess).toContain("TERMINATING");
    expect(PROMOTION_HANDLERS.DetectTermination.successSessionStatus).toBe("TERMINATING");
    expect(STAGES.TERMINATING.onSuccess).toContain("TERMINATED");
    expect(STAGES.TERMINATING.onExpired).toBe("TERMINATED");
    expect(judgeIn("TERMINATING", "EXPIRED").toStatus).toBe("TERMINATED");
  });

  test("normal flow: each stage's success leads to the next status of the top row", () => {
    const topRow: SessionStatus[] = ["PENDING", "SCHEDULED", "PREPARING", "PREPARED", "CREATING", "RUNNING"];
    for (let i = 0; i + 1 < topRow.length; i++) {
      expect(STAGES[topRow[i] as WaitingSessionStatus].onSuccess).toContain(topRow[i + 1]);
    }
  });
});
