/**
 * Properties of the coordinator's judgment, promotion matching and history merging, over random
 * handler specs (from the real table), random targets and random handler results.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { judge, type JudgedTarget } from "../../functions/core/coordinator/decide.ts";
import { HandlerContractError } from "../../functions/core/coordinator/errors.ts";
import {
  LIFECYCLE_HANDLERS,
  PROMOTION_HANDLERS,
  type LifecycleHandlerSpec,
} from "../../functions/core/handlers.ts";
import { placeHistory } from "../../functions/core/history.ts";
import type { HistoryDraft, HistoryRecord, SessionWithKernels } from "../../functions/core/model.ts";
import { kernelsMatch, sessionsToPromote } from "../../functions/core/promotion.ts";
import type {
  HandlerResult,
  KernelMatchType,
  SchedulingResult,
  TransitionStatus,
} from "../../functions/core/scheduling.ts";
import { KERNEL_STATUSES, SESSION_STATUSES, type KernelStatus } from "../../functions/core/status.ts";
import { kernel, NOW_MS, session } from "./fixtures.ts";

// ---- Arbitraries ----------------------------------------------------------------------------

type Bucket = "success" | "failure" | "skipped" | "none";

interface Case {
  spec: LifecycleHandlerSpec;
  targets: JudgedTarget[];
  bucket: Map<string, Bucket>;
  result: HandlerResult;
}

const targetArb = (spec: LifecycleHandlerSpec, i: number) =>
  fc.record({
    sessionId: fc.constant<string>(`s${i}`),
    status: fc.constantFrom(...spec.targetSessionStatuses),
    tries: fc.integer({ min: 0, max: 6 }),
    maxTries: fc.integer({ min: 1, max: 5 }),
    // Deadlines before, at and after now.
    expiresAtMs: fc.integer({ min: -5, max: 5 }).map((d) => NOW_MS + d * 1000),
  });

const caseArb: fc.Arbitrary<Case> = fc
  .constantFrom(...Object.values(LIFECYCLE_HANDLERS))
  .chain((spec) =>
    fc.integer({ min: 0, max: 12 }).chain((n) =>
      fc.record({
        spec: fc.constant(spec),
        targets: fc.tuple(...Array.from({ length: n }, (_, i) => targetArb(spec, i))),
        buckets: fc.array(fc.constantFrom<Bucket>("success", "failure", "skipped", "none"), {
          minLength: n,
          maxLength: n,
        }),
        // The handler may list ids in any order.
        order: fc.shuffledSubarray(
          Array.from({ length: n }, (_, i) => i),
          { minLength: n, maxLength: n },
        ),
        messages: fc.array(fc.option(fc.constantFrom("queue full", "pull failed"), { nil: undefined }), {
          minLength: n,
          maxLength: n,
        }),
      }),
    ),
  )
  .map(({ spec, targets, buckets, order, messages }) => {
    const bucket = new Map(targets.map((t, i) => [t.sessionId, buckets[i]!]));
    const listed = (b: Bucket) => order.map((i) => `s${i}`).filter((id) => bucket.get(id) === b);
    const msgs: Record<string, string> = {};
    messages.forEach((m, i) => {
      if (m !== undefined) msgs[`s${i}`] = m;
    });
    return {
      spec,
      targets,
      bucket,
      result: {
        successes: listed("success"),
        failures: listed("failure"),
        skipped: listed("skipped"),
        messages: msgs,
      },
    };
  });

const run = ({ spec, targets, result }: Case) => judge({ handler: spec, result, targets, nowMs: NOW_MS });
const expired = (t: JudgedTarget) => t.expiresAtMs <= NOW_MS;

/** The seed's StatusTransitions field for each result; SKIPPED has none. */
function seedTransition(spec: LifecycleHandlerSpec, result: SchedulingResult): TransitionStatus | undefined {
  const t = spec.transitions;
  return {
    SUCCESS: t.success,
    NEED_RETRY: t.needRetry,
    EXPIRED: t.expired,
    GIVE_UP: t.giveUp,
    SKIPPED: undefined,
  }[result];
}

// ---- judge() --------------------------------------------------------------------------------

describe("judge() properties", () => {
  test("each target gets at most one decision, and only targets get decisions", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const ids = run(c).map((d) => d.sessionId);
        expect(new Set(ids).size).toBe(ids.length);
        const targetIds = new Set(c.targets.map((t) => t.sessionId));
        for (const id of ids) expect(targetIds.has(id)).toBe(true);
      }),
    );
  });

  test("every success is decided exactly once, as SUCCESS", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const decisions = run(c);
        for (const id of c.result.successes) {
          expect(decisions.filter((d) => d.sessionId === id).map((d) => d.result)).toEqual(["SUCCESS"]);
        }
      }),
    );
  });

  test("every failure is decided exactly once, NEED_RETRY or GIVE_UP, never EXPIRED or dropped", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const decisions = run(c);
        for (const id of c.result.failures) {
          const mine = decisions.filter((d) => d.sessionId === id);
          expect(mine).toHaveLength(1);
          expect(["NEED_RETRY", "GIVE_UP"]).toContain(mine[0]!.result);
        }
      }),
    );
  });

  test("GIVE_UP exactly when tries + 1 >= maxTries; a failure spends a try, nothing else does", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const byId = new Map(c.targets.map((t) => [t.sessionId, t]));
        for (const d of run(c)) {
          const t = byId.get(d.sessionId)!;
          const failed = c.bucket.get(d.sessionId) === "failure";
          expect(d.spendsTry).toBe(failed);
          expect(d.result === "GIVE_UP").toBe(failed && t.tries + 1 >= t.maxTries);
          expect(d.result === "NEED_RETRY").toBe(failed && t.tries + 1 < t.maxTries);
        }
      }),
    );
  });

  test("EXPIRED exactly for targets in neither successes nor failures whose deadline has passed", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const got = run(c)
          .filter((d) => d.result === "EXPIRED")
          .map((d) => d.sessionId)
          .sort();
        const want = c.targets
          .filter((t) => !["success", "failure"].includes(c.bucket.get(t.sessionId)!) && expired(t))
          .map((t) => t.sessionId)
          .sort();
        expect(got).toEqual(want);
      }),
    );
  });

  test("skips never change status or tries; an unexpired skip is one SKIPPED decision", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const decisions = run(c);
        for (const d of decisions.filter((x) => x.result === "SKIPPED")) {
          expect(c.bucket.get(d.sessionId)).toBe("skipped");
          expect(d.toStatus).toBeUndefined();
          expect(d.kernelStatus).toBeUndefined();
          expect(d.complete).toBeUndefined();
          expect(d.spendsTry).toBe(false);
        }
        for (const t of c.targets.filter((x) => c.bucket.get(x.sessionId) === "skipped" && !expired(x))) {
          expect(decisions.filter((d) => d.sessionId === t.sessionId).map((d) => d.result)).toEqual([
            "SKIPPED",
          ]);
        }
      }),
    );
  });

  test("targets in no list whose deadline has not passed get no decision", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const decided = new Set(run(c).map((d) => d.sessionId));
        for (const t of c.targets) {
          if (c.bucket.get(t.sessionId) === "none" && !expired(t))
            expect(decided.has(t.sessionId)).toBe(false);
        }
      }),
    );
  });

  test("complete is present exactly when the outcome's status differs from the current one", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const byId = new Map(c.targets.map((t) => [t.sessionId, t]));
        for (const d of run(c)) {
          const current = byId.get(d.sessionId)!.status;
          const to = seedTransition(c.spec, d.result)?.session;
          const changes = to !== undefined && to !== current;
          expect(d.fromStatus).toBe(current);
          expect(d.toStatus).toBe(changes ? to : undefined);
          expect(d.history.toStatus).toBe(changes ? to : undefined);
          if (changes) {
            expect(d.complete).toMatchObject({ from: current, to, result: d.result, handler: c.spec.name });
            expect(d.complete?.message).toBe(c.result.messages?.[d.sessionId]);
          } else {
            expect(d.complete).toBeUndefined();
          }
          expect(d.kernelStatus).toBe(seedTransition(c.spec, d.result)?.kernel);
        }
      }),
    );
  });

  test("an id listed twice or not a target is always rejected with the id named", () => {
    fc.assert(
      fc.property(
        caseArb.filter((c) => c.targets.length > 0),
        fc.constantFrom("successes", "failures", "skipped"),
        fc.boolean(),
        (c, list, ghost) => {
          // Either an id that was never a target, or one the case already listed, added to `list` again.
          const id = ghost ? "ghost" : c.targets[0]!.sessionId;
          fc.pre(ghost || c.bucket.get(id) !== "none");
          const bad: HandlerResult = { ...c.result, [list]: [...c.result[list], id] };
          let caught: unknown;
          try {
            judge({ handler: c.spec, result: bad, targets: c.targets, nowMs: NOW_MS });
          } catch (e) {
            caught = e;
          }
          expect(caught).toBeInstanceOf(HandlerContractError);
          expect((caught as HandlerContractError).sessionId).toBe(id);
          expect((caught as Error).message).toContain(`session ${id} `);
        },
      ),
    );
  });
});

// ---- Promotion matching vs. the seed's SQL formulation ---------------------------------------

interface KernelRow {
  session_id: string;
  status: KernelStatus;
}

/** `SELECT DISTINCT session_id FROM kernels WHERE session_id IN (:ids) AND status [NOT] IN (:check)` */
function selectDistinctSessionIds(
  kernels: readonly KernelRow[],
  ids: ReadonlySet<string>,
  check: ReadonlySet<KernelStatus>,
  notIn: boolean,
): Set<string> {
  return new Set(
    kernels.filter((k) => ids.has(k.session_id) && check.has(k.status) !== notIn).map((k) => k.session_id),
  );
}

/** The seed's three formulations: which of `ids` meet the condition. */
function seedSqlMatches(
  kernels: readonly KernelRow[],
  ids: ReadonlySet<string>,
  check: ReadonlySet<KernelStatus>,
  matchType: KernelMatchType,
): Set<string> {
  switch (matchType) {
    case "ALL": {
      // "session_id not in result = meets ALL condition"
      const notMeeting = selectDistinctSessionIds(kernels, ids, check, true);
      return new Set([...ids].filter((id) => !notMeeting.has(id)));
    }
    case "ANY":
      // "session_id in result = meets ANY condition"
      return selectDistinctSessionIds(kernels, ids, check, false);
    case "NOT_ANY": {
      // "session_id not in result = meets NOT_ANY condition"
      const inCondition = selectDistinctSessionIds(kernels, ids, check, false);
      return new Set([...ids].filter((id) => !inCondition.has(id)));
    }
  }
}

const kernelSetArb = fc.record({
  sessionCount: fc.integer({ min: 1, max: 6 }),
  // Rows may name sessions 0..7, so some sessions have no kernels and some rows are outside the ids.
  rows: fc.array(
    fc.record({
      session_id: fc.integer({ min: 0, max: 7 }).map((i) => `s${i}`),
      status: fc.constantFrom(...KERNEL_STATUSES),
    }),
    { maxLength: 20 },
  ),
  check: fc.subarray(KERNEL_STATUSES).map((xs) => new Set(xs)),
  matchType: fc.constantFrom<KernelMatchType>("ALL", "ANY", "NOT_ANY"),
});

describe("promotion matching agrees with the seed's SQL formulation", () => {
  test("kernelsMatch: ALL / ANY / NOT_ANY, sessions with no kernels included", () => {
    fc.assert(
      fc.property(kernelSetArb, ({ sessionCount, rows, check, matchType }) => {
        const ids = new Set(Array.from({ length: sessionCount }, (_, i) => `s${i}`));
        const sql = seedSqlMatches(rows, ids, check, matchType);
        for (const id of ids) {
          const statuses = rows.filter((r) => r.session_id === id).map((r) => r.status);
          expect(kernelsMatch(statuses, check, matchType)).toBe(sql.has(id));
        }
      }),
    );
  });

  test("sessionsToPromote: status filter, then the SQL condition, over the real promotion specs", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.values(PROMOTION_HANDLERS)),
        kernelSetArb,
        fc.array(fc.constantFrom(...SESSION_STATUSES), { minLength: 6, maxLength: 6 }),
        (spec, { sessionCount, rows }, statuses) => {
          const ids = Array.from({ length: sessionCount }, (_, i) => `s${i}`);
          const targets: SessionWithKernels[] = ids.map((id, i) => ({
            session: session(id, statuses[i]!),
            kernels: rows.filter((r) => r.session_id === id).map((r, k) => kernel(id, k, r.status)),
          }));
          const inStatus = new Set(ids.filter((_, i) => spec.targetSessionStatuses.includes(statuses[i]!)));
          const sql = seedSqlMatches(rows, inStatus, spec.checkKernelStatuses, spec.matchType);
          // A session read without kernels is never promoted (promotion.ts), whatever the SQL says.
          const withKernels = new Set(rows.map((r) => r.session_id));
          expect(sessionsToPromote(spec, targets)).toEqual(
            ids.filter((id) => sql.has(id) && withKernels.has(id)),
          );
        },
      ),
    );
  });
});

// ---- History merging --------------------------------------------------------------------------

const draftArb: fc.Arbitrary<HistoryDraft> = fc.record({
  sessionId: fc.constant("s1"),
  handler: fc.constantFrom("ScheduleNewSessions", "PrepareSessions"),
  result: fc.constantFrom<SchedulingResult>("SKIPPED", "NEED_RETRY"),
  fromStatus: fc.constant("PENDING"),
  message: fc.option(fc.constantFrom("queue full", "pull failed"), { nil: undefined }),
  atMs: fc.integer({ min: 0, max: 1_000 }).map((d) => NOW_MS + d),
});

describe("placeHistory properties", () => {
  test("over batches: no count is lost, seqs stay contiguous, neighbours never repeat an outcome", () => {
    fc.assert(
      fc.property(fc.array(fc.array(draftArb, { maxLength: 6 }), { maxLength: 6 }), (batches) => {
        const timeline = new Map<number, HistoryRecord>();
        let last: HistoryRecord | undefined;
        for (const batch of batches) {
          const placed = placeHistory(last, batch);
          // Returned records are distinct and in seq order.
          const seqs = placed.map((r) => r.seq);
          expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
          for (const r of placed) timeline.set(r.seq, r);
          last = placed.at(-1) ?? last;
        }
        const records = [...timeline.values()].sort((a, b) => a.seq - b.seq);
        const drafts = batches.flat().length;
        expect(records.reduce((sum, r) => sum + r.count, 0)).toBe(drafts);
        expect(records.map((r) => r.seq)).toEqual(records.map((_, i) => i));
        for (let i = 1; i < records.length; i++) {
          const [a, b] = [records[i - 1]!, records[i]!];
          expect([a.handler, a.result, a.message]).not.toEqual([b.handler, b.result, b.message]);
        }
      }),
    );
  });
});
