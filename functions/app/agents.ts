/**
 * The coordinator's side of the agent protocol (docs/agents.md): registration, heartbeats,
 * report authentication and dead agents.
 *
 * - Registration creates the agent's queue and answers on it with the incarnation's signing
 *   key. A new incarnation of a known agent first retires the old one: whatever the old
 *   process ran is lost (its kernels WORKER_FAILED), so nothing waits for reports that cannot come.
 * - A heartbeat or report counts only if it is signed with the current incarnation's key; the
 *   payload's `agentId` alone proves nothing. A heartbeat cannot offer more than was registered.
 * - An agent silent past the liveness window is declared lost (`markLost`): its sessions leave
 *   their stages at once (core/agent-loss.ts). A lost incarnation that speaks again is fenced:
 *   refused, and told on its queue to stop everything and register anew.
 */
import type { CairnConfig } from "../config.ts";
import {
  AgentMessageType,
  type EndedMessage,
  type FencedMessage,
  type RegisteredMessage,
} from "../core/agent-protocol.ts";
import { agentLossPlan } from "../core/agent-loss.ts";
import { endedRuns } from "../core/agent-reconcile.ts";
import { isFargatePool } from "../core/fargate-pool.ts";
import { DetailType } from "../core/events.ts";
import type {
  AgentHeartbeatDetail,
  AgentRegistrationRequestedDetail,
  KernelStatusChangedDetail,
} from "../core/agent-events.ts";
import type { Agent } from "../core/model.ts";
import { hasCode } from "../core/ports/errors.ts";
import { type AgentRepository } from "../core/ports/agents.ts";
import { type SessionRepository } from "../core/ports/sessions.ts";
import { errorMessage } from "./lifecycle/handler.ts";
import { rereadOnConflict } from "./reread.ts";
import { newSigningKey, signatureMatches } from "../topology/agent-signature.ts";
import type { Logger } from "./logger.ts";
import type { AgentChannelPort } from "../core/ports/agent-channel.ts";
import type { Clock } from "../core/ports/clock.ts";
import type { LifecycleExecutionsPort } from "../core/ports/lifecycle-executions.ts";

export interface AgentsDeps {
  readonly store: SessionRepository & AgentRepository;
  readonly channel: AgentChannelPort;
  readonly executions: LifecycleExecutionsPort;
  readonly config: CairnConfig;
  readonly clock: Clock;
  readonly log: Logger;
}

/** A refusal, with the reason the `Event Rejected` event carries. */
export interface Refusal {
  readonly refused: string;
}

export class Agents {
  readonly #d: AgentsDeps;
  /** When this instance last looked for silent agents (heartbeat batches look at most every third of the window). */
  #lastLivenessCheckMs = Number.NEGATIVE_INFINITY;

  constructor(deps: AgentsDeps) {
    this.#d = deps;
  }

  async register(detail: AgentRegistrationRequestedDetail): Promise<{ readonly retired: boolean }> {
    const { store, channel, clock } = this.#d;
    const { agentId, incarnation } = detail;
    await channel.open(agentId);
    let agent = await store.getAgent(agentId);
    let retired = false;
    if (agent?.incarnation !== incarnation) {
      if (agent?.incarnation !== undefined) {
        retired = true;
        // The old process is gone (this one replaced it): what it ran is lost. Retire it before
        // the new registration makes the agent placeable again, so no new placement is mistaken
        // for the old one's.
        await store.markAgentLost({ agentId, incarnation: agent.incarnation, nowMs: clock.nowMs() });
        await this.evict(
          agentId,
          `agent ${agentId} restarted (incarnation ${agent.incarnation} → ${incarnation})`,
        );
      }
      ({ agent } = await store.registerAgent({
        agentId,
        incarnation,
        capacity: detail.capacity,
        labels: detail.labels ?? {},
        signingKey: newSigningKey(),
        nowMs: clock.nowMs(),
      }));
      this.#d.log.info("agent registered", { agentId, incarnation, capacity: detail.capacity });
    }
    if (agent.incarnation !== incarnation || agent.signingKey === undefined) {
      throw new Error(
        `agent ${agentId}: registration of ${incarnation} was overtaken by ${agent.incarnation ?? "none"}`,
      );
    }
    const registered: RegisteredMessage = {
      type: AgentMessageType.registered,
      agentId,
      incarnation,
      signingKey: agent.signingKey,
      capacity: { cpu: agent.capacity.cpu, memoryMiB: agent.capacity.memoryMiB },
      labels: { ...agent.labels },
      atMs: clock.nowMs(),
    };
    // Sent again on a redelivered registration: the agent takes the newest for its incarnation.
    await channel.send([{ agentId, message: registered }]);
    return { retired };
  }

  /** Records a signed heartbeat. Returns whether placement should look again (a returning or draining agent). */
  async heartbeat(detail: AgentHeartbeatDetail): Promise<Refusal | { readonly wake: boolean }> {
    const { agentId, incarnation } = detail;
    const nowMs = this.#d.clock.nowMs();
    const agent = await this.#d.store.getAgent(agentId);
    const refusal = await this.#authenticate(agent, agentId, incarnation, DetailType.AgentHeartbeat, detail);
    if (refusal) return refusal;
    const registered = agent!.capacity;
    if (detail.capacity.cpu > registered.cpu || detail.capacity.memoryMiB > registered.memoryMiB) {
      return {
        refused:
          `detail.capacity: cpu ${detail.capacity.cpu} / memoryMiB ${detail.capacity.memoryMiB} exceeds what agent ` +
          `${agentId} registered (cpu ${registered.cpu} / memoryMiB ${registered.memoryMiB}); a heartbeat cannot raise ` +
          `capacity: register again (restart the agent) to change it`,
      };
    }
    try {
      await this.#d.store.heartbeatAgent({
        agentId,
        capacity: registered,
        incarnation,
        draining: detail.draining === true,
        nowMs,
      });
    } catch (error) {
      if (hasCode(error, "AGENT_FENCED")) return this.#fence(agentId, incarnation, errorMessage(error));
      throw error;
    }
    if (detail.runs !== undefined && detail.runs.length > 0) {
      // The heartbeat counts whatever happens here: the next one reconciles again.
      await this.#reconcile(detail).catch((error: unknown) =>
        this.#d.log.error("reconciling an agent's runs failed; its next heartbeat tries again", {
          agentId,
          error: errorMessage(error),
        }),
      );
    }
    const returning = agent!.lastHeartbeatAtMs < nowMs - this.#d.config.agentTimeoutMs;
    const drainingChanged = (agent!.draining === true) !== (detail.draining === true);
    return { wake: returning || drainingChanged };
  }

  /**
   * Names back to the agent every run its heartbeat lists that Cairn considers ended
   * (core/agent-reconcile.ts), on its queue: it stops them and reports their ends.
   */
  async #reconcile(detail: AgentHeartbeatDetail): Promise<void> {
    const runs = detail.runs ?? [];
    const sessions = await this.#d.store.getSessions([...new Set(runs.map((r) => r.sessionId))]);
    const ended = endedRuns(
      detail.agentId,
      detail.incarnation,
      runs,
      new Map(sessions.map((s) => [s.session.id, s])),
    );
    if (ended.length === 0) return;
    this.#d.log.warn("agent runs kernels Cairn considers ended; telling it to stop them", {
      agentId: detail.agentId,
      incarnation: detail.incarnation,
      runs: ended.map((r) => `${r.sessionId}/${r.kernelIndex} run ${r.runIndex}: ${r.reason}`),
    });
    const message: EndedMessage = {
      type: AgentMessageType.ended,
      agentId: detail.agentId,
      incarnation: detail.incarnation,
      runs: ended,
      atMs: this.#d.clock.nowMs(),
    };
    await this.#d.channel.send([{ agentId: detail.agentId, message }]);
  }

  /**
   * Whether a kernel report comes from the agent it names, as registered now (its incarnation,
   * its signature, not fenced). What the report may change is the core's to say
   * (reportRefusal in core/coordinator/inbound.ts).
   */
  async authenticateReport(
    report: KernelStatusChangedDetail,
    getAgent: (agentId: string) => Promise<Agent | undefined> = (id) => this.#d.store.getAgent(id),
  ): Promise<Refusal | undefined> {
    const agent = await getAgent(report.agentId);
    return this.#authenticate(
      agent,
      report.agentId,
      report.incarnation,
      DetailType.KernelStatusChanged,
      report,
    );
  }

  /**
   * Declares lost every agent silent past the window, and makes their sessions leave. Heartbeat
   * batches call it too, at most every third of the window per coordinator instance; the sweep
   * always (it also finishes evictions a failed run left half done).
   */
  async sweepLost(options: { readonly sweep: boolean }): Promise<number> {
    const nowMs = this.#d.clock.nowMs();
    const window = this.#d.config.agentTimeoutMs;
    if (!options.sweep && nowMs - this.#lastLivenessCheckMs < window / 3) return 0;
    this.#lastLivenessCheckMs = nowMs;
    let lost = 0;
    for (const agent of await this.#d.store.listAgents()) {
      // A queue's Fargate pool has no process to fall silent (and no incarnation either).
      if (agent.incarnation === undefined || isFargatePool(agent.id)) continue;
      if (agent.lostAtMs === undefined) {
        if (agent.lastHeartbeatAtMs >= nowMs - window) continue;
        const marked = await this.#d.store.markAgentLost({
          agentId: agent.id,
          incarnation: agent.incarnation,
          silentSinceMs: nowMs - window,
          nowMs,
        });
        if (!marked) continue;
        lost++;
        const silentSec = Math.round((nowMs - agent.lastHeartbeatAtMs) / 1000);
        this.#d.log.warn("agent lost", { agentId: agent.id, incarnation: agent.incarnation, silentSec });
        await this.evict(agent.id, `agent ${agent.id} lost: no heartbeat for ${silentSec} s`);
      } else if (options.sweep) {
        await this.evict(agent.id, `agent ${agent.id} lost at ${new Date(agent.lostAtMs).toISOString()}`);
      }
    }
    return lost;
  }

  /** Every session with kernels alive on the agent leaves them (core/agent-loss.ts). Idempotent. */
  async evict(agentId: string, reason: string): Promise<void> {
    const held = await this.#d.store.allocationsOnAgent(agentId);
    const sessionIds = [...new Set(held.map((a) => a.sessionId))];
    for (const sessionId of sessionIds) {
      try {
        await this.#evictSession(sessionId, agentId, reason);
      } catch (error) {
        // The sweep tries again; one session must not keep the others on a dead agent.
        this.#d.log.error("could not move a session off a lost agent", {
          sessionId,
          agentId,
          error: errorMessage(error),
        });
      }
    }
  }

  async #evictSession(sessionId: string, agentId: string, reason: string): Promise<void> {
    const { store, clock, executions } = this.#d;
    await rereadOnConflict(async (_n, conflict) => {
      const s = conflict?.current ?? (await store.getSession(sessionId));
      if (!s) return;
      const nowMs = clock.nowMs();
      const plan = agentLossPlan(s, agentId, reason, nowMs);
      if (!plan) return;
      const token = s.session.stage.taskToken;
      const transition = plan.transition;
      await store.applyWrite({
        sessionId,
        expected: { status: s.session.status, version: s.session.version },
        nowMs,
        kernels: plan.kernels,
        ...(transition && token !== undefined ? { claimStage: true, claimedToken: token } : {}),
      });
      if (transition && token !== undefined) await executions.complete(token, transition);
      this.#d.log.info("session moved off a lost agent", { sessionId, agentId, status: s.session.status });
    });
  }

  async #authenticate(
    agent: Agent | undefined,
    agentId: string,
    incarnation: string,
    detailType: string,
    detail: Readonly<Record<string, unknown>> & { readonly signature: string },
  ): Promise<Refusal | undefined> {
    const refused = checkAgentSignature(agent, agentId, incarnation, detailType, detail);
    if (refused !== undefined) return { refused };
    if (agent?.lostAtMs !== undefined) {
      return this.#fence(
        agentId,
        incarnation,
        `agent ${agentId} was declared lost at ${new Date(agent.lostAtMs).toISOString()}`,
      );
    }
    return undefined;
  }

  async #fence(agentId: string, incarnation: string, why: string): Promise<Refusal> {
    const fenced: FencedMessage = {
      type: AgentMessageType.fenced,
      agentId,
      incarnation,
      reason: `${why}: its kernels were given up; stop them and register again`,
      atMs: this.#d.clock.nowMs(),
    };
    await this.#d.channel.send([{ agentId, message: fenced }]);
    return { refused: `${why}; its reports are refused until it registers again` };
  }
}

/**
 * Whether an agent's event is its own: registered, this incarnation, signed with its key. The
 * refusal's reason, or undefined when it is. Checked before anything about fencing, so that only
 * the agent itself may learn it was fenced.
 */
export function checkAgentSignature(
  agent: Agent | undefined,
  agentId: string,
  incarnation: string,
  detailType: string,
  detail: Readonly<Record<string, unknown>> & { readonly signature: string },
): string | undefined {
  if (agent?.incarnation === undefined || agent.signingKey === undefined) {
    return `detail.agentId: agent ${agentId} is not registered (an agent sends "Agent Registration Requested" first)`;
  }
  if (agent.incarnation !== incarnation) {
    return `detail.incarnation: ${incarnation} is not agent ${agentId}'s registered incarnation`;
  }
  if (!signatureMatches(agent.signingKey, detailType, detail)) {
    return `detail.signature: does not match agent ${agentId}'s key: the event is not from that agent`;
  }
  return undefined;
}

/**
 * An agent's event that is not a kernel report or heartbeat (a replica's health):
 * refused unless it is the agent's own and the agent is not lost. A lost agent is not fenced
 * here: its next kernel report or heartbeat is, by the coordinator.
 */
export function checkAgentEvent(
  agent: Agent | undefined,
  agentId: string,
  incarnation: string,
  detailType: string,
  detail: Readonly<Record<string, unknown>> & { readonly signature: string },
): string | undefined {
  const refused = checkAgentSignature(agent, agentId, incarnation, detailType, detail);
  if (refused !== undefined) return refused;
  if (agent?.lostAtMs !== undefined) {
    return `detail.agentId: agent ${agentId} was declared lost at ${new Date(agent.lostAtMs).toISOString()}; its reports are refused until it registers again`;
  }
  return undefined;
}
