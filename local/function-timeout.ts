/**
 * Each Lambda function's timeout, imposed on the handlers the embedded runtime runs in-process.
 * On AWS an invocation still running at its function's timeout is stopped and fails ("Task timed
 * out after 60.00 seconds"): from an SQS trigger the whole batch fails, partial batch response or
 * not, and comes back after its visibility timeout; from Step Functions it is `Lambda.Unknown`
 * (the Step Functions guide, "Handle Lambda service exceptions": function timeouts and
 * out-of-memory errors are reported as Lambda.Unknown). Without this a slow handler would succeed
 * here and fail there.
 *
 * A handler in this process cannot be stopped: its invocation fails at the timeout all the same,
 * and what it still does lands later. That is harsher than AWS, never kinder: a late write meets
 * every guard a second writer meets, and a lease held past its holder's timeout is taken over
 * while the late holder still runs.
 */
import { FUNCTIONS, type FunctionName } from "../functions/topology/index.ts";

export const FUNCTION_TIMED_OUT = "FunctionTimedOut";

export class FunctionTimedOutError extends Error {
  override readonly name = FUNCTION_TIMED_OUT;
  readonly functionName: string;
  readonly timeoutMs: number;
  constructor(functionName: string, timeoutMs: number) {
    // Lambda's own words for it, with the timeout in seconds to two places.
    super(`${functionName}: Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`);
    this.functionName = functionName;
    this.timeoutMs = timeoutMs;
  }
}

/** The handler, failing with FunctionTimedOutError when it has not answered within `timeoutMs`. */
export function withFunctionTimeout<E, R>(
  functionName: string,
  timeoutMs: number,
  handler: (event: E) => Promise<R>,
): (event: E) => Promise<R> {
  if (!(Number.isInteger(timeoutMs) && timeoutMs >= 1)) {
    throw new RangeError(`${functionName}: the timeout must be a whole number of ms ≥ 1, got ${timeoutMs}`);
  }
  return (event) =>
    new Promise<R>((resolve, reject) => {
      const timer = setTimeout(() => reject(new FunctionTimedOutError(functionName, timeoutMs)), timeoutMs);
      // Called inside the promise chain, so a handler that throws at once fails like any other.
      Promise.resolve()
        .then(() => handler(event))
        .then(resolve, reject)
        .finally(() => clearTimeout(timer));
    });
}

/** Every handler of the topology under its function's timeout (FUNCTIONS' `timeoutSeconds`). */
export function withTopologyTimeouts<H extends (event: unknown) => Promise<unknown>>(
  handlers: ReadonlyMap<FunctionName, H>,
): Map<FunctionName, (event: unknown) => Promise<unknown>> {
  return new Map(
    [...handlers].map(([name, handler]) => {
      const decl = FUNCTIONS.find((f) => f.name === name);
      if (decl === undefined) throw new Error(`no function ${name} in the topology`);
      return [name, withFunctionTimeout(name, decl.timeoutSeconds * 1000, handler)];
    }),
  );
}
