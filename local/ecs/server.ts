/**
 * The embedded ECS endpoint: AWS JSON 1.1 (`X-Amz-Target: AmazonEC2ContainerServiceV20141113.
 * <Operation>`, SigV4 signing name `ecs`), so `@aws-sdk/client-ecs` works against it unchanged:
 *
 *   const ecs = await startEcsServer({ clusters: ["cairn"], publish: (e) => bus.put(e) });
 *   const client = new ECSClient({ endpoint: ecs.endpoint, region: "local", credentials });
 */
import { startAwsJsonServer, type AwsAuthOptions, type AwsJsonLogger } from "../aws-json/index.ts";
import { ecsOperations } from "./operations.ts";
import { EcsService, type EcsServiceOptions } from "./service.ts";

export interface EcsServerOptions extends EcsServiceOptions {
  /** @default 0 (any free port) */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** @default console */
  readonly logger?: AwsJsonLogger;
  /** SigV4 by known credentials (signing name `ecs`), then `authorize` per request. @default none */
  readonly auth?: AwsAuthOptions;
}

export interface EcsServer {
  /** `http://host:port`, for `new ECSClient({ endpoint })` or AWS_ENDPOINT_URL_ECS. */
  readonly endpoint: string;
  readonly port: number;
  /** Clusters, task definitions, tasks and the fault switches (`interruptSpot`, `faults`). */
  readonly service: EcsService;
  /** Stops listening, then kills every task's processes. */
  close(): Promise<void>;
}

export async function startEcsServer(options: EcsServerOptions = {}): Promise<EcsServer> {
  const service = new EcsService(options);
  const server = await startAwsJsonServer({
    name: "ecs",
    targetPrefix: "AmazonEC2ContainerServiceV20141113",
    contentType: "application/x-amz-json-1.1",
    operations: ecsOperations(service),
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    internalErrorCode: "ServerException",
    ...(options.auth ? { auth: { ...options.auth, service: "ecs" } } : {}),
  });
  return {
    endpoint: server.endpoint,
    port: server.port,
    service,
    close: async () => {
      await server.close();
      await service.close();
    },
  };
}
