/** Step Functions quotas (Standard workflows) that the local service enforces like AWS does. */

/** Inputs, outputs and task results: 256 KiB of UTF-8. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;

/** An execution whose history reaches this many events fails. */
export const MAX_HISTORY_EVENTS = 25_000;

/** TimeoutSeconds / HeartbeatSeconds accept up to this (AWS's own bound). */
export const MAX_TASK_TIMEOUT_SECONDS = 99_999_999;

/**
 * Node's setTimeout holds at most 2^31-1 ms (about 24.8 days); a longer delay fires at once.
 * A task with no timeout (AWS: none) is given this one, which no local run outlives.
 */
export const MAX_TIMER_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

/** The error cause SendTaskFailure accepts, and the one we keep from a thrown handler error. */
export const MAX_CAUSE_CHARS = 32_768;
export const MAX_ERROR_CHARS = 256;

/** Page sizes for List* and GetExecutionHistory: 0 or absent means the default. */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;
