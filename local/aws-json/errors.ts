/**
 * The error every AWS JSON endpoint sends: HTTP status, `__type` code and message, and for
 * query-compatible services (SQS) the query error code the SDK maps back to its typed
 * exception. The code is data on the error, so servers and callers never compare messages.
 */

/** `Sender` faults are the caller's; `Receiver` faults are the service's. */
export type AwsFault = "Sender" | "Receiver";

export interface AwsJsonErrorOptions extends ErrorOptions {
  /** @default 400 */
  readonly httpStatus?: number;
  /**
   * The awsQuery error code (`x-amzn-query-error: <code>;<fault>`) of query-compatible
   * services, when it differs from `code` (SQS: `QueueDoesNotExist` is
   * `AWS.SimpleQueueService.NonExistentQueue`). @default code
   */
  readonly queryCode?: string;
  /** @default "Sender" below HTTP 500, else "Receiver" */
  readonly fault?: AwsFault;
  /** Members of the error shape besides the message (ECS's ConflictException `resourceIds`). */
  readonly members?: Readonly<Record<string, unknown>>;
}

export class AwsJsonError extends Error {
  readonly code: string;
  readonly httpStatus: number;
  readonly queryCode: string;
  readonly fault: AwsFault;
  readonly members: Readonly<Record<string, unknown>>;
  constructor(code: string, message: string, options: AwsJsonErrorOptions = {}) {
    super(message, options);
    this.name = code;
    this.code = code;
    this.httpStatus = options.httpStatus ?? 400;
    this.queryCode = options.queryCode ?? code;
    this.fault = options.fault ?? (this.httpStatus >= 500 ? "Receiver" : "Sender");
    this.members = options.members ?? {};
  }
}

/** The protocol-level faults every AWS JSON service shares. */
export const AwsProtocolErrorCode = {
  UnknownOperation: "UnknownOperationException",
  Serialization: "SerializationException",
  RequestEntityTooLarge: "RequestEntityTooLargeException",
} as const;
