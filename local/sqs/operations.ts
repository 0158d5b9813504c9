/**
 * The SQS API operations the embedded endpoint answers, from the decoded AWS JSON 1.0 input
 * to the output, over the queue registry. Validation follows AWS's limits and wording.
 */
import type { AwsJsonOperation, AwsJsonOperationContext } from "../aws-json/index.ts";
import { SqsError, SqsErrorCode, invalidParameter, missingParameter } from "./errors.ts";
import {
  firstInvalidCharacter,
  invalidContents,
  optionalInt,
  optionalString,
  optionalStringList,
  optionalStringMap,
  requiredInt,
  requiredList,
  requiredObject,
  requiredString,
  type Input,
} from "./input.ts";
import {
  attributesSizeBytes,
  attributesToWire,
  decodeMessageAttributes,
  md5OfMessageAttributes,
  selectAttributes,
} from "./message-attributes.ts";
import type { LocalSqsQueue, ReceivedMessage } from "./queue.ts";
import {
  isKnownAttributeName,
  parseSettings,
  SETTABLE_ATTRIBUTES,
  type SettableAttribute,
} from "./queue-attributes.ts";
import type { SqsQueues } from "./queues.ts";

export const MAX_BATCH_ENTRIES = 10;
/** A batch's bodies and attributes together, like one message at most. */
export const MAX_BATCH_BYTES = 1_048_576;
const MAX_LIST_RESULTS = 1000;
const BATCH_ID = /^[A-Za-z0-9_-]{1,80}$/;
const SYSTEM_ATTRIBUTES = [
  "SenderId",
  "SentTimestamp",
  "ApproximateReceiveCount",
  "ApproximateFirstReceiveTimestamp",
];
/** Valid names that only FIFO queues or features this queue lacks fill in: accepted, never returned. */
const SYSTEM_ATTRIBUTES_NEVER_SET = [
  "AWSTraceHeader",
  "SequenceNumber",
  "MessageDeduplicationId",
  "MessageGroupId",
  "DeadLetterQueueSourceArn",
];

export function sqsOperations(queues: SqsQueues): Record<string, AwsJsonOperation> {
  const queueOf = (input: Input) => queues.byUrl(requiredString(input, "QueueUrl"));
  return {
    CreateQueue: (input) => {
      const name = requiredString(input, "QueueName");
      const settings = parseSettings(optionalStringMap(input, "Attributes") ?? {});
      const tags = new Map(Object.entries(optionalStringMap(input, "tags") ?? {}));
      return { QueueUrl: queues.create(name, settings, tags).url };
    },
    GetQueueUrl: (input) => ({ QueueUrl: queues.get(requiredString(input, "QueueName")).url }),
    DeleteQueue: (input) => {
      queues.delete(queueOf(input).name);
      return {};
    },
    ListQueues: (input) => listQueues(queues, input),
    GetQueueAttributes: (input) => ({ Attributes: queueAttributes(queueOf(input), input) }),
    SetQueueAttributes: (input) => {
      const queue = queueOf(input);
      const attributes = optionalStringMap(input, "Attributes");
      if (!attributes) throw missingParameter("Attributes");
      queue.setSettings(parseSettings(attributes));
      return {};
    },
    ListQueueTags: (input) => {
      const tags = queueOf(input).tags;
      return tags.size > 0 ? { Tags: Object.fromEntries(tags) } : {};
    },
    PurgeQueue: (input) => {
      queueOf(input).purge();
      return {};
    },
    SendMessage: (input, context) => {
      const queue = queueOf(input);
      const message = decodeMessage(input, queue, "");
      const sent = queue.send(message.body, message.attributes, senderIdOf(context), message.delaySeconds);
      return {
        MessageId: sent.messageId,
        MD5OfMessageBody: sent.md5OfBody,
        MD5OfMessageAttributes: message.md5,
      };
    },
    SendMessageBatch: (input, context) => sendMessageBatch(queueOf(input), input, senderIdOf(context)),
    ReceiveMessage: (input, context) => receiveMessage(queueOf(input), input, context),
    DeleteMessage: (input) => {
      queueOf(input).delete(requiredString(input, "ReceiptHandle"));
      return {};
    },
    DeleteMessageBatch: (input) =>
      batch(
        input,
        "DeleteMessageBatchRequestEntry",
        (entry, queue) => {
          queue.delete(requiredString(entry, "ReceiptHandle"));
        },
        queueOf(input),
      ),
    ChangeMessageVisibility: (input) => {
      queueOf(input).changeVisibility(
        requiredString(input, "ReceiptHandle"),
        requiredInt(input, "VisibilityTimeout", 0, SETTABLE_ATTRIBUTES.VisibilityTimeout.max),
      );
      return {};
    },
    ChangeMessageVisibilityBatch: (input) =>
      batch(
        input,
        "ChangeMessageVisibilityBatchRequestEntry",
        (entry, queue) => {
          queue.changeVisibility(
            requiredString(entry, "ReceiptHandle"),
            requiredInt(entry, "VisibilityTimeout", 0, SETTABLE_ATTRIBUTES.VisibilityTimeout.max),
          );
        },
        queueOf(input),
      ),
  };
}

/** SenderId: the authenticated principal, else the signing key, as AWS names the caller. */
function senderIdOf(context: AwsJsonOperationContext): string {
  return context.principal ?? context.accessKeyId ?? "anonymous";
}

function listQueues(queues: SqsQueues, input: Input): unknown {
  const prefix = optionalString(input, "QueueNamePrefix") ?? "";
  const max = optionalInt(input, "MaxResults", 1, MAX_LIST_RESULTS);
  const token = optionalString(input, "NextToken");
  let after = "";
  if (token !== undefined) {
    const decoded = Buffer.from(token, "base64url").toString("utf8");
    const [tokenPrefix, last] = decoded.split("\n");
    if (tokenPrefix !== prefix || last === undefined)
      throw invalidParameter("NextToken", token, "Invalid NextToken value.");
    after = last;
  }
  const all = queues.list(prefix).filter((q) => q.name > after);
  const page = all.slice(0, max ?? MAX_LIST_RESULTS);
  const more = max !== undefined && all.length > page.length;
  return {
    QueueUrls: page.length > 0 ? page.map((q) => q.url) : undefined,
    NextToken: more
      ? Buffer.from(`${prefix}\n${page.at(-1)!.name}`, "utf8").toString("base64url")
      : undefined,
  };
}

function queueAttributes(queue: LocalSqsQueue, input: Input): Record<string, string> {
  const names = optionalStringList(input, "AttributeNames") ?? [];
  for (const name of names) {
    if (!isKnownAttributeName(name))
      throw new SqsError(SqsErrorCode.InvalidAttributeName, `Unknown Attribute ${name}.`);
  }
  const all = names.includes("All");
  const counts = queue.counts();
  const values: Record<string, string> = {
    ApproximateNumberOfMessages: String(counts.visible),
    ApproximateNumberOfMessagesNotVisible: String(counts.inFlight),
    ApproximateNumberOfMessagesDelayed: String(counts.delayed),
    CreatedTimestamp: String(Math.floor(queue.createdAtMs / 1000)),
    LastModifiedTimestamp: String(Math.floor(queue.lastModifiedMs / 1000)),
    QueueArn: queue.arn,
  };
  for (const name of Object.keys(SETTABLE_ATTRIBUTES) as SettableAttribute[]) {
    values[name] = String(queue.settings[name]);
  }
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(values)) if (all || names.includes(name)) out[name] = value;
  return out;
}

interface DecodedMessage {
  readonly body: string;
  readonly attributes: ReturnType<typeof decodeMessageAttributes>;
  readonly md5: string | undefined;
  readonly delaySeconds: number | undefined;
  readonly sizeBytes: number;
}

/** `prefix` names the field's place in a batch (`Entries[2].`) so errors point at it. */
function decodeMessage(input: Input, queue: LocalSqsQueue, prefix: string): DecodedMessage {
  const body = input.MessageBody;
  if (body === undefined || body === null || body === "") throw missingParameter(`${prefix}MessageBody`);
  if (typeof body !== "string") throw invalidParameter(`${prefix}MessageBody`, body, "Must be a string.");
  const bad = firstInvalidCharacter(body);
  if (bad !== undefined) throw invalidContents(bad, "message body");
  const delaySeconds = optionalInt(input, "DelaySeconds", 0, SETTABLE_ATTRIBUTES.DelaySeconds.max);
  if (input.MessageSystemAttributes !== undefined && input.MessageSystemAttributes !== null) {
    throw new SqsError(
      SqsErrorCode.UnsupportedOperation,
      `${prefix}MessageSystemAttributes (AWSTraceHeader) are not supported by the embedded SQS.`,
    );
  }
  for (const fifoField of ["MessageGroupId", "MessageDeduplicationId"]) {
    if (input[fifoField] !== undefined && input[fifoField] !== null) {
      throw invalidParameter(
        `${prefix}${fifoField}`,
        input[fifoField],
        "The request include parameter that is not valid for this queue type.",
      );
    }
  }
  const attributes = decodeMessageAttributes(input.MessageAttributes, `${prefix}MessageAttributes`);
  const sizeBytes = Buffer.byteLength(body, "utf8") + attributesSizeBytes(attributes);
  const limit = queue.settings.MaximumMessageSize;
  if (sizeBytes > limit) {
    throw invalidParameter(
      `${prefix}MessageBody`,
      `(${sizeBytes} bytes)`,
      `Message must be shorter than ${limit} bytes.`,
    );
  }
  return { body, attributes, md5: md5OfMessageAttributes(attributes), delaySeconds, sizeBytes };
}

function sendMessageBatch(queue: LocalSqsQueue, input: Input, senderId: string): unknown {
  const entries = batchEntries(input, "SendMessageBatchRequestEntry");
  const decoded = entries.map((entry, i) => {
    try {
      return decodeMessage(entry, queue, `Entries[${i}].`);
    } catch (error) {
      if (error instanceof SqsError) return error;
      throw error;
    }
  });
  const total = decoded.reduce((sum, d) => sum + (d instanceof SqsError ? 0 : d.sizeBytes), 0);
  if (total > MAX_BATCH_BYTES) {
    throw new SqsError(
      SqsErrorCode.BatchRequestTooLong,
      `Batch requests cannot be longer than ${MAX_BATCH_BYTES} bytes. You have sent ${total} bytes.`,
    );
  }
  const successful: unknown[] = [];
  const failed: unknown[] = [];
  decoded.forEach((message, i) => {
    const id = entries[i]!.Id as string;
    if (message instanceof SqsError) {
      failed.push(failure(id, message));
      return;
    }
    const sent = queue.send(message.body, message.attributes, senderId, message.delaySeconds);
    successful.push({
      Id: id,
      MessageId: sent.messageId,
      MD5OfMessageBody: sent.md5OfBody,
      MD5OfMessageAttributes: message.md5,
    });
  });
  return { Successful: successful, Failed: failed };
}

/** Runs `act` per entry: an SqsError becomes that entry's failure, the others still apply. */
function batch(
  input: Input,
  entryName: string,
  act: (entry: Input, queue: LocalSqsQueue) => void,
  queue: LocalSqsQueue,
): unknown {
  const successful: unknown[] = [];
  const failed: unknown[] = [];
  for (const entry of batchEntries(input, entryName)) {
    const id = entry.Id as string;
    try {
      act(entry, queue);
      successful.push({ Id: id });
    } catch (error) {
      if (!(error instanceof SqsError)) throw error;
      failed.push(failure(id, error));
    }
  }
  return { Successful: successful, Failed: failed };
}

function failure(id: string, error: SqsError): unknown {
  return { Id: id, SenderFault: error.fault === "Sender", Code: error.queryCode, Message: error.message };
}

function batchEntries(input: Input, entryName: string): Input[] {
  const raw = requiredList(input, "Entries");
  if (raw.length === 0) {
    throw new SqsError(
      SqsErrorCode.EmptyBatchRequest,
      `There should be at least one ${entryName} in the request.`,
    );
  }
  if (raw.length > MAX_BATCH_ENTRIES) {
    throw new SqsError(
      SqsErrorCode.TooManyEntriesInBatchRequest,
      `Maximum number of entries per request are ${MAX_BATCH_ENTRIES}. You have sent ${raw.length}.`,
    );
  }
  const entries = raw.map((e, i) => requiredObject(e, `Entries[${i}]`));
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    const id = entry.Id;
    if (typeof id !== "string" || !BATCH_ID.test(id)) {
      throw new SqsError(
        SqsErrorCode.InvalidBatchEntryId,
        `Entries[${i}].Id: A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.`,
      );
    }
    if (seen.has(id)) throw new SqsError(SqsErrorCode.BatchEntryIdsNotDistinct, `Id ${id} repeated.`);
    seen.add(id);
  });
  return entries;
}

async function receiveMessage(
  queue: LocalSqsQueue,
  input: Input,
  context: AwsJsonOperationContext,
): Promise<unknown> {
  const max = optionalInt(input, "MaxNumberOfMessages", 1, MAX_BATCH_ENTRIES) ?? 1;
  const wait =
    optionalInt(input, "WaitTimeSeconds", 0, SETTABLE_ATTRIBUTES.ReceiveMessageWaitTimeSeconds.max) ??
    queue.settings.ReceiveMessageWaitTimeSeconds;
  const visibility = optionalInt(input, "VisibilityTimeout", 0, SETTABLE_ATTRIBUTES.VisibilityTimeout.max);
  const systemNames = [
    ...(optionalStringList(input, "AttributeNames") ?? []),
    ...(optionalStringList(input, "MessageSystemAttributeNames") ?? []),
  ];
  for (const name of systemNames) {
    if (name !== "All" && !SYSTEM_ATTRIBUTES.includes(name) && !SYSTEM_ATTRIBUTES_NEVER_SET.includes(name)) {
      throw new SqsError(SqsErrorCode.InvalidAttributeName, `Unknown Attribute ${name}.`);
    }
  }
  const attributeNames = optionalStringList(input, "MessageAttributeNames") ?? [];
  optionalString(input, "ReceiveRequestAttemptId");
  const messages = await queue.receive(max, visibility, wait, context.signal);
  if (messages.length === 0) return {};
  return { Messages: messages.map((m) => messageToWire(m, systemNames, attributeNames)) };
}

function messageToWire(
  m: ReceivedMessage,
  systemNames: readonly string[],
  attributeNames: readonly string[],
): unknown {
  const all = systemNames.includes("All");
  const system: Record<string, string> = {
    SenderId: m.senderId,
    SentTimestamp: String(m.sentAtMs),
    ApproximateReceiveCount: String(m.receiveCount),
    ApproximateFirstReceiveTimestamp: String(m.firstReceivedAtMs),
  };
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries(system))
    if (all || systemNames.includes(name)) attributes[name] = value;
  const selected = selectAttributes(m.attributes, attributeNames);
  return {
    MessageId: m.messageId,
    ReceiptHandle: m.receiptHandle,
    MD5OfBody: m.md5OfBody,
    Body: m.body,
    Attributes: Object.keys(attributes).length > 0 ? attributes : undefined,
    MessageAttributes: attributesToWire(selected),
    MD5OfMessageAttributes: md5OfMessageAttributes(selected),
  };
}
