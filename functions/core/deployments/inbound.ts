/**
 * What reaches the deployments function, sorted, pure: deployment requests and
 * replicas' health reports are parsed against their contracts (a bad one is a rejection naming
 * the field, never dropped); status changes of replicas, deployments and routes only wake their
 * deployment; the sweep's scheduled event wakes every deployment.
 */
import { deploymentIdSchema } from "../service-binding.ts";
import { DetailType, EventSource, parseInboundEvent, type InboundEvent } from "../events.ts";
import type { DeploymentSpec } from "./spec.ts";
import { DeploymentStatus, DESTROYABLE_STATUSES, TERMINAL_DEPLOYMENT_STATUSES } from "./tables.ts";
import type { Deployment } from "./model.ts";
import type { SubmissionRejection } from "../ports/jobs.ts";

export type DeploymentRequest = Extract<
  InboundEvent,
  {
    detailType:
      | typeof DetailType.DeploymentCreated
      | typeof DetailType.DeploymentScaled
      | typeof DetailType.DeploymentDestroyRequested;
  }
>;
export type HealthReport = Extract<InboundEvent, { detailType: typeof DetailType.RouteHealthReported }>;

export type DeploymentInbound =
  | { readonly kind: "request"; readonly event: DeploymentRequest }
  | { readonly kind: "health"; readonly event: HealthReport }
  | { readonly kind: "wake"; readonly deploymentId: string }
  | { readonly kind: "sweep" }
  | {
      readonly kind: "invalid";
      readonly eventId?: string;
      readonly detailType?: string;
      readonly reason: string;
    };

/** Outbound events that only wake the deployment they name. */
const WAKES: readonly string[] = [
  DetailType.SessionStatusChanged,
  DetailType.DeploymentStatusChanged,
  DetailType.RouteStatusChanged,
];

export function parseDeploymentInbound(envelope: unknown): DeploymentInbound {
  const e = (typeof envelope === "object" && envelope !== null ? envelope : {}) as Record<string, unknown>;
  const detailType = typeof e["detail-type"] === "string" ? e["detail-type"] : undefined;
  const eventId = typeof e["id"] === "string" ? e["id"] : undefined;
  const invalid = (reason: string): DeploymentInbound => ({
    kind: "invalid",
    ...(eventId !== undefined ? { eventId } : {}),
    ...(detailType !== undefined ? { detailType } : {}),
    reason,
  });
  if (e["source"] === "aws.events" && detailType === "Scheduled Event") return { kind: "sweep" };
  if (detailType !== undefined && WAKES.includes(detailType)) {
    if (e["source"] !== EventSource.ControlPlane) {
      return invalid(`source: must be "${EventSource.ControlPlane}" for detail-type "${detailType}"`);
    }
    const detail = e["detail"] as Record<string, unknown> | undefined;
    const id = deploymentIdSchema.safeParse(detail?.["deploymentId"]);
    if (!id.success) return invalid("detail.deploymentId: must name the deployment the change belongs to");
    return { kind: "wake", deploymentId: id.data };
  }
  const parsed = parseInboundEvent(envelope);
  if (!parsed.ok) return invalid(parsed.error.message);
  const { event } = parsed;
  switch (event.detailType) {
    case DetailType.DeploymentCreated:
    case DetailType.DeploymentScaled:
    case DetailType.DeploymentDestroyRequested:
      return { kind: "request", event };
    case DetailType.RouteHealthReported:
      if (!event.detail.routeId.startsWith(`${event.detail.deploymentId}-r`)) {
        return invalid(
          `detail.routeId: ${event.detail.routeId} is not a route of ${event.detail.deploymentId}`,
        );
      }
      return { kind: "health", event };
    default:
      return invalid(`${event.detailType} is the coordinator's event, not the deployments function's`);
  }
}

export type RequestOutcome =
  | { readonly kind: "save"; readonly deployment: Deployment; readonly expected: "absent" | Deployment }
  | { readonly kind: "unchanged" }
  | { readonly kind: "reject"; readonly reason: string };

function sameSpec(a: DeploymentSpec, b: DeploymentSpec): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * A request applied to the deployment as stored (undefined: none). `create` builds a new
 * deployment (pass.ts newDeployment); a repeat of the same creation changes nothing.
 */
export function applyRequest(
  event: DeploymentRequest,
  stored: Deployment | undefined,
  nowMs: number,
  create: (previous: Deployment | undefined) => Deployment,
): RequestOutcome {
  const id = event.detail.deploymentId;
  switch (event.detailType) {
    case DetailType.DeploymentCreated: {
      if (stored === undefined) return { kind: "save", deployment: create(undefined), expected: "absent" };
      if (TERMINAL_DEPLOYMENT_STATUSES.has(stored.status)) {
        return { kind: "save", deployment: create(stored), expected: stored };
      }
      if (sameSpec(stored.spec, event.detail.spec)) return { kind: "unchanged" };
      return {
        kind: "reject",
        reason: `detail.deploymentId: deployment ${id} exists (${stored.status}) with another spec; scale it, or destroy it first`,
      };
    }
    case DetailType.DeploymentScaled: {
      if (stored === undefined) return { kind: "reject", reason: `detail.deploymentId: no deployment ${id}` };
      if (!DESTROYABLE_STATUSES.includes(stored.status) || stored.destroyRequest !== undefined) {
        return {
          kind: "reject",
          reason: `detail.deploymentId: deployment ${id} is ${stored.destroyRequest !== undefined && stored.status !== DeploymentStatus.DESTROYED ? "being destroyed" : stored.status}; it cannot be scaled`,
        };
      }
      if (stored.spec.replicas === event.detail.replicas) return { kind: "unchanged" };
      return {
        kind: "save",
        deployment: {
          ...stored,
          spec: { ...stored.spec, replicas: event.detail.replicas },
          updatedAtMs: nowMs,
        },
        expected: stored,
      };
    }
    case DetailType.DeploymentDestroyRequested: {
      if (stored === undefined) return { kind: "reject", reason: `detail.deploymentId: no deployment ${id}` };
      if (stored.destroyRequest !== undefined || TERMINAL_DEPLOYMENT_STATUSES.has(stored.status)) {
        return { kind: "unchanged" };
      }
      return {
        kind: "save",
        deployment: {
          ...stored,
          destroyRequest: { atMs: nowMs, reason: event.detail.reason ?? "destroy requested" },
          updatedAtMs: nowMs,
        },
        expected: stored,
      };
    }
  }
}

const REQUEST_TYPES: readonly string[] = [
  DetailType.DeploymentCreated,
  DetailType.DeploymentScaled,
  DetailType.DeploymentDestroyRequested,
];

/**
 * The refusal to keep for a refused deployment request (by its deployment id and event id), or
 * undefined when the envelope is no request or names no usable id.
 */
export function requestRefusal(
  envelope: unknown,
  reason: string,
  atMs: number,
): SubmissionRejection | undefined {
  const e = (typeof envelope === "object" && envelope !== null ? envelope : {}) as Record<string, unknown>;
  if (typeof e["detail-type"] !== "string" || !REQUEST_TYPES.includes(e["detail-type"])) return undefined;
  const eventId = e["id"];
  if (typeof eventId !== "string" || eventId.length === 0 || eventId.length > 256) return undefined;
  const detail = e["detail"] as Record<string, unknown> | undefined;
  const id = deploymentIdSchema.safeParse(detail?.["deploymentId"]);
  return id.success ? { id: id.data, eventId, reason, atMs } : undefined;
}
