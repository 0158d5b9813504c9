/**
 * What a Task state's `Resource` names, parsed once when the state machine is created:
 * a Lambda function ARN (the legacy form), or a service integration
 * `arn:aws:states:::SERVICE:ACTION[.waitForTaskToken]` (including `aws-sdk:SERVICE:ACTION`).
 */

export type IntegrationPattern = "request-response" | "callback";

export type TaskResource =
  | {
      readonly kind: "lambda-function";
      readonly arn: string;
      readonly functionName: string;
      /** History `resourceType`/`resource` as AWS writes them for this form. */
      readonly resourceType: "lambda";
      readonly resource: string;
    }
  | {
      readonly kind: "integration";
      readonly arn: string;
      /** `service:action`, the key integration handlers are registered under (`lambda:invoke`). */
      readonly key: string;
      readonly pattern: IntegrationPattern;
      readonly resourceType: string;
      readonly resource: string;
    };

export class UnsupportedResourceError extends Error {
  readonly code = "UnsupportedResource";
  constructor(message: string) {
    super(message);
    this.name = this.code;
  }
}

const LAMBDA_FUNCTION_ARN = /^arn:[\w-]+:lambda:[^:]*:[^:]*:function:([\w-]+)(?::[\w$-]+)?$/;
const STATES_ARN = /^arn:[\w-]+:states:[^:]*:[^:]*:(.+)$/;

export function parseTaskResource(resource: unknown): TaskResource {
  if (typeof resource !== "string" || resource.length === 0) {
    throw new UnsupportedResourceError("Resource must be a non-empty string");
  }
  const lambda = LAMBDA_FUNCTION_ARN.exec(resource);
  if (lambda?.[1]) {
    return {
      kind: "lambda-function",
      arn: resource,
      functionName: lambda[1],
      resourceType: "lambda",
      resource,
    };
  }
  const states = STATES_ARN.exec(resource);
  if (!states?.[1]) {
    throw new UnsupportedResourceError(
      `Resource '${resource}' is neither a Lambda function ARN nor an arn:aws:states:::service:action integration`,
    );
  }
  const rest = states[1];
  if (rest.startsWith("activity:") || rest.startsWith("stateMachine:")) {
    throw new UnsupportedResourceError(
      `Resource '${resource}': activities are not supported by the local service`,
    );
  }
  const lastColon = rest.lastIndexOf(":");
  if (lastColon <= 0 || lastColon === rest.length - 1) {
    throw new UnsupportedResourceError(`Resource '${resource}' has no service:action part`);
  }
  const service = rest.slice(0, lastColon);
  const actionWithSuffix = rest.slice(lastColon + 1);
  const [action = "", suffix] = splitOnce(actionWithSuffix, ".");
  if (suffix !== undefined && suffix !== "waitForTaskToken") {
    throw new UnsupportedResourceError(
      `Resource '${resource}': the .${suffix} integration pattern is not supported locally (only request-response and .waitForTaskToken)`,
    );
  }
  return {
    kind: "integration",
    arn: resource,
    key: `${service}:${action}`,
    pattern: suffix === "waitForTaskToken" ? "callback" : "request-response",
    resourceType: service,
    resource: actionWithSuffix,
  };
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

/**
 * The function a `FunctionName` parameter names, in any form Lambda's Invoke accepts:
 * `name`, `name:qualifier`, `ACCOUNT:function:name`, or the full function ARN.
 */
export function lambdaFunctionName(reference: string): string | undefined {
  const arn = LAMBDA_FUNCTION_ARN.exec(reference);
  if (arn?.[1]) return arn[1];
  const partial = /^\d{12}:function:([\w-]+)(?::[\w$-]+)?$/.exec(reference);
  if (partial?.[1]) return partial[1];
  const plain = /^([\w-]+)(?::[\w$-]+)?$/.exec(reference);
  return plain?.[1];
}
