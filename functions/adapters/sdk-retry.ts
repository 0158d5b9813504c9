/**
 * The functions' SDK clients other than DynamoDB's (which has its own strategy,
 * dynamo/retry.ts): a throttled or failed request (throttling, 5xx, a dropped connection) is
 * retried inside the invocation by the SDK's adaptive strategy, up to five tries with backoff
 * and client-side rate limiting once throttled, before the error reaches the handler and its
 * queue record is given back (redelivered only after the queue's visibility timeout).
 */
export const SERVICE_RETRY = { maxAttempts: 5, retryMode: "adaptive" } as const;
