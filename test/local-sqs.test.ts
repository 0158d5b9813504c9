import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promisify } from "node:util";
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  PurgeQueueCommand,
  QueueDoesNotExist,
  QueueNameExists,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { startSqsServer, type SqsServer } from "../local/sqs/index.ts";

const run = promisify(execFile);
const credentials = { accessKeyId: "local", secretAccessKey: "local" };
const START_MS = Date.UTC(2026, 10, 1, 12, 0, 0);

/** A clock the test moves by hand: visibility, delays and retention need no sleeping. */
let nowMs = START_MS;
const clock = () => nowMs;
const advance = (seconds: number) => {
  nowMs += seconds * 1000;
};

let server: SqsServer;
let sqs: SQSClient;
let counter = 0;
const freshName = (stem = "q") => `${stem}-${++counter}`;

async function newQueue(attributes: Record<string, string> = {}, name = freshName()): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  return QueueUrl!;
}

async function failure(
  promise: Promise<unknown>,
): Promise<Error & { name: string; $metadata?: { httpStatusCode?: number } }> {
  const outcome = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(outcome instanceof Error)) throw new Error("expected the call to fail, it succeeded");
  return outcome;
}

beforeAll(async () => {
  server = await startSqsServer({ clock });
  sqs = new SQSClient({ endpoint: server.endpoint, region: "local", credentials });
});

afterAll(async () => {
  sqs.destroy();
  await server.close();
});

afterEach(() => {
  nowMs = START_MS + counter * 3_600_000;
});

describe("queues", () => {
  test("given CreateQueue, then the URL is <endpoint>/000000000000/<name>; the same attributes again return it, others are QueueNameExists", async () => {
    const name = freshName("agent");
    const url = await newQueue({ VisibilityTimeout: "60" }, name);
    expect(url).toBe(`${server.endpoint}/000000000000/${name}`);
    expect(await newQueue({ VisibilityTimeout: "60" }, name)).toBe(url);

    const conflict = await failure(newQueue({ VisibilityTimeout: "61" }, name));
    expect(conflict).toBeInstanceOf(QueueNameExists);
    expect(conflict.message).toContain("different value for attribute VisibilityTimeout");
    expect((await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl).toBe(url);
  });

  test("given CreateQueue of an existing queue, then only the attributes the request names are compared, as SQS does", async () => {
    const name = freshName("agent");
    const url = await newQueue({ VisibilityTimeout: "60", MessageRetentionPeriod: "3600" }, name);
    // Attributes left out are not compared with the queue's, though the queue's are not the defaults.
    expect(await newQueue({}, name)).toBe(url);
    expect(await newQueue({ VisibilityTimeout: "60" }, name)).toBe(url);
    // One it names and the queue holds otherwise (a queue an earlier version made) is refused,
    // with the code SQS answers in the JSON protocol and the awsQuery code its clients map.
    const response = await fetch(server.endpoint, {
      method: "POST",
      headers: {
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": "AmazonSQS.CreateQueue",
      },
      body: JSON.stringify({ QueueName: name, Attributes: { MessageRetentionPeriod: "7200" } }),
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("x-amzn-query-error")).toBe("QueueAlreadyExists;Sender");
    expect(await response.json()).toMatchObject({ __type: "com.amazonaws.sqs#QueueNameExists" });
    // SetQueueAttributes gives it the new value; CreateQueue with it then returns the queue.
    await sqs.send(
      new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { MessageRetentionPeriod: "7200" } }),
    );
    expect(await newQueue({ MessageRetentionPeriod: "7200", VisibilityTimeout: "60" }, name)).toBe(url);
  });

  test("given DeleteQueue, then CreateQueue of the name within 60 s is QueueDeletedRecently on the wire, and the name is free after", async () => {
    const name = freshName();
    const url = await newQueue({}, name);
    await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    const create = () =>
      fetch(server.endpoint, {
        method: "POST",
        headers: { "content-type": "application/x-amz-json-1.0", "x-amz-target": "AmazonSQS.CreateQueue" },
        body: JSON.stringify({ QueueName: name }),
      });
    advance(59);
    const held = await create();
    expect(held.status).toBe(400);
    expect(held.headers.get("x-amzn-query-error")).toBe("AWS.SimpleQueueService.QueueDeletedRecently;Sender");
    expect(await held.json()).toMatchObject({ __type: "com.amazonaws.sqs#QueueDeletedRecently" });
    advance(2);
    expect((await create()).status).toBe(200);
  });

  test("given bad names or attributes, then the error names the field and the rule", async () => {
    const badName = await failure(newQueue({}, "has space"));
    expect(badName.name).toBe("InvalidParameterValue");
    expect(badName.message).toContain("parameter QueueName is invalid");
    expect(badName.message).toContain("1 to 80 in length");
    expect((await failure(newQueue({}, "x".repeat(81)))).name).toBe("InvalidParameterValue");
    expect(await newQueue({}, "x".repeat(80))).toContain("x".repeat(80));

    const fifo = await failure(newQueue({}, "jobs.fifo"));
    expect(fifo.name).toBe("UnsupportedOperation");
    expect(fifo.message).toContain("FIFO queues are not supported");

    const range = await failure(newQueue({ VisibilityTimeout: "43201" }));
    expect(range.name).toBe("InvalidAttributeValue");
    expect(range.message).toContain("VisibilityTimeout");
    expect(range.message).toContain("0 to 43200");
    const unknown = await failure(newQueue({ Colour: "blue" }));
    expect(unknown).toMatchObject({ name: "InvalidAttributeName", message: "Unknown Attribute Colour." });
    const redrive = await failure(newQueue({ RedrivePolicy: "{}" }));
    expect(redrive.name).toBe("UnsupportedOperation");
    const missing = await failure(sqs.send(new CreateQueueCommand({ QueueName: undefined })));
    expect(missing).toMatchObject({
      name: "MissingParameter",
      message: "The request must contain the parameter QueueName.",
    });
  });

  test("given an unknown queue, then GetQueueUrl and SendMessage are QueueDoesNotExist (HTTP 400)", async () => {
    const byName = await failure(sqs.send(new GetQueueUrlCommand({ QueueName: "never-made" })));
    expect(byName).toBeInstanceOf(QueueDoesNotExist);
    expect(byName.$metadata?.httpStatusCode).toBe(400);
    const byUrl = await failure(
      sqs.send(
        new SendMessageCommand({ QueueUrl: `${server.endpoint}/000000000000/never-made`, MessageBody: "x" }),
      ),
    );
    expect(byUrl).toBeInstanceOf(QueueDoesNotExist);
  });

  test("given ListQueues with a prefix and MaxResults, then pages follow NextToken to the end", async () => {
    const stem = freshName("list");
    const names = [`${stem}-a`, `${stem}-b`, `${stem}-c`];
    for (const name of names) await newQueue({}, name);
    const first = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: stem, MaxResults: 2 }));
    expect(first.QueueUrls).toEqual(names.slice(0, 2).map((n) => `${server.endpoint}/000000000000/${n}`));
    expect(first.NextToken).toBeDefined();
    const second = await sqs.send(
      new ListQueuesCommand({ QueueNamePrefix: stem, MaxResults: 2, NextToken: first.NextToken! }),
    );
    expect(second.QueueUrls).toEqual([`${server.endpoint}/000000000000/${names[2]}`]);
    expect(second.NextToken).toBeUndefined();
    const none = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: `${stem}-z` }));
    expect(none.QueueUrls ?? []).toEqual([]);
    expect((await failure(sqs.send(new ListQueuesCommand({ MaxResults: 1001 })))).message).toContain(
      "parameter MaxResults is invalid",
    );
  });

  test("given Get/SetQueueAttributes, then settings, counts and the ARN are reported as strings", async () => {
    const name = freshName();
    const url = await newQueue({ DelaySeconds: "5", MessageRetentionPeriod: "600" }, name);
    await sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { VisibilityTimeout: "45" } }));
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "delayed" }));
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "now", DelaySeconds: 0 }));
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }));
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "ready", DelaySeconds: 0 }));

    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["All"] }),
    );
    expect(Attributes).toMatchObject({
      QueueArn: `arn:aws:sqs:local:000000000000:${name}`,
      DelaySeconds: "5",
      MessageRetentionPeriod: "600",
      VisibilityTimeout: "45",
      MaximumMessageSize: "1048576",
      ReceiveMessageWaitTimeSeconds: "0",
      ApproximateNumberOfMessages: "1",
      ApproximateNumberOfMessagesNotVisible: "1",
      ApproximateNumberOfMessagesDelayed: "1",
      CreatedTimestamp: String(Math.floor(nowMs / 1000)),
    });
    const some = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages"] }),
    );
    expect(some.Attributes).toEqual({ ApproximateNumberOfMessages: "1" });
    const bad = await failure(
      sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["Nope" as "All"] })),
    );
    expect(bad.name).toBe("InvalidAttributeName");
  });

  test("given tags at creation, then ListQueueTags returns them", async () => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: freshName(), tags: { owner: "cairn", agent: "a1" } }),
    );
    expect((await sqs.send(new ListQueueTagsCommand({ QueueUrl }))).Tags).toEqual({
      owner: "cairn",
      agent: "a1",
    });
  });

  test("given DeleteQueue, then the queue is gone and its name is held for 60 s", async () => {
    const name = freshName();
    const url = await newQueue({}, name);
    await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    expect(await failure(sqs.send(new GetQueueUrlCommand({ QueueName: name })))).toBeInstanceOf(
      QueueDoesNotExist,
    );
    expect((await failure(newQueue({}, name))).name).toBe("QueueDeletedRecently");
    advance(61);
    expect(await newQueue({}, name)).toBe(url);
  });

  test("given PurgeQueue, then every message is gone and a second purge within 60 s is refused", async () => {
    const url = await newQueue();
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "a" }));
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "b" }));
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }));
    await sqs.send(new PurgeQueueCommand({ QueueUrl: url }));
    expect((await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }))).Messages).toBeUndefined();
    expect(server.queues.byUrl(url).counts()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    const again = await failure(sqs.send(new PurgeQueueCommand({ QueueUrl: url })));
    expect(again.name).toBe("PurgeQueueInProgress");
    advance(60);
    await sqs.send(new PurgeQueueCommand({ QueueUrl: url }));
  });
});

describe("messages", () => {
  test("given SendMessage, then the SDK's MD5 check passes and ReceiveMessage returns body, MD5 and system attributes", async () => {
    const url = await newQueue();
    const body = '{"command":"start","kernel":0,"note":"héllo 🌍"}';
    const sent = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body }));
    expect(sent.MD5OfMessageBody).toBe(createHash("md5").update(body).digest("hex"));

    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MessageSystemAttributeNames: ["SenderId", "SentTimestamp", "ApproximateReceiveCount"],
      }),
    );
    expect(Messages).toHaveLength(1);
    expect(Messages![0]).toMatchObject({
      MessageId: sent.MessageId,
      Body: body,
      MD5OfBody: sent.MD5OfMessageBody,
      Attributes: { SenderId: "local", SentTimestamp: String(nowMs), ApproximateReceiveCount: "1" },
    });
  });

  test("given message attributes, then their MD5 matches AWS's algorithm and a filtered receive returns them", async () => {
    const url = await newQueue();
    const sent = await sqs.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: "with attributes",
        MessageAttributes: {
          kind: { DataType: "String", StringValue: "start" },
          attempt: { DataType: "Number", StringValue: "3" },
          blob: { DataType: "Binary", BinaryValue: new Uint8Array([1, 2, 3]) },
        },
      }),
    );
    // The reference digest from AWS's documented encoding, computed independently here.
    const reference = createHash("md5");
    const field = (bytes: Buffer) => {
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes.length);
      reference.update(length).update(bytes);
    };
    for (const [name, type, transport, value] of [
      ["attempt", "Number", 1, Buffer.from("3")],
      ["blob", "Binary", 2, Buffer.from([1, 2, 3])],
      ["kind", "String", 1, Buffer.from("start")],
    ] as const) {
      field(Buffer.from(name));
      field(Buffer.from(type));
      reference.update(Buffer.of(transport));
      field(value);
    }
    expect(sent.MD5OfMessageAttributes).toBe(reference.digest("hex"));

    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, MessageAttributeNames: ["kind", "blob"] }),
    );
    expect(Object.keys(Messages![0]!.MessageAttributes!).sort()).toEqual(["blob", "kind"]);
    expect(Messages![0]!.MessageAttributes!.blob!.BinaryValue).toEqual(new Uint8Array([1, 2, 3]));

    const reserved = await failure(
      sqs.send(
        new SendMessageCommand({
          QueueUrl: url,
          MessageBody: "x",
          MessageAttributes: { "AWS.x": { DataType: "String", StringValue: "y" } },
        }),
      ),
    );
    expect(reserved.message).toContain("reserved");
    const notNumber = await failure(
      sqs.send(
        new SendMessageCommand({
          QueueUrl: url,
          MessageBody: "x",
          MessageAttributes: { n: { DataType: "Number", StringValue: "twelve" } },
        }),
      ),
    );
    expect(notNumber.message).toContain("MessageAttributes.n");
  });

  test("given a body over MaximumMessageSize or with a forbidden character, then SendMessage is refused with AWS's reason", async () => {
    const url = await newQueue({ MaximumMessageSize: "1024" });
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "x".repeat(1024) }));
    const big = await failure(
      sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "x".repeat(1025) })),
    );
    expect(big.name).toBe("InvalidParameterValue");
    expect(big.message).toContain("Message must be shorter than 1024 bytes");

    const defaultQueue = await newQueue();
    await sqs.send(new SendMessageCommand({ QueueUrl: defaultQueue, MessageBody: "y".repeat(1_048_576) }));
    const overDefault = await failure(
      sqs.send(new SendMessageCommand({ QueueUrl: defaultQueue, MessageBody: "y".repeat(1_048_577) })),
    );
    expect(overDefault.message).toContain("shorter than 1048576 bytes");

    const control = await failure(
      sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "bell\u0007" })),
    );
    expect(control.name).toBe("InvalidMessageContents");
    expect(control.message).toContain("#x7");
    const surrogate = await failure(
      sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "half \ud800" })),
    );
    expect(surrogate.name).toBe("InvalidMessageContents");
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "tab\tnewline\ncr\r \u{10FFFF}" }));
    const empty = await failure(sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "" })));
    expect(empty.name).toBe("MissingParameter");
    const delay = await failure(
      sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "x", DelaySeconds: 901 })),
    );
    expect(delay.message).toContain("parameter DelaySeconds is invalid");
  });

  test("given a DelaySeconds, then the message is delayed until the clock passes it", async () => {
    const url = await newQueue();
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "later", DelaySeconds: 30 }));
    expect((await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }))).Messages).toBeUndefined();
    advance(30);
    expect((await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }))).Messages?.[0]?.Body).toBe("later");
  });

  test("given a received message not deleted, then it reappears after the visibility timeout with a new handle and ApproximateReceiveCount 2", async () => {
    const url = await newQueue({ VisibilityTimeout: "20" });
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "retry me" }));
    const receive = () =>
      sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MessageSystemAttributeNames: ["All"] }));
    const first = (await receive()).Messages![0]!;
    expect(first.Attributes!.ApproximateReceiveCount).toBe("1");
    advance(19);
    expect((await receive()).Messages).toBeUndefined();
    advance(1);
    const second = (await receive()).Messages![0]!;
    expect(second.MessageId).toBe(first.MessageId);
    expect(second.ReceiptHandle).not.toBe(first.ReceiptHandle);
    expect(second.Attributes).toMatchObject({
      ApproximateReceiveCount: "2",
      ApproximateFirstReceiveTimestamp: first.Attributes!.ApproximateFirstReceiveTimestamp,
    });

    // AWS: an old handle "succeeds, but the message might not be deleted"; here it is not.
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: first.ReceiptHandle! }));
    expect(server.queues.byUrl(url).counts()).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
    const stale = await failure(
      sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: first.ReceiptHandle!,
          VisibilityTimeout: 5,
        }),
      ),
    );
    expect(stale.message).toContain("The receipt handle has expired");
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: second.ReceiptHandle! }));
    expect(server.queues.byUrl(url).counts()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });

    const garbage = await failure(
      sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: "not-a-handle" })),
    );
    expect(garbage.name).toBe("ReceiptHandleIsInvalid");
    expect(garbage.$metadata?.httpStatusCode).toBe(404);
  });

  test("given ChangeMessageVisibility, then 0 releases the message at once and a longer one holds it; a visible message is not in flight", async () => {
    const url = await newQueue();
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "m" }));
    const handle = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, VisibilityTimeout: 100 })))
      .Messages![0]!.ReceiptHandle!;
    await sqs.send(
      new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: handle, VisibilityTimeout: 0 }),
    );
    const again = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }))).Messages![0]!;
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url,
        ReceiptHandle: again.ReceiptHandle!,
        VisibilityTimeout: 600,
      }),
    );
    advance(599);
    expect((await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }))).Messages).toBeUndefined();
    advance(1);
    const notInFlight = await failure(
      sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: again.ReceiptHandle!,
          VisibilityTimeout: 10,
        }),
      ),
    );
    expect(notInFlight.name).toBe("MessageNotInflight");
    const third = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }))).Messages![0]!;
    const beyond = await failure(
      sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: third.ReceiptHandle!,
          VisibilityTimeout: 43_201,
        }),
      ),
    );
    expect(beyond.message).toContain("parameter VisibilityTimeout is invalid");
  });

  test("given MessageRetentionPeriod, then messages older than it are dropped, received or not", async () => {
    const url = await newQueue({ MessageRetentionPeriod: "60" });
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "old" }));
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, VisibilityTimeout: 0 }));
    advance(59);
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "young" }));
    advance(1);
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }),
    );
    expect(Messages!.map((m) => m.Body)).toEqual(["young"]);
  });

  test("given ReceiveMessage limits, then MaxNumberOfMessages 1-10 and WaitTimeSeconds 0-20 are enforced by name", async () => {
    const url = await newQueue();
    for (let i = 0; i < 12; i++)
      await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: `m${i}` }));
    const ten = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }));
    expect(ten.Messages!.map((m) => m.Body)).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`));
    expect(
      (await failure(sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 11 }))))
        .message,
    ).toBe(
      "Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.",
    );
    expect(
      (await failure(sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 21 })))).message,
    ).toContain("parameter WaitTimeSeconds is invalid");
  });
});

describe("batches", () => {
  test("given SendMessageBatch, then valid entries are sent and bad ones fail by Id; the SDK's MD5 checks pass", async () => {
    const url = await newQueue({ MaximumMessageSize: "1024" });
    const result = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: "ok-1", MessageBody: "one" },
          { Id: "too_big", MessageBody: "z".repeat(1025) },
          { Id: "ok-2", MessageBody: "two", DelaySeconds: 0 },
          { Id: "bad-char", MessageBody: "\u0000" },
        ],
      }),
    );
    expect(result.Successful!.map((s) => s.Id)).toEqual(["ok-1", "ok-2"]);
    expect(result.Failed).toEqual([
      expect.objectContaining({ Id: "too_big", SenderFault: true, Code: "InvalidParameterValue" }),
      expect.objectContaining({ Id: "bad-char", SenderFault: true, Code: "InvalidMessageContents" }),
    ]);
    expect(result.Failed![0]!.Message).toContain("Entries[1].MessageBody");
  });

  test("given batch limits, then empty, over 10, repeated or malformed ids and over 1 MiB in total are refused whole", async () => {
    const url = await newQueue();
    const send = (entries: { Id: string; MessageBody: string }[]) =>
      failure(sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries })));
    expect((await send([])).name).toBe("EmptyBatchRequest");
    const eleven = await send(Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: "x" })));
    expect(eleven).toMatchObject({
      name: "TooManyEntriesInBatchRequest",
      message: "Maximum number of entries per request are 10. You have sent 11.",
    });
    expect(
      await send([
        { Id: "same", MessageBody: "a" },
        { Id: "same", MessageBody: "b" },
      ]),
    ).toMatchObject({ name: "BatchEntryIdsNotDistinct", message: "Id same repeated." });
    expect((await send([{ Id: "no spaces", MessageBody: "a" }])).name).toBe("InvalidBatchEntryId");
    const tooLong = await send([
      { Id: "a", MessageBody: "a".repeat(600_000) },
      { Id: "b", MessageBody: "b".repeat(600_000) },
    ]);
    expect(tooLong.name).toBe("BatchRequestTooLong");
    expect(tooLong.message).toContain("You have sent 1200000 bytes");
    expect(server.queues.byUrl(url).counts().visible).toBe(0);
  });

  test("given DeleteMessageBatch and ChangeMessageVisibilityBatch, then each entry succeeds or fails on its own", async () => {
    const url = await newQueue();
    for (const body of ["a", "b", "c"])
      await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body }));
    const got = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 3 })))
      .Messages!;
    const changed = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: "c", ReceiptHandle: got[2]!.ReceiptHandle!, VisibilityTimeout: 0 },
          { Id: "bogus", ReceiptHandle: "bogus", VisibilityTimeout: 0 },
        ],
      }),
    );
    expect(changed.Successful).toEqual([{ Id: "c" }]);
    expect(changed.Failed).toEqual([
      expect.objectContaining({ Id: "bogus", Code: "ReceiptHandleIsInvalid" }),
    ]);

    const deleted = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: "a", ReceiptHandle: got[0]!.ReceiptHandle! },
          { Id: "b", ReceiptHandle: got[1]!.ReceiptHandle! },
          { Id: "bad", ReceiptHandle: "???" },
        ],
      }),
    );
    expect(deleted.Successful!.map((s) => s.Id)).toEqual(["a", "b"]);
    expect(deleted.Failed).toEqual([
      expect.objectContaining({ Id: "bad", Code: "ReceiptHandleIsInvalid", SenderFault: true }),
    ]);
    expect(server.queues.byUrl(url).counts()).toEqual({ visible: 1, inFlight: 0, delayed: 0 });
  });
});

describe("long polling and the wire", () => {
  test("given a receive waiting up to 20 s, when a message is sent later, then it returns with that message at once", async () => {
    const url = await newQueue();
    const started = performance.now();
    const waiting = sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 20 }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "wake up" }));
    const { Messages } = await waiting;
    expect(Messages?.[0]?.Body).toBe("wake up");
    // Returning at all before the 20 s wait is the point; the bound only catches a missed wake-up.
    expect(performance.now() - started).toBeLessThan(15_000);
  });

  test("given a queue's ReceiveMessageWaitTimeSeconds, then a receive without WaitTimeSeconds waits, and an empty wait returns no messages", async () => {
    const url = await newQueue({ ReceiveMessageWaitTimeSeconds: "1" });
    const started = performance.now();
    const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }));
    expect(Messages).toBeUndefined();
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
  });

  test("given a pending long poll, when the server closes, then the poll ends without messages and close() is prompt", async () => {
    const own = await startSqsServer({ clock });
    const client = new SQSClient({ endpoint: own.endpoint, region: "local", credentials });
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "closing" }));
    const waiting = client.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 20 }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = performance.now();
    await own.close();
    const outcome = await waiting.then(
      (r) => r.Messages ?? [],
      (e: unknown) => e,
    );
    expect(outcome).toEqual([]);
    expect(performance.now() - started).toBeLessThan(5_000);
    client.destroy();
  });

  test("given a long poll whose client gives up, then a message sent afterwards is left for the next receiver", async () => {
    const url = await newQueue();
    const abandon = new AbortController();
    const abandoned = sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 20 }), {
      abortSignal: abandon.signal,
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    abandon.abort();
    await abandoned.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "for the living" }));
    const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }));
    expect(Messages?.[0]?.Body).toBe("for the living");
  });

  test("given a client with no endpoint, then requests go to the queue URL's host (the SDK's queueUrl middleware)", async () => {
    const url = await newQueue();
    const warnings: string[] = [];
    const plain = new SQSClient({
      region: "us-east-1",
      credentials,
      logger: {
        debug: () => {},
        info: () => {},
        warn: (m: unknown) => warnings.push(String(m)),
        error: () => {},
      },
    });
    await plain.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "routed by URL" }));
    const { Messages } = await plain.send(new ReceiveMessageCommand({ QueueUrl: url }));
    expect(Messages?.[0]?.Body).toBe("routed by URL");
    plain.destroy();
  });

  test("given raw HTTP, then errors are query-compatible: __type, x-amzn-query-error and status", async () => {
    const response = await fetch(server.endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-amz-json-1.0", "x-amz-target": "AmazonSQS.GetQueueUrl" },
      body: JSON.stringify({ QueueName: "absent" }),
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("x-amzn-query-error")).toBe("AWS.SimpleQueueService.NonExistentQueue;Sender");
    expect(await response.json()).toEqual({
      __type: "com.amazonaws.sqs#QueueDoesNotExist",
      message: "The specified queue does not exist.",
    });
  });

  test("given the AWS CLI (botocore, JSON protocol for SQS), then create, send and receive work against the endpoint", async () => {
    const name = freshName("cli");
    const env = {
      ...process.env,
      AWS_ACCESS_KEY_ID: "cli",
      AWS_SECRET_ACCESS_KEY: "cli",
      AWS_DEFAULT_REGION: "us-east-1",
      AWS_CONFIG_FILE: "/dev/null",
      AWS_SHARED_CREDENTIALS_FILE: "/dev/null",
    };
    const aws = async (...args: string[]) =>
      JSON.parse(
        (await run("aws", ["sqs", ...args, "--endpoint-url", server.endpoint, "--output", "json"], { env }))
          .stdout || "{}",
      ) as Record<string, unknown>;
    const created = await aws("create-queue", "--queue-name", name);
    expect(created.QueueUrl).toBe(`${server.endpoint}/000000000000/${name}`);
    const sent = await aws(
      "send-message",
      "--queue-url",
      created.QueueUrl as string,
      "--message-body",
      "from the cli",
    );
    expect(sent.MD5OfMessageBody).toBe(createHash("md5").update("from the cli").digest("hex"));
    const received = await aws(
      "receive-message",
      "--queue-url",
      created.QueueUrl as string,
      "--attribute-names",
      "SenderId",
    );
    expect(received.Messages).toEqual([
      expect.objectContaining({ Body: "from the cli", Attributes: { SenderId: "cli" } }),
    ]);
    const missing = await run(
      "aws",
      ["sqs", "get-queue-url", "--queue-name", "nope", "--endpoint-url", server.endpoint],
      {
        env,
      },
    ).catch((e: { stderr: string }) => e);
    expect(missing.stderr).toContain("AWS.SimpleQueueService.NonExistentQueue");
  }, 30_000);
});
