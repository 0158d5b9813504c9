/**
 * The coordinator's judgment for the deployment and route families (Backend.AI's BEP-1030), pure: a handler's
 * result in, one decision per judged target out. No expiry, no give-up, no try counts: a
 * deployment handler's target succeeded or failed; a route handler's also may be stale (not
 * reported on within its interval). Targets in no list are left alone, with no history.
 */
import { HandlerContractError } from "../coordinator/errors.ts";
import {
  DeploymentResult,
  RouteResult,
  type DeploymentHandlerSpec,
  type DeploymentStatus,
  type RouteHandlerSpec,
  type RouteStatus,
} from "./tables.ts";

/** What a deployment or route handler returns: each target in at most one list. */
export interface FamilyHandlerResult {
  readonly successes: readonly string[];
  readonly failures: readonly string[];
  /** Routes only, and only from a handler with a STALE transition (HealthCheckRoute). */
  readonly stale?: readonly string[];
  /** Why, keyed by id (a failed health check's status code, a provisioning error). */
  readonly messages?: Readonly<Record<string, string>>;
}

export interface FamilyTarget<S extends string> {
  readonly id: string;
  readonly status: S;
}

export interface FamilyHistoryDraft<S extends string, R extends string> {
  readonly id: string;
  readonly handler: string;
  readonly result: R;
  readonly fromStatus: S;
  /** Present when the status changes; "(maintain)" records history only. */
  readonly toStatus?: S;
  readonly message?: string;
  readonly atMs: number;
}

export interface FamilyDecision<S extends string, R extends string> {
  readonly id: string;
  readonly result: R;
  readonly from: S;
  /** Present exactly when the status changes. */
  readonly to?: S;
  readonly history: FamilyHistoryDraft<S, R>;
}

export type DeploymentDecision = FamilyDecision<DeploymentStatus, DeploymentResult>;
export type RouteDecision = FamilyDecision<RouteStatus, RouteResult>;

export function judgeDeployments(
  handler: DeploymentHandlerSpec,
  result: FamilyHandlerResult,
  targets: readonly FamilyTarget<DeploymentStatus>[],
  nowMs: number,
): DeploymentDecision[] {
  if (result.stale !== undefined && result.stale.length > 0) {
    throw new HandlerContractError(handler.name, result.stale[0]!, "stale, but deployments are never stale");
  }
  return judgeFamily(handler, result, targets, nowMs, {
    [DeploymentResult.SUCCESS]: handler.success,
    [DeploymentResult.FAILURE]: handler.failure,
  });
}

export function judgeRoutes(
  handler: RouteHandlerSpec,
  result: FamilyHandlerResult,
  targets: readonly FamilyTarget<RouteStatus>[],
  nowMs: number,
): RouteDecision[] {
  const stale = result.stale ?? [];
  if (stale.length > 0 && handler.stale === undefined) {
    throw new HandlerContractError(handler.name, stale[0]!, "stale, but the handler has no STALE transition");
  }
  return judgeFamily(handler, result, targets, nowMs, {
    [RouteResult.SUCCESS]: handler.success,
    [RouteResult.FAILURE]: handler.failure,
    [RouteResult.STALE]: handler.stale,
  });
}

function judgeFamily<S extends string, R extends string>(
  handler: { readonly name: string; readonly targetStatuses: readonly S[] },
  result: FamilyHandlerResult,
  targets: readonly FamilyTarget<S>[],
  nowMs: number,
  transitions: Readonly<Record<R, S | undefined>>,
): FamilyDecision<S, R>[] {
  const byId = new Map(targets.map((t) => [t.id, t]));
  for (const target of targets) {
    if (!handler.targetStatuses.includes(target.status)) {
      throw new HandlerContractError(handler.name, target.id, `as a target, but it is ${target.status}`);
    }
  }
  const lists = [
    ["SUCCESS", result.successes],
    ["FAILURE", result.failures],
    ["STALE", result.stale ?? []],
  ] as const;
  const seen = new Map<string, string>();
  const decisions: FamilyDecision<S, R>[] = [];
  for (const [outcome, ids] of lists) {
    for (const id of ids) {
      const target = byId.get(id);
      if (!target) throw new HandlerContractError(handler.name, id, `as ${outcome} but it was not a target`);
      const previous = seen.get(id);
      if (previous !== undefined) {
        throw new HandlerContractError(handler.name, id, `as both ${previous} and ${outcome}`);
      }
      seen.set(id, outcome);
      const to = transitions[outcome as R];
      const changes = to !== undefined && to !== target.status;
      const message = result.messages?.[id];
      decisions.push({
        id,
        result: outcome as R,
        from: target.status,
        ...(changes ? { to } : {}),
        history: {
          id,
          handler: handler.name,
          result: outcome as R,
          fromStatus: target.status,
          ...(changes ? { toStatus: to } : {}),
          ...(message !== undefined ? { message } : {}),
          atMs: nowMs,
        },
      });
    }
  }
  return decisions;
}
