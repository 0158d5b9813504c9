/**
 * What one coordinator run has read, so that the run reads each session (and each agent) once:
 * the events of a batch name their sessions, which are loaded together before any event is
 * applied, and every pass of the run works from the same copies. A session the run writes is
 * forgotten, so its next use reads it again; a copy that went stale because someone else wrote
 * meanwhile is caught by the conditional write (a CONFLICT), never acted on.
 */
import type { Agent, SessionWithKernels } from "../core/model.ts";
import type { SessionStore } from "../core/ports/session-store.ts";

export class RunSnapshot {
  readonly #store: Pick<SessionStore, "getSessions" | "getAgent">;
  /** null: read, and not there. */
  readonly #sessions = new Map<string, SessionWithKernels | null>();
  readonly #agents = new Map<string, Promise<Agent | undefined>>();

  constructor(store: Pick<SessionStore, "getSessions" | "getAgent">) {
    this.#store = store;
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

  /** Something else wrote sessions this run may hold (an agent's loss, a repair): read all again. */
  clear(): void {
    this.#sessions.clear();
  }

  /** The session was (or may have been) written: its next use reads it again. */
  forget(id: string): void {
    this.#sessions.delete(id);
  }

  /** The agent as first read in this run. */
  agent(id: string): Promise<Agent | undefined> {
    let agent = this.#agents.get(id);
    if (!agent) {
      agent = this.#store.getAgent(id);
      this.#agents.set(id, agent);
      // A failed read is not remembered: the next use tries again.
      agent.catch(() => this.#agents.delete(id));
    }
    return agent;
  }
}
