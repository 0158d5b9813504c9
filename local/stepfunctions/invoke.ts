/**
 * Runs a Task's resource in-process: Lambda handlers (the `lambda:invoke` integration, its
 * `.waitForTaskToken` form, and a bare function ARN) and any other integration handlers the
 * embedded runtime registers. Results and errors take the shapes AWS gives them, so ASL
 * written for AWS (`$.Payload`, Retry/Catch on an error name) behaves the same.
 */
import { randomUUID } from "node:crypto";
import { AslError, StatesErrorName } from "./errors.ts";
import { isJsonObject, roundTrip, type JsonValue } from "./json.ts";
import { MAX_CAUSE_CHARS } from "./limits.ts";
import { lambdaFunctionName, type TaskResource } from "./resources.ts";
import { LAMBDA_INVOKE_KEY } from "./definition.ts";
import { FaultKind, type FaultInjector } from "./faults.ts";
import { FUNCTION_TIMED_OUT } from "../function-timeout.ts";

/** A Lambda function's handler: the payload in, the function's result out (like Lambda: JSON). */
export type LambdaHandler = (payload: JsonValue) => unknown;
/** Another service integration (`events:putEvents`, ...): the task's parameters in, the API result out. */
export type IntegrationHandler = (parameters: JsonValue) => unknown;

export interface Invokers {
  readonly functions: ReadonlyMap<string, LambdaHandler>;
  readonly integrations: ReadonlyMap<string, IntegrationHandler>;
  /** Switched-on AWS faults (faults.ts); none when absent. */
  readonly faults?: FaultInjector;
}

/** The Lambda function a Task invokes, by name, if it invokes one. */
export function invokedFunction(resource: TaskResource, parameters: JsonValue): string | undefined {
  if (resource.kind === "lambda-function") return resource.functionName;
  if (resource.key !== LAMBDA_INVOKE_KEY || !isJsonObject(parameters)) return undefined;
  const ref = parameters["FunctionName"];
  return typeof ref === "string" ? lambdaFunctionName(ref) : undefined;
}

/**
 * The result of calling the resource: a request-response task's result, or, for a callback
 * task, the response of the call that handed out the token (recorded as TaskSubmitted).
 * Rejects with an AslError named as AWS would name the failure.
 */
export async function invokeResource(
  resource: TaskResource,
  parameters: JsonValue,
  invokers: Invokers,
  stateName: string,
): Promise<JsonValue> {
  if (resource.kind === "lambda-function") {
    return callLambda(resource.functionName, parameters, invokers, stateName);
  }
  if (resource.key === LAMBDA_INVOKE_KEY) return lambdaInvokeIntegration(parameters, invokers, stateName);
  const handler = invokers.integrations.get(resource.key);
  if (!handler)
    throw new AslError(StatesErrorName.Runtime, `no local integration for ${resource.key}`, {
      terminal: true,
    });
  try {
    return roundTrip(await handler(roundTrip(parameters)));
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    throw new AslError(e.name || "Error", truncate(e.message));
  }
}

async function lambdaInvokeIntegration(
  parameters: JsonValue,
  invokers: Invokers,
  stateName: string,
): Promise<JsonValue> {
  if (!isJsonObject(parameters) || typeof parameters["FunctionName"] !== "string") {
    throw new AslError(
      StatesErrorName.Runtime,
      "lambda:invoke: the field 'FunctionName' is required in Parameters and must be a string",
      { terminal: true },
    );
  }
  const functionName = parameters["FunctionName"];
  const payload = parameters["Payload"] ?? {};
  const requestId = randomUUID();
  if (parameters["InvocationType"] === "Event") {
    // Asynchronous invocation: Lambda accepts it (202) and the task does not wait for the result.
    // Lambda queues it, and retries it itself when throttled: the caller never sees a throttle.
    const accepted = callLambda(functionName, payload, invokers, stateName, { throttled: false });
    accepted.catch(() => undefined);
    return { ExecutedVersion: "$LATEST", Payload: "", StatusCode: 202, ...sdkMetadata(requestId, 202) };
  }
  const result = await callLambda(functionName, payload, invokers, stateName);
  return { ExecutedVersion: "$LATEST", Payload: result, StatusCode: 200, ...sdkMetadata(requestId, 200) };
}

function sdkMetadata(requestId: string, status: number): Record<string, JsonValue> {
  return {
    SdkHttpMetadata: { HttpHeaders: { "x-amzn-RequestId": requestId }, HttpStatusCode: status },
    SdkResponseMetadata: { RequestId: requestId },
  };
}

async function callLambda(
  functionRef: string,
  payload: JsonValue,
  invokers: Invokers,
  stateName: string,
  options: { readonly throttled: boolean } = { throttled: true },
): Promise<JsonValue> {
  const name = lambdaFunctionName(functionRef);
  const handler = name === undefined ? undefined : invokers.functions.get(name);
  if (!handler) {
    throw new AslError(
      "Lambda.ResourceNotFoundException",
      `Function not found: ${functionRef} (Service: Lambda, Status Code: 404)`,
    );
  }
  const at = { state: stateName, function: name };
  if (options.throttled && invokers.faults?.take([FaultKind.LambdaThrottle], at)) {
    // Refused before the function runs, as Lambda refuses an invocation beyond its concurrency.
    throw new AslError(
      "Lambda.TooManyRequestsException",
      `Rate Exceeded. (Service: Lambda, Status Code: 429, Request ID: ${randomUUID()}) (fault injected: ${FaultKind.LambdaThrottle})`,
    );
  }
  const fault = invokers.faults?.take([FaultKind.LambdaUnknown, FaultKind.LoseLambdaResponse], at);
  if (fault?.fault === FaultKind.LambdaUnknown) {
    throw lambdaUnknown(`Task timed out (fault injected: ${FaultKind.LambdaUnknown})`);
  }
  let result: unknown;
  try {
    result = await handler(roundTrip(payload));
  } catch (error) {
    if (fault) throw lostResponse(fault.error);
    if (error instanceof Error && error.name === FUNCTION_TIMED_OUT) throw lambdaUnknown(error.message);
    throw lambdaError(error);
  }
  // The function ran (its effects stand); only its response does not reach the caller.
  if (fault) throw lostResponse(fault.error);
  return roundTrip(result);
}

/** What Step Functions reports for a function that timed out or ran out of memory. */
function lambdaUnknown(errorMessage: string): AslError {
  return new AslError(
    "Lambda.Unknown",
    `The cause could not be determined because Lambda did not return an error type. Returned payload: ${JSON.stringify({ errorMessage })}`,
  );
}

function lostResponse(error: string | undefined): AslError {
  const name = error ?? "Lambda.ServiceException";
  return new AslError(
    name,
    `${name.replace(/^Lambda\./, "")}: the response was lost (fault injected: ${FaultKind.LoseLambdaResponse}) (Service: Lambda, Status Code: 500)`,
  );
}

/**
 * What Step Functions reports when a Node.js function throws: Error = the error's name
 * (`errorType`), Cause = the JSON the Lambda runtime returns for it.
 */
export function lambdaError(thrown: unknown): AslError {
  const errorType = thrown instanceof Error && thrown.name ? thrown.name : "Error";
  const errorMessage = thrown instanceof Error ? thrown.message : String(thrown);
  const trace = thrown instanceof Error && thrown.stack ? thrown.stack.split("\n") : [];
  let cause = JSON.stringify({ errorType, errorMessage, trace });
  if (cause.length > MAX_CAUSE_CHARS) {
    // Keep the cause valid JSON within the limit: drop the trace, then shorten the message.
    let message = errorMessage;
    while ((cause = JSON.stringify({ errorType, errorMessage: message })).length > MAX_CAUSE_CHARS) {
      const excess = cause.length - MAX_CAUSE_CHARS;
      message = message.slice(0, Math.max(0, message.length - Math.max(1, Math.ceil(excess / 2))));
    }
  }
  return new AslError(errorType, cause);
}

function truncate(text: string): string {
  return text.length > MAX_CAUSE_CHARS ? text.slice(0, MAX_CAUSE_CHARS) : text;
}
