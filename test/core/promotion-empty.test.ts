/**
 * ALL, ANY and NOT_ANY over no kernels. Backend.AI selects sessions through their kernels:
 *
 *   -- NOT_ANY: No kernel meets condition
 *   SELECT DISTINCT session_id FROM kernels WHERE session_id IN (:session_ids) AND status IN (:check_statuses)
 *   -- session_id not in result = meets NOT_ANY condition
 *
 * so a session with no kernel rows is "not in result": it meets ALL and NOT_ANY and never ANY.
 * `kernelsMatch` keeps that reading. A Cairn session always has kernels, so one read without any
 * is a read that missed them, and the promotion handlers never promote it (promotion.ts).
 */
import { describe, expect, test } from "vitest";
import { PROMOTION_HANDLERS } from "../../functions/core/handlers.ts";
import { kernelsMatch, promotionDue, sessionsToPromote } from "../../functions/core/promotion.ts";
import { KernelMatchType } from "../../functions/core/scheduling.ts";
import { kernel, session } from "./fixtures.ts";

describe("the empty kernel set", () => {
  test("kernelsMatch is the seed's SQL: no kernels meet ALL and NOT_ANY, never ANY", () => {
    const check = new Set(["PENDING", "SCHEDULED"] as const);
    expect(kernelsMatch([], check, KernelMatchType.ALL)).toBe(true);
    expect(kernelsMatch([], check, KernelMatchType.NOT_ANY)).toBe(true);
    expect(kernelsMatch([], check, KernelMatchType.ANY)).toBe(false);
  });

  test.each(Object.values(PROMOTION_HANDLERS).map((spec) => [spec.name, spec] as const))(
    "%s never promotes a session read without kernels, and promotes the same session once its kernels are read",
    (_name, spec) => {
      const status = spec.targetSessionStatuses[0]!;
      const s = session("s1", status);
      expect(sessionsToPromote(spec, [{ session: s, kernels: [] }])).toEqual([]);
      expect(promotionDue({ session: s, kernels: [] })).toBe(false);
      // With a kernel that satisfies the handler's condition, the same session is promoted.
      const satisfying = (
        [
          "PENDING",
          "SCHEDULED",
          "PREPARING",
          "PULLING",
          "PREPARED",
          "CREATING",
          "RUNNING",
          "TERMINATED",
        ] as const
      ).find((k) => kernelsMatch([k], spec.checkKernelStatuses, spec.matchType));
      expect(satisfying).toBeDefined();
      expect(sessionsToPromote(spec, [{ session: s, kernels: [kernel("s1", 0, satisfying!)] }])).toEqual([
        "s1",
      ]);
    },
  );
});
