/**
 * Turns what the AWS SDK (or Node's sockets) throws into the CLI's errors, with the place and
 * a hint in the message. Branches on `name`/`code`, never `instanceof` (SDK errors cross
 * package copies).
 */
import { CliError, UnreachableError, UsageError } from "./errors.ts";

export interface Place {
  /** "the local runtime (.cairn/runtime.json)", "stack Cairn", … */
  readonly where: string;
  readonly hint: string;
  /** Named when the service says a resource is missing. */
  readonly resources?: string;
}

const NETWORK_CODES: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "connection timed out",
  EPIPE: "connection closed",
};

const CREDENTIAL_REJECTIONS: ReadonlySet<string> = new Set([
  "UnrecognizedClientException",
  "InvalidClientTokenId",
  "InvalidSignatureException",
  "ExpiredToken",
  "ExpiredTokenException",
  "AccessDenied",
  "AccessDeniedException",
]);

/** The CLI error for `error`, or undefined when it is not an access problem (a bug, say). */
export function explainAwsError(error: unknown, place: Place): CliError | undefined {
  if (error instanceof CliError) return error;
  for (const link of causeChain(error)) {
    const code = stringField(link, "code");
    if (code !== undefined && Object.hasOwn(NETWORK_CODES, code)) {
      const address = [stringField(link, "address"), numberField(link, "port")]
        .filter((part) => part !== undefined)
        .join(":");
      return new UnreachableError(
        `cannot reach ${place.where}: ${NETWORK_CODES[code]}${address === "" ? "" : ` (${address})`} — ${place.hint}`,
        error,
      );
    }
    const name = stringField(link, "name");
    if (name === "TimeoutError" || name === "RequestTimeout") {
      return new UnreachableError(
        `cannot reach ${place.where}: the request timed out — ${place.hint}`,
        error,
      );
    }
    if (name === "CredentialsProviderError") {
      return new UnreachableError(
        `no AWS credentials found for ${place.where} (set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY; ` +
          "LocalStack accepts any, e.g. test/test)",
        error,
      );
    }
    if (name !== undefined && CREDENTIAL_REJECTIONS.has(name)) {
      return new UnreachableError(`${place.where} refused the credentials: ${messageOf(link)}`, error);
    }
    if (name === "ResourceNotFoundException") {
      const what = place.resources === undefined ? "" : ` (${place.resources})`;
      return new UnreachableError(`${place.where}: ${messageOf(link)}${what} — ${place.hint}`, error);
    }
    // The SDK's region resolution has no error name of its own.
    if (messageOf(link) === "Region is missing") {
      return new UsageError("no AWS region: pass --region or set AWS_REGION");
    }
    const storeCode = stringField(link, "code");
    if (storeCode === "STORE_UNAVAILABLE" || storeCode === "PUBLISH") {
      return new UnreachableError(`${place.where}: ${messageOf(link)}`, error);
    }
  }
  return undefined;
}

/** The error, its `cause`s, and the members of AggregateErrors (a dual-stack connect fails twice). */
function* causeChain(error: unknown, depth = 0): Generator<unknown> {
  if (error === undefined || error === null || depth > 8) return;
  yield error;
  if (typeof error !== "object") return;
  const errors = (error as { errors?: unknown }).errors;
  if (Array.isArray(errors)) for (const inner of errors) yield* causeChain(inner, depth + 1);
  yield* causeChain((error as { cause?: unknown }).cause, depth + 1);
}

function stringField(value: unknown, key: string): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const field = (value as Record<string, unknown>)[key];
  return typeof field === "string" ? field : undefined;
}

function numberField(value: unknown, key: string): number | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const field = (value as Record<string, unknown>)[key];
  return typeof field === "number" ? field : undefined;
}

function messageOf(value: unknown): string {
  return stringField(value, "message") ?? String(value);
}
