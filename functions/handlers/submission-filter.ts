/**
 * The administrator's submission filter (it may accept, refuse or modify a submission), built for the coordinator only: a Lambda
 * function on AWS, a local module in the embedded runtime (functions/config.ts reads which).
 */
import { LambdaClient } from "@aws-sdk/client-lambda";
import { LambdaSubmissionFilter } from "../adapters/lambda/submission-filter.ts";
import { ModuleSubmissionFilter } from "../adapters/local/module-submission-filter.ts";
import type { CoordinatorDeps } from "../app/coordinator.ts";
import type { CairnConfig } from "../config.ts";

export function submissionFilter(
  config: CairnConfig,
  captureClient: <T extends object>(client: T) => T,
): CoordinatorDeps["submissionFilter"] {
  const filter = config.submissionFilter;
  if (filter === undefined) return undefined;
  const port =
    filter.target.kind === "lambda"
      ? // The coordinator's own timeout bounds the call: the client does not retry a slow filter.
        new LambdaSubmissionFilter(
          captureClient(new LambdaClient({ maxAttempts: 1 })),
          filter.target.functionArn,
        )
      : new ModuleSubmissionFilter(filter.target.path);
  return { port, timeoutMs: filter.timeoutMs, onFailure: filter.onFailure };
}
