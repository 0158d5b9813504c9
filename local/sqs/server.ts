/**
 * The embedded SQS endpoint: AWS JSON 1.0 (`X-Amz-Target: AmazonSQS.<Operation>`,
 * query-compatible errors), which is what `@aws-sdk/client-sqs` v3 and botocore speak today,
 * so `cairn agent` long-polls its queue here exactly as it does on AWS:
 *
 *   const sqs = await startSqsServer({});
 *   const client = new SQSClient({ endpoint: sqs.endpoint, region: "local", credentials });
 *
 * Queue URLs are `<endpoint>/000000000000/<QueueName>`; a request reaching the server under
 * another host name (the SDK sends to the queue URL's host) is served the same.
 */
import { startAwsJsonServer, type AwsAuthOptions, type AwsJsonLogger } from "../aws-json/index.ts";
import { sqsOperations } from "./operations.ts";
import type { Clock } from "./queue.ts";
import { SqsQueues } from "./queues.ts";

export interface SqsServerOptions {
  /** @default 0 (any free port) */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** @default "000000000000" */
  readonly account?: string;
  /** In queue ARNs. @default "local" */
  readonly region?: string;
  /** Epoch milliseconds for delays, visibility, retention and timestamps. @default Date.now */
  readonly clock?: Clock;
  /** @default console */
  readonly logger?: AwsJsonLogger;
  /**
   * SigV4 by known credentials (signing name `sqs`), then `authorize` per request with the
   * queue's ARN as the resource (`*` for ListQueues); `SenderId` is the principal. @default none
   */
  readonly auth?: AwsAuthOptions;
}

export interface SqsServer {
  /** `http://host:port`, for `new SQSClient({ endpoint })`. */
  readonly endpoint: string;
  readonly port: number;
  /** The queues in memory, for the runtime to create, inspect or count. */
  readonly queues: SqsQueues;
  /** Ends pending long polls (they return no messages), stops listening, drops connections. */
  close(): Promise<void>;
}

/** A batch of ten 1 MiB-bounded messages JSON-escaped, with attributes and framing. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export async function startSqsServer(options: SqsServerOptions = {}): Promise<SqsServer> {
  let endpoint = "";
  const queues = new SqsQueues({
    baseUrl: () => endpoint,
    ...(options.account !== undefined ? { account: options.account } : {}),
    ...(options.region !== undefined ? { region: options.region } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const server = await startAwsJsonServer({
    name: "sqs",
    targetPrefix: "AmazonSQS",
    contentType: "application/x-amz-json-1.0",
    operations: sqsOperations(queues),
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    maxBodyBytes: MAX_BODY_BYTES,
    queryCompatible: true,
    errorTypeNamespace: "com.amazonaws.sqs",
    internalErrorCode: "InternalError",
    ...(options.auth
      ? {
          auth: {
            ...options.auth,
            service: "sqs",
            describe: (_operation, input) => ({ resources: [queueArnOf(queues, input)] }),
            // "You cannot set permissions explicitly for SendMessageBatch, DeleteMessageBatch, or
            // ChangeMessageVisibilityBatch": each is authorised as its single-message action.
            actionOf: (operation) => BATCH_ACTIONS[operation] ?? operation,
          },
        }
      : {}),
  });
  endpoint = server.endpoint;
  return { endpoint, port: server.port, queues, close: () => server.close() };
}

const BATCH_ACTIONS: Readonly<Record<string, string>> = {
  SendMessageBatch: "SendMessage",
  DeleteMessageBatch: "DeleteMessage",
  ChangeMessageVisibilityBatch: "ChangeMessageVisibility",
};

/** The ARN a request's QueueUrl or QueueName names, whether or not the queue exists yet. */
function queueArnOf(queues: SqsQueues, input: Record<string, unknown>): string {
  let name: string | undefined;
  if (typeof input.QueueName === "string") name = input.QueueName;
  else if (typeof input.QueueUrl === "string") {
    try {
      name = queues.nameOfUrl(input.QueueUrl);
    } catch {
      name = undefined;
    }
  }
  return name === undefined ? "*" : `arn:aws:sqs:${queues.region}:${queues.account}:${name}`;
}
