/** The embedded ECS: Fargate tasks as local processes behind an AWS JSON 1.1 endpoint. */
export { startEcsServer, type EcsServer, type EcsServerOptions } from "./server.ts";
export {
  CAPACITY_UNAVAILABLE,
  EcsService,
  ESSENTIAL_EXITED_REASON,
  placeOnStrategy,
  SPOT_INTERRUPTED_REASON,
  USER_STOPPED_REASON,
  type EcsEventEntry,
  type EcsServiceOptions,
  type TaskLogSink,
} from "./service.ts";
export { EcsTask, LastStatus, StopCode, type CapacityProvider } from "./task.ts";
export { EcsError, EcsErrorCode } from "./errors.ts";
export { FARGATE_MEMORY_BY_CPU, isFargateSize } from "./fargate-sizes.ts";
export { logsStoreSink } from "./logs-sink.ts";
export { ecsAuth } from "./access.ts";
export { reapStaleEcsTasks } from "./stale.ts";
