/**
 * The deployments function's application layer (Backend.AI's deployments and their routes): loads what the core decides on,
 * calls it, and carries out its effects. A batch's requests and health reports are applied
 * first (each a guarded write, re-read on conflict); then every deployment they touched, that a
 * status change woke, or (on the sweep) every live one, takes one pass of its handlers
 * (core/deployments/pass.ts): the pass's change is written, then executions are started,
 * replicas' sessions submitted or cancelled through the bus as any client's, and callbacks sent.
 */
import { DetailType } from "../core/events.ts";
import type { BackingSession } from "../core/deployments/handlers.ts";
import { applyProbes } from "../core/deployments/health.ts";
import {
  applyRequest,
  parseDeploymentInbound,
  requestRefusal,
  type DeploymentRequest,
  type HealthReport,
} from "../core/deployments/inbound.ts";
import type { Deployment, Route } from "../core/deployments/model.ts";
import { newDeployment, planPass, type PassPlan } from "../core/deployments/pass.ts";
import { serviceSessionSpec } from "../core/deployments/spec.ts";
import {
  RouteStatus,
  TERMINAL_DEPLOYMENT_STATUSES,
  TERMINAL_ROUTE_STATUSES,
} from "../core/deployments/tables.ts";
import type { DeploymentRepository } from "../core/ports/deployments.ts";
import type { AgentRepository } from "../core/ports/agents.ts";
import type { JobRepository } from "../core/ports/jobs.ts";
import type { SessionRepository } from "../core/ports/sessions.ts";
import { sessionResult } from "../core/sessions.ts";
import { checkAgentEvent } from "./agents.ts";
import type { EventRejectedDetailInput } from "../core/ports/event-bus.ts";
import type { Logger } from "./logger.ts";
import type { Clock } from "../core/ports/clock.ts";
import type { DeploymentBusPort } from "../core/ports/event-bus.ts";
import type { FamilyExecutionsPort } from "../core/ports/family-executions.ts";
import { REJECTION_TTL_SECONDS } from "./jobs.ts";
import { rereadOnConflict } from "./reread.ts";
import { isTransient } from "./retryable.ts";
import type { LeaseRepository } from "../core/ports/leases.ts";
import { serialized } from "./serialized.ts";

export interface DeploymentsDeps {
  readonly store: DeploymentRepository;
  /** The sessions behind routes, the submissions refused, and the agents reporting health. */
  readonly sessions: Pick<SessionRepository, "getSessions"> &
    Pick<JobRepository, "listRejections" | "recordRejection"> &
    Pick<AgentRepository, "getAgent">;
  readonly executions: FamilyExecutionsPort;
  readonly bus: DeploymentBusPort;
  readonly clock: Clock;
  readonly log: Logger;
  /**
   * A deployment's passes serialized by a lease in the table (serialized.ts), held at most
   * `leaseMs` (the function's timeout). Absent: every run passes over what it woke itself.
   */
  readonly leases?: { readonly leases: LeaseRepository; readonly leaseMs: number };
}

/** The lease that serializes a deployment's handlers. */
export const deploymentLeaseKey = (deploymentId: string): string => `deployment#${deploymentId}`;

export interface DeploymentsReport {
  /** Indexes of the envelopes to redeliver (their work failed with a retryable error). */
  readonly retry: readonly number[];
  readonly rejected: number;
  readonly passes: number;
}

/** Passes one wake may run back to back (64 replicas' changes take at most three). */
const MAX_PASSES = 8;

export class Deployments {
  readonly #d: DeploymentsDeps;

  constructor(deps: DeploymentsDeps) {
    this.#d = deps;
  }

  async run(envelopes: readonly unknown[], options: { readonly sweep: boolean }): Promise<DeploymentsReport> {
    const rejections: EventRejectedDetailInput[] = [];
    const refused: { envelope: unknown; reason: string }[] = [];
    const retry = new Set<number>();
    /** Each deployment to pass over, and the envelopes that woke it (redelivered if its pass fails). */
    const woken = new Map<string, number[]>();
    const wake = (id: string, index?: number) =>
      woken.set(id, [...(woken.get(id) ?? []), ...(index !== undefined ? [index] : [])]);
    /** Health reports by deployment: each deployment's are applied in one write. */
    const reports = new Map<string, { index: number; event: HealthReport; envelope: unknown }[]>();
    let sweep = options.sweep;
    for (const [index, envelope] of envelopes.entries()) {
      const inbound = parseDeploymentInbound(envelope);
      const reject = (reason: string) => {
        rejections.push(this.#rejection(inbound.kind === "invalid" ? inbound : eventOf(inbound), reason));
        refused.push({ envelope, reason });
      };
      try {
        switch (inbound.kind) {
          case "invalid":
            reject(inbound.reason);
            break;
          case "sweep":
            sweep = true;
            break;
          case "wake":
            wake(inbound.deploymentId, index);
            break;
          case "request": {
            const why = await this.#request(inbound.event);
            if (why !== undefined) reject(why);
            else wake(inbound.event.detail.deploymentId, index);
            break;
          }
          case "health": {
            const id = inbound.event.detail.deploymentId;
            reports.set(id, [...(reports.get(id) ?? []), { index, event: inbound.event, envelope }]);
            break;
          }
        }
      } catch (error) {
        if (isTransient(error)) {
          this.#d.log.warn("event not applied; it is redelivered", { index, error: String(error) });
          retry.add(index);
        } else {
          // Never a silent drop, and never a poison message holding up the queue's one group.
          this.#d.log.error("event not applied", { index, error: String(error) });
          reject(`not applied: ${String(error)}`);
        }
      }
    }
    for (const [deploymentId, batch] of reports) {
      try {
        const refusals = await this.#health(deploymentId, batch);
        for (const { index, event, envelope } of batch) {
          const why = refusals.get(index);
          if (why === undefined) {
            wake(deploymentId, index);
            continue;
          }
          rejections.push(this.#rejection(eventOf({ kind: "health", event }), why));
          refused.push({ envelope, reason: why });
        }
      } catch (error) {
        if (!isTransient(error)) throw error;
        this.#d.log.warn("health reports not applied; they are redelivered", {
          deploymentId,
          error: String(error),
        });
        for (const { index } of batch) retry.add(index);
      }
    }
    if (sweep) {
      for (const d of await this.#d.store.listDeployments()) {
        if (!TERMINAL_DEPLOYMENT_STATUSES.has(d.status)) wake(d.id);
      }
    }
    let passes = 0;
    for (const [id, indexes] of woken) {
      try {
        // A deployment another run is passing over is left to it: it passes once more before
        // it lets go, so the wake is not lost.
        const leases = this.#d.leases;
        if (leases === undefined) await this.pass(id);
        else {
          const deps = { ...leases, clock: this.#d.clock, log: this.#d.log };
          await serialized(deps, deploymentLeaseKey(id), () => this.pass(id));
        }
        passes++;
      } catch (error) {
        if (isTransient(error)) {
          this.#d.log.warn("deployment pass failed; its events are redelivered", {
            deploymentId: id,
            error: String(error),
          });
          for (const i of indexes) retry.add(i);
        } else {
          // What woke it was applied; the next wake (at the latest the sweep) passes again.
          this.#d.log.error("deployment pass failed", { deploymentId: id, error: String(error) });
        }
      }
    }
    if (rejections.length > 0) {
      for (const r of rejections) this.#d.log.warn("event rejected", { ...r });
      for (const { envelope, reason } of refused) await this.#recordRefusal(envelope, reason);
      await this.#d.bus.rejected(rejections);
    }
    return { retry: [...retry].sort((a, b) => a - b), rejected: rejections.length, passes };
  }

  /**
   * The deployment's handlers, pass after pass while a pass had more to write than one write
   * holds (a scale of many replicas); each pass re-planned from a fresh read when its write
   * conflicts.
   */
  async pass(deploymentId: string): Promise<void> {
    for (let n = 0; n < MAX_PASSES; n++) {
      if (!(await this.#passOnce(deploymentId))) return;
    }
    this.#d.log.warn("deployment passes left work for the next wake", { deploymentId, passes: MAX_PASSES });
  }

  /** Whether the pass left work for another. */
  async #passOnce(deploymentId: string): Promise<boolean> {
    const plan = await rereadOnConflict(async () => {
      const found = await this.#d.store.getDeployment(deploymentId);
      if (found === undefined) return undefined;
      const sessions = await this.#backingSessions(found.routes);
      const planned = planPass({
        deployment: found.deployment,
        routes: found.routes,
        sessions,
        nowMs: this.#d.clock.nowMs(),
      });
      if (planned.change !== undefined) await this.#d.store.saveDeployment(planned.change);
      return { planned, deployment: found.deployment };
    });
    if (plan === undefined) return false;
    await this.#carryOut(plan.planned, plan.deployment);
    return plan.planned.more;
  }

  async #carryOut(plan: PassPlan, deployment: Deployment): Promise<void> {
    const { executions, bus } = this.#d;
    if (plan.startDeployment) await executions.startDeployment(deployment.id, deployment.execution);
    for (const route of plan.startRoutes) await executions.startRoute(route.id, route.execution);
    if (plan.submit.length > 0) {
      const spec = serviceSessionSpec(deployment.spec);
      await bus.submitSessions(
        plan.submit.map((route) => ({
          sessionId: route.sessionId,
          spec,
          service: {
            deploymentId: deployment.id,
            routeId: route.id,
            ...(deployment.spec.service.port !== undefined ? { port: deployment.spec.service.port } : {}),
            probe: {
              path: deployment.spec.healthCheck.path,
              intervalSeconds: deployment.spec.healthCheck.intervalSeconds,
              timeoutSeconds: deployment.spec.healthCheck.timeoutSeconds,
            },
          },
        })),
      );
    }
    if (plan.cancel.length > 0) await bus.cancelSessions(plan.cancel);
    for (const callback of plan.callbacks) {
      const outcome = await executions.complete(callback.taskToken, callback.leaving);
      if (outcome === "already-closed") {
        this.#d.log.info("callback already closed", { entity: callback.entity, id: callback.id });
      }
    }
  }

  /**
   * The sessions behind the routes, as the handlers read them. A route's session the
   * coordinator refused (it never existed) counts as ended, with the refusal's reason.
   */
  async #backingSessions(routes: readonly Route[]): Promise<Map<string, BackingSession>> {
    const wanted = routes.filter((r) => !TERMINAL_ROUTE_STATUSES.has(r.status)).map((r) => r.sessionId);
    const sessions = new Map<string, BackingSession>();
    if (wanted.length === 0) return sessions;
    for (const s of await this.#d.sessions.getSessions(wanted)) {
      const result = sessionResult(s);
      sessions.set(s.session.id, {
        status: s.session.status,
        ...(result !== undefined ? { result } : {}),
        // A session that backs no route ("") is no route's, whatever its id.
        routeId: s.session.service?.routeId ?? "",
      });
    }
    for (const route of routes) {
      if (route.status !== RouteStatus.PROVISIONING || sessions.has(route.sessionId)) continue;
      const [refusal] = await this.#d.sessions.listRejections(route.sessionId);
      if (refusal !== undefined) {
        sessions.set(route.sessionId, {
          status: "CANCELLED",
          result: `refused: ${refusal.reason}`,
          routeId: route.id,
        });
      }
    }
    return sessions;
  }

  /** Applies a deployment request; returns why it is refused, if it is. */
  async #request(event: DeploymentRequest): Promise<string | undefined> {
    const { store, clock } = this.#d;
    const id = event.detail.deploymentId;
    return rereadOnConflict(async () => {
      const stored = (await store.getDeployment(id))?.deployment;
      const nowMs = clock.nowMs();
      const outcome = applyRequest(event, stored, nowMs, (previous) =>
        newDeployment(
          id,
          (event as Extract<DeploymentRequest, { detailType: "Deployment Created" }>).detail.spec,
          nowMs,
          previous,
        ),
      );
      if (outcome.kind === "reject") return outcome.reason;
      if (outcome.kind === "save") {
        await store.saveDeployment({
          deployment: {
            next: outcome.deployment,
            expected:
              outcome.expected === "absent"
                ? "absent"
                : { status: outcome.expected.status, version: outcome.expected.version },
          },
          history: [
            {
              entity: "deployment",
              id,
              handler: event.detailType === DetailType.DeploymentCreated ? "Create" : event.detailType,
              result: "SUCCESS",
              fromStatus: stored?.status ?? outcome.deployment.status,
              ...(event.detailType === DetailType.DeploymentScaled
                ? { message: `${stored?.spec.replicas ?? 0} → ${event.detail.replicas} replica(s)` }
                : event.detailType === DetailType.DeploymentDestroyRequested
                  ? { message: event.detail.reason ?? "destroy requested" }
                  : {}),
              atMs: nowMs,
            },
          ],
        });
      }
      return undefined;
    });
  }

  /**
   * Records replicas' probes on their routes, one write for the deployment's reports of the
   * batch. A report counts once it is proven to come from the agent it names (its signature),
   * and that agent runs the route's session in the run it names; a report of an earlier run, or
   * of a route that has ended, is late and changes nothing. Returns each refused report's reason.
   */
  async #health(
    deploymentId: string,
    batch: readonly { readonly index: number; readonly event: HealthReport }[],
  ): Promise<Map<number, string>> {
    const { store, sessions, clock } = this.#d;
    const refusals = new Map<number, string>();
    const agents = new Map<string, Awaited<ReturnType<typeof sessions.getAgent>>>();
    for (const { event } of batch) {
      const id = event.detail.agentId;
      if (!agents.has(id)) agents.set(id, await sessions.getAgent(id));
    }
    const signed = batch.filter(({ index, event }) => {
      const d = event.detail;
      const why = checkAgentEvent(agents.get(d.agentId), d.agentId, d.incarnation, event.detailType, d);
      if (why !== undefined) refusals.set(index, why);
      return why === undefined;
    });
    const backing = new Map(
      (await sessions.getSessions([...new Set(signed.map(({ event }) => event.detail.sessionId))])).map(
        (s) => [s.session.id, s],
      ),
    );
    const current = signed.filter(({ index, event }) => {
      const d = event.detail;
      const session = backing.get(d.sessionId);
      if (session === undefined || session.session.service?.routeId !== d.routeId) {
        refusals.set(index, `detail.sessionId: ${d.sessionId} is not the session of route ${d.routeId}`);
        return false;
      }
      if (d.runIndex !== session.session.runIndex) return false;
      if (!session.kernels.some((k) => k.agentId === d.agentId)) {
        refusals.set(index, `detail.agentId: agent ${d.agentId} does not run route ${d.routeId}'s session`);
        return false;
      }
      return true;
    });
    if (current.length === 0) return refusals;
    await rereadOnConflict(async () => {
      const found = await store.getDeployment(deploymentId);
      const routes = new Map((found?.routes ?? []).map((r) => [r.id, r]));
      const changed = new Map<string, Route>();
      for (const { index, event } of current) {
        const d = event.detail;
        const route = changed.get(d.routeId) ?? routes.get(d.routeId);
        if (route === undefined) {
          refusals.set(index, `detail.routeId: no route ${d.routeId} in deployment ${deploymentId}`);
          continue;
        }
        if (TERMINAL_ROUTE_STATUSES.has(route.status)) continue;
        const health = applyProbes(route.health, d.probes);
        if (health === route.health && route.agentId === d.agentId && route.port === d.port) continue;
        changed.set(route.id, {
          ...route,
          health,
          agentId: d.agentId,
          port: d.port,
          updatedAtMs: clock.nowMs(),
        });
      }
      if (changed.size === 0) return;
      await store.saveDeployment({
        routes: [...changed.values()].map((next) => {
          const before = routes.get(next.id)!;
          return { next, expected: { status: before.status, version: before.version } };
        }),
      });
    });
    return refusals;
  }

  /**
   * A refused deployment request is kept where its sender reads it (`cairn deployment create
   * --wait` says why), under the deployment's id, when the envelope names a usable one.
   */
  async #recordRefusal(envelope: unknown, reason: string): Promise<void> {
    const refusal = requestRefusal(envelope, reason, this.#d.clock.nowMs());
    if (refusal !== undefined) await this.#d.sessions.recordRejection(refusal, REJECTION_TTL_SECONDS);
  }

  #rejection(
    from: { readonly eventId?: string; readonly detailType?: string; readonly source?: string },
    reason: string,
  ): EventRejectedDetailInput {
    return {
      ...(from.eventId !== undefined ? { eventId: from.eventId.slice(0, 256) } : {}),
      ...(from.detailType !== undefined ? { detailType: from.detailType.slice(0, 256) } : {}),
      ...(from.source !== undefined ? { source: from.source.slice(0, 256) } : {}),
      reason: reason.slice(0, 4096),
      atMs: this.#d.clock.nowMs(),
    };
  }
}

function eventOf(inbound: {
  readonly kind: string;
  readonly event?: { id: string; detailType: string; source: string };
}) {
  return inbound.event !== undefined
    ? { eventId: inbound.event.id, detailType: inbound.event.detailType, source: inbound.event.source }
    : {};
}
