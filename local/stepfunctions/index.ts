/** The embedded Step Functions runtime: an in-process service and its AWS JSON 1.0 endpoint. */
export { LocalStepFunctions } from "./service.ts";
export type {
  CreateStateMachineInput,
  CreateStateMachineOutput,
  LocalDescribeExecutionOutput,
  LocalStepFunctionsOptions,
} from "./service.ts";
export { startStepFunctionsServer } from "./server.ts";
export type { RunningStepFunctionsServer, StepFunctionsServerOptions } from "./server.ts";
export { substituteDefinition } from "./substitute.ts";
export type { IntegrationHandler, LambdaHandler } from "./invoke.ts";
export type { JsonValue } from "./json.ts";
export {
  AslError,
  LocalStepFunctionsError,
  SfnApiError,
  SfnApiErrorCode,
  UnresolvedSubstitutionError,
} from "./errors.ts";
export { stateMachineArn, executionArn, LOCAL_ACCOUNT, LOCAL_REGION } from "./arns.ts";
export { MAX_HISTORY_EVENTS, MAX_PAYLOAD_BYTES } from "./limits.ts";
export {
  FaultConfigError,
  FaultInjector,
  FaultKind,
  faultOptionsFromEnv,
  parseFaultOptions,
} from "./faults.ts";
export type { FaultOptions, FaultRule, FiredFault } from "./faults.ts";
