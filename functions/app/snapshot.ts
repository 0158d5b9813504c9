/**
 * What one coordinator run has read, so that the run reads each session (and each agent) once:
 * the events of a batch name their sessions, which are loaded together before any event is
 * applied, and every pass of the run works from the same copies. A session the run writes is
 * forgotten, so its next use reads it again; a copy that went stale because someone else wrote
 * meanwhile is caught by the conditional write (a CONFLICT), never acted on.
 */
import type { Agent, SessionWithKernels } from "../core/model.ts";
import type { AgentRepository } from "../core/ports/agents.ts";
import type { ConflictError } from "../core/ports/errors.ts";
import type { SessionRepository } from "../core/ports/sessions.ts";
import type { Clock } from "../core/ports/clock.ts";

export class RunSnapshot {
  readonly #store: Pick<SessionRepository, "getSessions"> & Pick<AgentRepository, "getAgent">;
  /** null: read, and not there. */
  readonly #sessions = new Map<string, SessionWithKernels | null>();
  readonly #agents: AgentCache;

  constructor(
    store: Pick<SessionRepository, "getSessions"> & Pick<AgentRepository, "getAgent">,
    agents?: AgentCache,
  ) {
    this.#store = store;
    this.#agents = agents ?? new AgentCache(store, { nowMs: () => 0 }, Infinity);
  }

  /** The sessions among `ids` that exist, in the order of `ids`; those not yet read in one batch. */
  async sessions(ids: Iterable<string>): Promise<SessionWithKernels[]> {
    const wanted = [...new Set(ids)];
    const missing = wanted.filter((id) => !this.#sessions.has(id));
    if (missing.length > 0) {
      const read = new Map((await this.#store.getSessions(missing)).map((s) => [s.session.id, s]));
      for (const id of missing) this.#sessions.set(id, read.get(id) ?? null);
    }
    return wanted.flatMap((id) => {
      const s = this.#sessions.get(id);
      return s ? [s] : [];
    });
  }

  async session(id: string): Promise<SessionWithKernels | undefined> {
    return (await this.sessions([id]))[0];
  }

  /** Copies read some other way (a status queue's page): newer than any held. */
  remember(sessions: Iterable<SessionWithKernels>): void {
    for (const s of sessions) this.#sessions.set(s.session.id, s);
  }

  /**
   * A refused write that showed the session as it stands (ConflictError.current): that copy is
   * the fresh read the next attempt needs.
   */
  rememberRefused(conflict: ConflictError | undefined): void {
    if (conflict?.current) this.remember([conflict.current]);
  }

  /** Something else wrote sessions this run may hold (an agent's loss, a repair): read all again. */
  clear(): void {
    this.#sessions.clear();
  }

  /** The session was (or may have been) written: its next use reads it again. */
  forget(id: string): void {
    this.#sessions.delete(id);
  }

  /**
   * The agent, read at most once per run (and, with a shared cache, once per its time to live).
   * Given the incarnation a message is signed by, a copy of another incarnation is read again:
   * the agent may have registered anew since, and a report must never be judged (or its sender
   * fenced) against an incarnation that is gone.
   */
  agent(id: string, incarnation?: string): Promise<Agent | undefined> {
    return this.#agents.get(id, incarnation);
  }
}

/**
 * How long a coordinator instance uses an agent as read: a tenth of the liveness window, between
 * 250 ms and 5 s. A copy that old makes an agent look silent at most a tenth of the window longer
 * than it has been, so an agent judged lost on a copy had been silent for nine tenths of it (its
 * heartbeats come several times per window); a short window (a test's 3 s) gets a short copy.
 * The reads this saves are a rate per second (each agent, once per time to live), not a cost per
 * session.
 */
export function agentCacheTtlMs(agentTimeoutMs: number): number {
  return Math.min(5_000, Math.max(250, Math.round(agentTimeoutMs / 10)));
}

/**
 * Agents as recently read, shared by a coordinator's runs (one Lambda execution environment):
 * a run that sends a command or checks a report reads the agent only when the copy is older
 * than `ttlMs`. What may be stale is liveness (a heartbeat or two, against a timeout of tens of
 * seconds) and the incarnation, which `get` checks when the caller knows the one it needs.
 */
export class AgentCache {
  readonly #store: Pick<AgentRepository, "getAgent">;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #entries = new Map<
    string,
    { readonly atMs: number; readonly agent: Promise<Agent | undefined> }
  >();

  constructor(store: Pick<AgentRepository, "getAgent">, clock: Clock, ttlMs: number) {
    this.#store = store;
    this.#clock = clock;
    this.#ttlMs = ttlMs;
  }

  get(id: string, incarnation?: string): Promise<Agent | undefined> {
    const nowMs = this.#clock.nowMs();
    const entry = this.#entries.get(id);
    if (!entry || nowMs - entry.atMs >= this.#ttlMs) return this.#read(id, nowMs);
    if (incarnation === undefined) return entry.agent;
    return entry.agent.then((agent) => (agent?.incarnation === incarnation ? agent : this.#read(id, nowMs)));
  }

  /** The agent changed here (a registration): its next use reads it. */
  forget(id: string): void {
    this.#entries.delete(id);
  }

  #read(id: string, nowMs: number): Promise<Agent | undefined> {
    const agent = this.#store.getAgent(id);
    this.#entries.set(id, { atMs: nowMs, agent });
    // A failed read is not remembered: the next use tries again.
    agent.catch(() => this.#entries.delete(id));
    return agent;
  }
}
