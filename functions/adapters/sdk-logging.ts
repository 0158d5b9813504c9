/**
 * The AWS SDK's logger middleware, off for clients that log nothing. Every SDK client carries
 * it, and it runs on every call whether or not a logger was given: it walks the command's input
 * and output to redact them for a log line (`schemaLogFilter`) that the default NoOpLogger then
 * throws away. Profiled in the embedded runtime, that walk was about 3 % of the
 * process's CPU, most of it over DynamoDB's batch reads. Cairn builds its clients without a
 * logger (the functions log through Powertools, not the SDK), so there it only wastes work.
 */

/** The SDK's name for it (`@aws-sdk/core`, loggerMiddlewareOptions). */
const LOGGER_MIDDLEWARE = "loggerMiddleware";

/** `client`, an SDK client built without a `logger` option, with the logger middleware removed. */
export function withoutSdkLogging<T extends object>(client: T): T {
  const stack = (client as { middlewareStack?: { remove?: (name: string) => boolean } }).middlewareStack;
  stack?.remove?.(LOGGER_MIDDLEWARE);
  return client;
}
