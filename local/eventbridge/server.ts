/**
 * A local EventBridge endpoint speaking AWS JSON 1.1 (`X-Amz-Target: AWSEvents.<Operation>`),
 * so the real `@aws-sdk/client-eventbridge` works against it unchanged:
 *
 *   const server = await startEventBridgeServer([bus]);
 *   const client = new EventBridgeClient({ endpoint: server.endpoint, region: "local",
 *     credentials: { accessKeyId: "local", secretAccessKey: "local" } });
 *
 * Without `auth`, signatures are not checked. Errors are HTTP 400 `{"__type": code, "message"}`
 * with the same code in `x-amzn-ErrorType`, which the SDK turns into exceptions of that name.
 */
import {
  startAwsJsonServer,
  type AwsAuthOptions,
  type AwsJsonOperation,
  type RequestDescription,
} from "../aws-json/index.ts";
import { AwsJsonError } from "../aws-json/errors.ts";
import type { EventBusLogger, LocalEventBus } from "./bus.ts";
import { LocalEventBridgeError } from "./errors.ts";
import { BusRegistry, DEFAULT_BUS_NAME, OPERATIONS } from "./operations.ts";

export interface EventBridgeServerOptions {
  /** @default 0 (any free port) */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** Largest request body accepted. @default 4 MiB (entries are limited to 256 KiB, JSON escaping can double that). */
  readonly maxBodyBytes?: number;
  /** @default console */
  readonly logger?: EventBusLogger;
  /**
   * SigV4 by known credentials, then `authorize` per request: resources are the buses' ARNs,
   * condition keys `events:source` and `events:detail-type` (PutEvents entries). @default none
   */
  readonly auth?: AwsAuthOptions;
}

export interface EventBridgeServer {
  /** `http://host:port`, for the SDK client's `endpoint`. */
  readonly endpoint: string;
  readonly port: number;
  /** Stops listening and drops idle keep-alive connections. The buses stay open. */
  close(): Promise<void>;
}

export async function startEventBridgeServer(
  buses: LocalEventBus | readonly LocalEventBus[],
  options: EventBridgeServerOptions = {},
): Promise<EventBridgeServer> {
  const registry = new BusRegistry(Array.isArray(buses) ? buses : [buses as LocalEventBus]);
  const operations: Record<string, AwsJsonOperation> = {};
  for (const [name, operation] of Object.entries(OPERATIONS)) {
    operations[name] = (input) => operation(registry, input);
  }
  return startAwsJsonServer({
    name: "eventbridge",
    targetPrefix: "AWSEvents",
    contentType: "application/x-amz-json-1.1",
    operations,
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    maxBodyBytes: options.maxBodyBytes ?? 4 * 1024 * 1024,
    ...(options.logger ? { logger: options.logger } : {}),
    internalErrorCode: "InternalException",
    toServiceError: (error) =>
      error instanceof LocalEventBridgeError ? new AwsJsonError(error.code, error.message) : undefined,
    ...(options.auth
      ? {
          auth: {
            ...options.auth,
            service: "events",
            describe: (op, input) => describe(registry, op, input),
          },
        }
      : {}),
  });
}

/** PutEvents touches each entry's bus; the other operations name one bus (or a rule's). */
function describe(
  registry: BusRegistry,
  operation: string,
  input: Record<string, unknown>,
): RequestDescription {
  const busArn = (name: unknown) =>
    registry.find(typeof name === "string" ? name : undefined)?.arn ??
    `arn:aws:events:*:*:event-bus/${typeof name === "string" ? name : DEFAULT_BUS_NAME}`;
  if (operation !== "PutEvents") {
    return {
      resources: operation === "TestEventPattern" ? ["*"] : [busArn(input.EventBusName ?? input.Name)],
    };
  }
  const entries = Array.isArray(input.Entries) ? (input.Entries as unknown[]) : [];
  const field = (entry: unknown, key: string): string | undefined => {
    const value = (entry as Record<string, unknown> | null)?.[key];
    return typeof value === "string" ? value : undefined;
  };
  return {
    resources: [...new Set(entries.map((e) => busArn(field(e, "EventBusName"))))],
    conditionValues: {
      "events:source": entries.map((e) => field(e, "Source") ?? ""),
      "events:detail-type": entries.map((e) => field(e, "DetailType") ?? ""),
    },
  };
}
