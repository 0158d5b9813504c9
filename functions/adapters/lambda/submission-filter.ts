/**
 * The submission filter on AWS: the administrator's Lambda function, invoked
 * synchronously with the request as its event; its returned value is the answer. A function
 * error (an exception in the filter) is a failure, as is a reply that is not JSON.
 */
import { InvokeCommand, type LambdaClient } from "@aws-sdk/client-lambda";
import type { SubmissionFilterPort } from "../../core/ports/submission-filter.ts";
import type { SubmissionFilterRequest } from "../../core/submission-filter.ts";

export class LambdaSubmissionFilter implements SubmissionFilterPort {
  readonly #client: LambdaClient;
  readonly #functionArn: string;

  constructor(client: LambdaClient, functionArn: string) {
    this.#client = client;
    this.#functionArn = functionArn;
  }

  async ask(request: SubmissionFilterRequest, signal: AbortSignal): Promise<unknown> {
    const out = await this.#client.send(
      new InvokeCommand({
        FunctionName: this.#functionArn,
        InvocationType: "RequestResponse",
        Payload: new TextEncoder().encode(JSON.stringify(request)),
      }),
      { abortSignal: signal },
    );
    const text = out.Payload === undefined ? "" : new TextDecoder().decode(out.Payload);
    if (out.FunctionError !== undefined) {
      throw new Error(`the filter function failed (${out.FunctionError}): ${text.slice(0, 512)}`);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new Error(`the filter function's reply is not JSON: ${text.slice(0, 128)}`);
    }
  }
}
