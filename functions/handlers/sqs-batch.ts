/**
 * What the queue-triggered entry points share: SQS batches, partial batch responses, the sweep's
 * event. Not `@aws-lambda-powertools/batch`: its processors run a handler per record and build the
 * response from each record's outcome, while the coordinator runs a batch as a whole (one read of
 * every session the batch names, a session's reports folded into one write) and learns which
 * records to redeliver only at the end of that run. The partial response is the function below.
 */

export interface SqsRecord {
  readonly messageId: string;
  readonly body: string;
  /** MessageGroupId is set on records of a FIFO queue. */
  readonly attributes?: { readonly MessageGroupId?: string };
}

export interface SqsEvent {
  readonly Records: readonly SqsRecord[];
}

export interface BatchResponse {
  readonly batchItemFailures: readonly { readonly itemIdentifier: string }[];
}

/** EventBridge's scheduled event (a sweep's schedule), as its queue delivers it. */
export function isScheduledEvent(envelope: unknown): boolean {
  if (typeof envelope !== "object" || envelope === null) return false;
  const e = envelope as Record<string, unknown>;
  return e["source"] === "aws.events" && e["detail-type"] === "Scheduled Event";
}

/**
 * The records to report failed. From a FIFO queue, every record from the first failed one on:
 * Lambda requires it so that the group's order holds (a later message must not be taken as done
 * before an earlier one it follows).
 */
export function batchItemFailures(
  records: readonly SqsRecord[],
  failed: ReadonlySet<string>,
): { itemIdentifier: string }[] {
  const fifo = records.some((r) => r.attributes?.MessageGroupId !== undefined);
  const first = records.findIndex((r) => failed.has(r.messageId));
  if (first < 0) return [];
  const reported = fifo ? records.slice(first) : records.filter((r) => failed.has(r.messageId));
  return reported.map((r) => ({ itemIdentifier: r.messageId }));
}
