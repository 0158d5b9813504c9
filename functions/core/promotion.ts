/**
 * Promotion matching (Backend.AI's BEP-1030): does a session's kernel set satisfy ALL / ANY / NOT_ANY of the
 * checked statuses?
 *
 * The empty kernel set. `kernelsMatch` is Sokovan's SQL: a session with no kernels satisfies ALL
 * and NOT_ANY (its id is absent from the query of kernels that break the condition) and never ANY.
 * But that SQL "selects sessions through their kernels", and a Cairn session always has kernels
 * (replicas ≥ 1, written with the session in one transaction, never deleted before it), so a
 * session seen without any is a read that missed them, not a session whose kernels have all moved
 * on. Promoting on it would move a session none of whose kernels was seen: PromoteToRunning with
 * nothing running, PromoteToTerminated with kernels still holding capacity. So the promotion
 * handlers (`sessionsToPromote`, `promotionDue`) promote only a session with at least one kernel,
 * for ALL, ANY and NOT_ANY alike; the next read that has its kernels decides.
 */
import { PROMOTION_HANDLERS, type PromotionHandlerSpec } from "./handlers.ts";
import type { Kernel, SessionWithKernels } from "./model.ts";
import { KernelMatchType } from "./scheduling.ts";
import { AttemptOutcome, TERMINAL_KERNEL_STATUSES, type KernelStatus } from "./status.ts";

export function kernelsMatch(
  kernelStatuses: readonly KernelStatus[],
  checkStatuses: ReadonlySet<KernelStatus>,
  matchType: KernelMatchType,
): boolean {
  switch (matchType) {
    case KernelMatchType.ALL:
      return kernelStatuses.every((s) => checkStatuses.has(s));
    case KernelMatchType.ANY:
      return kernelStatuses.some((s) => checkStatuses.has(s));
    case KernelMatchType.NOT_ANY:
      return !kernelStatuses.some((s) => checkStatuses.has(s));
  }
}

/** Ids of the targets the promotion handler promotes, in target order. */
export function sessionsToPromote(
  spec: PromotionHandlerSpec,
  targets: readonly SessionWithKernels[],
): string[] {
  return targets
    .filter(
      ({ session, kernels }) =>
        spec.targetSessionStatuses.includes(session.status) &&
        kernels.length > 0 &&
        kernelsMatch(
          matchedKernels(spec, kernels).map((k) => k.status),
          spec.checkKernelStatuses,
          spec.matchType,
        ),
    )
    .map(({ session }) => session.id);
}

function matchedKernels(spec: PromotionHandlerSpec, kernels: readonly Kernel[]): readonly Kernel[] {
  if (!spec.succeededWaitForSiblings || kernels.every((k) => TERMINAL_KERNEL_STATUSES.has(k.status))) {
    return kernels;
  }
  return kernels.filter((k) => k.outcome !== AttemptOutcome.SUCCEEDED);
}

/** Whether a promotion would move the session on as `copy` shows it (its status, its kernels). */
export function promotionDue(copy: SessionWithKernels): boolean {
  return Object.values(PROMOTION_HANDLERS).some(
    (spec) =>
      spec.targetSessionStatuses.includes(copy.session.status) && sessionsToPromote(spec, [copy]).length > 0,
  );
}
