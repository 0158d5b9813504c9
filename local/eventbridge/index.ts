/** The embedded EventBridge: pattern matching, an in-process bus and an AWS JSON 1.1 endpoint. */
export {
  compileEventPattern,
  matchesEventPattern,
  validateEventPattern,
  type CompiledEventPattern,
  type EventPattern,
} from "./pattern.ts";
export {
  LocalEventBus,
  type DeadLetter,
  type EventBusLogger,
  type EventListener,
  type ExhaustedRetryCondition,
  type LocalEventBusOptions,
  type LocalEventBusStats,
  type LocalRule,
  type LocalTarget,
  type RuleDescription,
} from "./bus.ts";
export {
  entrySizeBytes,
  MAX_ENTRIES_PER_PUT_EVENTS,
  MAX_PUT_EVENTS_SIZE_BYTES,
  type EventBridgeEvent,
  type PutEventsFailureEntry,
  type PutEventsRequestEntry,
  type PutEventsResult,
  type PutEventsResultEntry,
  type PutEventsSuccessEntry,
} from "./envelope.ts";
export { DEFAULT_RETRY_POLICY, type NormalizedRetryPolicy, type RetryPolicy } from "./retry.ts";
export { startEventBridgeServer, type EventBridgeServer, type EventBridgeServerOptions } from "./server.ts";
export {
  BusClosedError,
  InvalidEventPatternError,
  LimitExceededError,
  LocalEventBridgeError,
  ResourceNotFoundError,
  ValidationError,
} from "./errors.ts";
