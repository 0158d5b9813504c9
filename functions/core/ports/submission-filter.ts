import type { SubmissionFilterRequest } from "../submission-filter.ts";

/**
 * The administrator's submission filter (core/submission-filter.ts): asked about one submission,
 * resolves with its raw answer (parsed by the core), rejects on an error; stops waiting when
 * `signal` aborts (the caller's timeout). Implemented by functions/adapters/lambda and, in the
 * embedded runtime, functions/adapters/local.
 */
export interface SubmissionFilterPort {
  ask(request: SubmissionFilterRequest, signal: AbortSignal): Promise<unknown>;
}
