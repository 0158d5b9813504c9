/** ARNs and names of the local service: region `local`, account 000000000000, like AWS's shapes. */
import { SfnApiError } from "./errors.ts";

export const LOCAL_REGION = "local";
export const LOCAL_ACCOUNT = "000000000000";
export const LOCAL_ROLE_ARN = `arn:aws:iam::${LOCAL_ACCOUNT}:role/local-stepfunctions`;

const PREFIX = `arn:aws:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:`;

export function stateMachineArn(name: string): string {
  return `${PREFIX}stateMachine:${name}`;
}

export function executionArn(stateMachineName: string, executionName: string): string {
  return `${PREFIX}execution:${stateMachineName}:${executionName}`;
}

/** The state machine name in a well-formed ARN; InvalidArn otherwise. */
export function parseStateMachineArn(arn: unknown, field = "stateMachineArn"): string {
  const text = requireArnText(arn, field);
  const match = /^arn:aws:states:[^:]*:[^:]*:stateMachine:([^:]+)$/.exec(text);
  if (!match?.[1]) throw new SfnApiError("InvalidArn", `Invalid Arn: '${text}' is not a state machine ARN`);
  return match[1];
}

export function parseExecutionArn(arn: unknown, field = "executionArn"): { machine: string; name: string } {
  const text = requireArnText(arn, field);
  const match = /^arn:aws:states:[^:]*:[^:]*:execution:([^:]+):([^:]+)$/.exec(text);
  if (!match?.[1] || !match[2]) {
    throw new SfnApiError("InvalidArn", `Invalid Arn: '${text}' is not an execution ARN`);
  }
  return { machine: match[1], name: match[2] };
}

function requireArnText(arn: unknown, field: string): string {
  if (typeof arn !== "string" || arn.length === 0) {
    throw new SfnApiError("ValidationException", `${field} is required and must be a string`);
  }
  if (arn.length > 256) {
    throw new SfnApiError(
      "InvalidArn",
      `Invalid Arn: '${arn.slice(0, 40)}...' is longer than 256 characters`,
    );
  }
  return arn;
}

// AWS's rule for state machine and execution names: 1-80 characters, none of these.
const FORBIDDEN_NAME_CHARS = /[\s<>{}[\]?*"#%\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f]/u;

export function validateName(name: unknown, field: string): string {
  if (typeof name !== "string" || name.length === 0 || name.length > 80) {
    throw new SfnApiError("InvalidName", `Invalid Name: ${field} must be a string of 1 to 80 characters`);
  }
  const bad = FORBIDDEN_NAME_CHARS.exec(name);
  if (bad) {
    throw new SfnApiError(
      "InvalidName",
      `Invalid Name: '${name}' (${field}) contains the forbidden character ${JSON.stringify(bad[0])}`,
    );
  }
  return name;
}
