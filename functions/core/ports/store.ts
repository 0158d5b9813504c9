/**
 * The whole store as the wiring builds it: every repository of the single table. Components
 * depend on the repositories they use, never on this.
 */
import type { AgentRepository } from "./agents.ts";
import type { DraftRepository } from "./drafts.ts";
import type { JobRepository } from "./jobs.ts";
import type { RetryCatalogRepository } from "./retry-catalog.ts";
import type { SessionRepository } from "./sessions.ts";

export type SessionStore = SessionRepository &
  AgentRepository &
  JobRepository &
  RetryCatalogRepository &
  DraftRepository;
