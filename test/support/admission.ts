/** Shared by the admission end-to-end tests (job templates and the submission filter). */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoRequests } from "../../functions/adapters/dynamo/dynamo-requests.ts";
import { TemplateItems } from "../../functions/adapters/dynamo/template-items.ts";
import { hpcJobState, hpcSessionState } from "../../functions/core/hpc-view.ts";
import { jobTasks } from "../../functions/core/jobs.ts";
import type { Job, SessionWithKernels } from "../../functions/core/model.ts";
import { TERMINAL_SESSION_STATUSES } from "../../functions/core/status.ts";
import type { TestRuntime } from "./runtime.ts";

export const FILTER_MODULE = "test/fixtures/admission/submission-filter.ts";

export function templatesOf(rt: TestRuntime): TemplateItems {
  const { info } = rt.runtime;
  const client = new DynamoDBClient({
    endpoint: rt.runtime.tableEndpoint,
    region: info.region,
    credentials: rt.runtime.tableCredential,
  });
  return new TemplateItems(new DynamoRequests(client, info.tableName, undefined));
}

export interface Ended {
  readonly job: Job;
  readonly sessions: readonly SessionWithKernels[];
  readonly hpc: string;
  readonly sessionHpc: readonly string[];
}

/** Waits for the job to have a final state and every session to have ended. */
export async function waitForJobEnd(rt: TestRuntime, jobId: string, timeoutMs = 40_000): Promise<Ended> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    const job = await rt.store.getJob(jobId);
    if (job) {
      const sessions = await rt.store.getSessions(job.sessionIds);
      last = { final: job.final, statuses: sessions.map((s) => s.session.status) };
      if (job.final && sessions.every((s) => TERMINAL_SESSION_STATUSES.has(s.session.status))) {
        const tasks = jobTasks(job, sessions);
        return {
          job,
          sessions,
          hpc: hpcJobState({
            tasks: tasks.map((t) => t.hpcState),
            final: job.final.state,
            cancelRequested: false,
          }),
          sessionHpc: sessions.map((s) => hpcSessionState(s.session, s.kernels)),
        };
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`job ${jobId} did not end within ${timeoutMs} ms; last seen: ${JSON.stringify(last)}`);
}
