/**
 * Authentication and authorization of the embedded endpoints: every request signed with SigV4
 * by a known credential, then a per-principal decision. Failures carry the codes AWS uses for
 * the protocol: plain AWS JSON services (EventBridge, Step Functions) answer 400
 * `UnrecognizedClientException` / `InvalidSignatureException` / `AccessDeniedException`;
 * query-compatible ones (SQS) answer 403 with the awsQuery codes `InvalidClientTokenId` /
 * `SignatureDoesNotMatch` / `AccessDenied` in `x-amzn-query-error`, as the SDK expects.
 */
import { AwsJsonError } from "./errors.ts";
import { AuthFailure, type AwsCredential } from "./sigv4.ts";

/** What one request asks to do, in IAM terms, for `authorize`. */
export interface AuthorizationRequest {
  /** The API operation, e.g. `ReceiveMessage`. */
  readonly operation: string;
  /** The IAM action, e.g. `sqs:ReceiveMessage`. */
  readonly action: string;
  /** The ARNs the request touches; every one must be allowed ("*" when none applies). */
  readonly resources: readonly string[];
  /** Condition keys with the request's values, e.g. `events:source` → every entry's Source. */
  readonly conditionValues: Readonly<Record<string, readonly string[]>>;
  /** The decoded request body. */
  readonly input: Readonly<Record<string, unknown>>;
}

/** Undefined allows the request; a string denies it and says why. */
export type AuthorizeHook = (principal: string, request: AuthorizationRequest) => string | undefined;

export interface AwsAuthOptions {
  /**
   * The runtime's credentials; a request signed with any other key is refused. A book (by access
   * key id) is read at each request, so credentials made later (one per agent) are known at once.
   */
  readonly credentials: readonly AwsCredential[] | Pick<ReadonlyMap<string, AwsCredential>, "get">;
  /** @default every authenticated principal may do everything */
  readonly authorize?: AuthorizeHook;
  /** When set, the credential scope's region must be this one. @default any */
  readonly region?: string;
  /** @default Date.now */
  readonly clock?: () => number;
}

interface WireCodes {
  readonly json: readonly [code: string, status: number];
  readonly query: readonly [code: string, status: number];
}

const AUTH_ERROR_CODES: Readonly<Record<AuthFailure | "AccessDenied", WireCodes>> = {
  [AuthFailure.MissingToken]: {
    json: ["MissingAuthenticationTokenException", 400],
    query: ["MissingAuthenticationToken", 403],
  },
  [AuthFailure.IncompleteSignature]: {
    json: ["IncompleteSignatureException", 400],
    query: ["IncompleteSignature", 400],
  },
  [AuthFailure.UnknownAccessKey]: {
    json: ["UnrecognizedClientException", 400],
    query: ["InvalidClientTokenId", 403],
  },
  [AuthFailure.SignatureMismatch]: {
    json: ["InvalidSignatureException", 400],
    query: ["SignatureDoesNotMatch", 403],
  },
  [AuthFailure.Expired]: {
    json: ["InvalidSignatureException", 400],
    query: ["RequestExpired", 400],
  },
  AccessDenied: { json: ["AccessDeniedException", 400], query: ["AccessDenied", 403] },
};

export function authError(
  kind: AuthFailure | "AccessDenied",
  message: string,
  queryCompatible: boolean,
): AwsJsonError {
  const codes = AUTH_ERROR_CODES[kind];
  const [queryCode, queryStatus] = codes.query;
  const [code, status] = codes.json;
  return queryCompatible
    ? new AwsJsonError(code, message, { httpStatus: queryStatus, queryCode })
    : new AwsJsonError(code, message, { httpStatus: status });
}

/** AWS's wording for an implicit deny, with the policy's reason appended when it has one. */
export function accessDeniedMessage(
  principal: string,
  action: string,
  resource: string,
  reason: string,
): string {
  const base = `User: ${principal} is not authorized to perform: ${action} on resource: ${resource}`;
  return reason ? `${base} because ${reason}` : base;
}

/** The credentials of `options`, by access key id. */
export function credentialBook(
  credentials: AwsAuthOptions["credentials"],
): Pick<ReadonlyMap<string, AwsCredential>, "get"> {
  if (!isCredentialList(credentials)) return credentials;
  return new Map(credentials.map((c) => [c.accessKeyId, c]));
}

function isCredentialList(
  credentials: AwsAuthOptions["credentials"],
): credentials is readonly AwsCredential[] {
  return Array.isArray(credentials);
}
