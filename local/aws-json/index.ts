/** The base of the embedded AWS JSON endpoints: HTTP server, SigV4 verification, policies. */
export {
  startAwsJsonServer,
  type AwsJsonLogger,
  type AwsJsonOperation,
  type AwsJsonOperationContext,
  type AwsJsonServer,
  type AwsJsonServerAuth,
  type AwsJsonServerOptions,
  type RequestDescription,
} from "./server.ts";
export { AwsJsonError, AwsProtocolErrorCode, type AwsFault, type AwsJsonErrorOptions } from "./errors.ts";
export {
  accessDeniedMessage,
  authError,
  credentialBook,
  type AuthorizationRequest,
  type AuthorizeHook,
  type AwsAuthOptions,
} from "./auth.ts";
export {
  AuthFailure,
  SIGNATURE_MISMATCH_MESSAGE,
  UNKNOWN_KEY_MESSAGE,
  requestContext,
  signRequest,
  verifySigV4,
  type AwsCredential,
  type SignatureCheck,
} from "./sigv4.ts";
export {
  compilePolicy,
  PolicyError,
  type IamConditionBlock,
  type PolicyCondition,
  type PolicyStatement,
} from "./policy.ts";
export { isPlainObject, toWire } from "./http-body.ts";
