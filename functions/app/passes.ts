/**
 * The handler passes one coordinator run may make, in flow order from the end of the lifecycle
 * to its start, so that capacity freed by terminating sessions is seen by ScheduleNewSessions
 * in the same run.
 */
import { PROMOTION_HANDLERS, type PromotionHandlerSpec } from "../core/handlers.ts";
import type { SessionStatus as Status } from "../core/status.ts";
import type { LifecycleHandler } from "./lifecycle/handler.ts";
import { prepareSessions } from "./lifecycle/prepare-sessions.ts";
import { scheduleNewSessions } from "./lifecycle/schedule-new-sessions.ts";
import { startSessions } from "./lifecycle/start-sessions.ts";
import { terminateSessions } from "./lifecycle/terminate-sessions.ts";

export type Pass =
  | { readonly kind: "lifecycle"; readonly handler: LifecycleHandler }
  | { readonly kind: "promotion"; readonly spec: PromotionHandlerSpec };

export const PASSES: readonly Pass[] = [
  { kind: "lifecycle", handler: terminateSessions },
  { kind: "promotion", spec: PROMOTION_HANDLERS.PromoteToTerminated },
  { kind: "promotion", spec: PROMOTION_HANDLERS.DetectTermination },
  { kind: "promotion", spec: PROMOTION_HANDLERS.PromoteToRunning },
  { kind: "lifecycle", handler: startSessions },
  { kind: "lifecycle", handler: prepareSessions },
  { kind: "promotion", spec: PROMOTION_HANDLERS.PromoteToPrepared },
  { kind: "lifecycle", handler: scheduleNewSessions },
];

export function passStatuses(pass: Pass): readonly Status[] {
  return pass.kind === "lifecycle"
    ? pass.handler.spec.targetSessionStatuses
    : pass.spec.targetSessionStatuses;
}

export function passName(pass: Pass): string {
  return pass.kind === "lifecycle" ? pass.handler.spec.name : pass.spec.name;
}
