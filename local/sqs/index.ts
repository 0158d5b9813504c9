/** The embedded SQS: in-memory standard queues and their AWS JSON 1.0 endpoint. */
export { startSqsServer, type SqsServer, type SqsServerOptions } from "./server.ts";
export { SqsQueues, type SqsQueuesOptions } from "./queues.ts";
export { LocalSqsQueue, MAX_IN_FLIGHT, type Clock, type QueueCounts, type ReceivedMessage } from "./queue.ts";
export { SqsError, SqsErrorCode } from "./errors.ts";
export { MAX_BATCH_BYTES, MAX_BATCH_ENTRIES } from "./operations.ts";
export { DEFAULT_SETTINGS, SETTABLE_ATTRIBUTES, type QueueSettings } from "./queue-attributes.ts";
