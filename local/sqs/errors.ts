/**
 * The errors of the embedded SQS, with the codes AWS's JSON protocol sends: `code` is the
 * modeled error name (`__type`), `queryCode` the awsQuery code in `x-amzn-query-error`, which
 * the SDK (query-compatible) maps back to its typed exception (`QueueDoesNotExist`, …) or, for
 * unmodeled ones, names the exception after (`InvalidParameterValue`, `MissingParameter`).
 */
import { AwsJsonError } from "../aws-json/errors.ts";

export const SqsErrorCode = {
  QueueDoesNotExist: "QueueDoesNotExist",
  QueueNameExists: "QueueNameExists",
  QueueDeletedRecently: "QueueDeletedRecently",
  InvalidParameterValue: "InvalidParameterValue",
  MissingParameter: "MissingParameter",
  InvalidAttributeName: "InvalidAttributeName",
  InvalidAttributeValue: "InvalidAttributeValue",
  InvalidMessageContents: "InvalidMessageContents",
  InvalidAddress: "InvalidAddress",
  ReceiptHandleIsInvalid: "ReceiptHandleIsInvalid",
  MessageNotInflight: "MessageNotInflight",
  PurgeQueueInProgress: "PurgeQueueInProgress",
  EmptyBatchRequest: "EmptyBatchRequest",
  TooManyEntriesInBatchRequest: "TooManyEntriesInBatchRequest",
  BatchEntryIdsNotDistinct: "BatchEntryIdsNotDistinct",
  InvalidBatchEntryId: "InvalidBatchEntryId",
  BatchRequestTooLong: "BatchRequestTooLong",
  OverLimit: "OverLimit",
  UnsupportedOperation: "UnsupportedOperation",
} as const;
export type SqsErrorCode = (typeof SqsErrorCode)[keyof typeof SqsErrorCode];

/** awsQuery code and HTTP status per code, from the service model. */
const WIRE: Readonly<Record<SqsErrorCode, readonly [queryCode: string, status: number]>> = {
  QueueDoesNotExist: ["AWS.SimpleQueueService.NonExistentQueue", 400],
  QueueNameExists: ["QueueAlreadyExists", 400],
  QueueDeletedRecently: ["AWS.SimpleQueueService.QueueDeletedRecently", 400],
  InvalidParameterValue: ["InvalidParameterValue", 400],
  MissingParameter: ["MissingParameter", 400],
  InvalidAttributeName: ["InvalidAttributeName", 400],
  InvalidAttributeValue: ["InvalidAttributeValue", 400],
  InvalidMessageContents: ["InvalidMessageContents", 400],
  InvalidAddress: ["InvalidAddress", 404],
  ReceiptHandleIsInvalid: ["ReceiptHandleIsInvalid", 404],
  MessageNotInflight: ["AWS.SimpleQueueService.MessageNotInflight", 400],
  PurgeQueueInProgress: ["AWS.SimpleQueueService.PurgeQueueInProgress", 403],
  EmptyBatchRequest: ["AWS.SimpleQueueService.EmptyBatchRequest", 400],
  TooManyEntriesInBatchRequest: ["AWS.SimpleQueueService.TooManyEntriesInBatchRequest", 400],
  BatchEntryIdsNotDistinct: ["AWS.SimpleQueueService.BatchEntryIdsNotDistinct", 400],
  InvalidBatchEntryId: ["AWS.SimpleQueueService.InvalidBatchEntryId", 400],
  BatchRequestTooLong: ["AWS.SimpleQueueService.BatchRequestTooLong", 400],
  OverLimit: ["OverLimit", 403],
  UnsupportedOperation: ["AWS.SimpleQueueService.UnsupportedOperation", 400],
};

export class SqsError extends AwsJsonError {
  declare readonly code: SqsErrorCode;
  constructor(code: SqsErrorCode, message: string) {
    const [queryCode, httpStatus] = WIRE[code];
    super(code, message, { queryCode, httpStatus });
  }
}

export const queueDoesNotExist = () =>
  new SqsError(SqsErrorCode.QueueDoesNotExist, "The specified queue does not exist.");

export const missingParameter = (field: string) =>
  new SqsError(SqsErrorCode.MissingParameter, `The request must contain the parameter ${field}.`);

export const invalidParameter = (field: string, value: unknown, reason: string) =>
  new SqsError(
    SqsErrorCode.InvalidParameterValue,
    `Value ${typeof value === "string" ? value : JSON.stringify(value)} for parameter ${field} is invalid. Reason: ${reason}`,
  );
