import { execFile } from "node:child_process";
import { promisify } from "node:util";
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { ListStateMachinesCommand, SFNClient } from "@aws-sdk/client-sfn";
import { SignatureV4 } from "@smithy/signature-v4";
import { createHash, createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  compilePolicy,
  requestContext,
  PolicyError,
  type AwsAuthOptions,
  type PolicyStatement,
} from "../local/aws-json/index.ts";
import { LocalEventBus, startEventBridgeServer, type EventBridgeServer } from "../local/eventbridge/index.ts";
import { LocalStepFunctions, startStepFunctionsServer } from "../local/stepfunctions/index.ts";
import { startSqsServer, type SqsServer } from "../local/sqs/index.ts";

const run = promisify(execFile);

const AGENT = { accessKeyId: "AKIALOCALAGENT", secretAccessKey: "agent-secret", principal: "agent" };
const CLIENT = { accessKeyId: "AKIALOCALCLIENT", secretAccessKey: "client-secret", principal: "client" };
const CONTROL = {
  accessKeyId: "AKIALOCALCONTROL",
  secretAccessKey: "control-secret",
  principal: "control-plane",
};

/** The policy the runtime would give: agents read their queues and report as cairn.agent. */
const STATEMENTS: PolicyStatement[] = [
  {
    sid: "agent-queue",
    principals: ["agent"],
    actions: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"],
    resources: ["arn:aws:sqs:*:*:cairn-agent-*"],
  },
  {
    sid: "agent-events",
    principals: ["agent"],
    actions: ["events:PutEvents"],
    resources: ["arn:aws:events:*:*:event-bus/*"],
    conditions: [{ key: "events:source", anyOf: ["cairn.agent"] }],
  },
  {
    sid: "client-events",
    principals: ["client"],
    actions: ["events:PutEvents"],
    resources: ["*", "arn:aws:events:*:*:event-bus/*"],
    conditions: [{ key: "events:source", anyOf: ["cairn.client"] }],
  },
  {
    sid: "control",
    principals: ["control-plane"],
    actions: ["sqs:*", "events:*", "states:*"],
    resources: ["*", "arn:*"],
  },
];

const auth: AwsAuthOptions = { credentials: [AGENT, CLIENT, CONTROL], authorize: compilePolicy(STATEMENTS) };

let sqsServer: SqsServer;
let ebServer: EventBridgeServer;
let bus: LocalEventBus;
let queueUrl: string;

const sqsAs = (credentials: { accessKeyId: string; secretAccessKey: string }) =>
  new SQSClient({ endpoint: sqsServer.endpoint, region: "local", credentials });
const eventsAs = (credentials: { accessKeyId: string; secretAccessKey: string }) =>
  new EventBridgeClient({ endpoint: ebServer.endpoint, region: "local", credentials });

async function failure(
  promise: Promise<unknown>,
): Promise<Error & { $metadata?: { httpStatusCode?: number } }> {
  const outcome = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(outcome instanceof Error)) throw new Error("expected the call to fail, it succeeded");
  return outcome;
}

beforeAll(async () => {
  sqsServer = await startSqsServer({ auth });
  bus = new LocalEventBus({ name: "default" });
  ebServer = await startEventBridgeServer(bus, { auth });
  const control = sqsAs(CONTROL);
  queueUrl = (await control.send(new CreateQueueCommand({ QueueName: "cairn-agent-a1" }))).QueueUrl!;
  await control.send(new CreateQueueCommand({ QueueName: "other-queue" }));
  control.destroy();
});

afterAll(async () => {
  await sqsServer.close();
  await ebServer.close();
  bus.close();
});

describe("SigV4 on the SQS endpoint (query-compatible codes)", () => {
  test("given the right key, then calls pass and SenderId is the authenticated principal", async () => {
    const control = sqsAs(CONTROL);
    await control.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "start kernel 0" }));
    control.destroy();
    const agent = sqsAs(AGENT);
    const { Messages } = await agent.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MessageSystemAttributeNames: ["SenderId"] }),
    );
    expect(Messages?.[0]).toMatchObject({
      Body: "start kernel 0",
      Attributes: { SenderId: "control-plane" },
    });
    await agent.send(
      new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: Messages![0]!.ReceiptHandle! }),
    );
    agent.destroy();
  });

  test("given a wrong secret, then SignatureDoesNotMatch (403) with AWS's message", async () => {
    const forged = sqsAs({ accessKeyId: AGENT.accessKeyId, secretAccessKey: "guessed" });
    const error = await failure(forged.send(new ReceiveMessageCommand({ QueueUrl: queueUrl })));
    expect(error.name).toBe("SignatureDoesNotMatch");
    expect(error.message).toMatch(
      /^The request signature we calculated does not match the signature you provided/,
    );
    expect(error.$metadata?.httpStatusCode).toBe(403);
    forged.destroy();
  });

  test("given an unknown access key, then InvalidClientTokenId (403)", async () => {
    const stranger = sqsAs({ accessKeyId: "AKIASTRANGER", secretAccessKey: "x" });
    const error = await failure(stranger.send(new ListQueuesCommand({})));
    expect(error.name).toBe("InvalidClientTokenId");
    expect(error.message).toBe("The security token included in the request is invalid.");
    expect(error.$metadata?.httpStatusCode).toBe(403);
    stranger.destroy();
  });

  test("given the agent outside its policy, then AccessDenied names principal, action, resource and why", async () => {
    const agent = sqsAs(AGENT);
    const send = await failure(
      agent.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "forged" })),
    );
    expect(send.name).toBe("AccessDenied");
    expect(send.message).toBe(
      "User: agent is not authorized to perform: sqs:SendMessage on resource: arn:aws:sqs:local:000000000000:cairn-agent-a1 because no identity-based policy allows the sqs:SendMessage action",
    );
    const other = await failure(
      agent.send(new ReceiveMessageCommand({ QueueUrl: `${sqsServer.endpoint}/000000000000/other-queue` })),
    );
    expect(other.message).toContain(
      "sqs:ReceiveMessage on resource: arn:aws:sqs:local:000000000000:other-queue",
    );
    expect((await failure(agent.send(new ListQueuesCommand({})))).name).toBe("AccessDenied");
    agent.destroy();
  });

  test("given a batch operation, then it is authorised as its single-message action, as AWS does", async () => {
    const control = sqsAs(CONTROL);
    await control.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "batch me" }));
    control.destroy();
    const agent = sqsAs(AGENT);
    const { Messages } = await agent.send(new ReceiveMessageCommand({ QueueUrl: queueUrl }));
    // sqs:DeleteMessage allows DeleteMessageBatch; no policy can name the batch action itself.
    const deleted = await agent.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: [{ Id: "0", ReceiptHandle: Messages![0]!.ReceiptHandle! }],
      }),
    );
    expect(deleted.Successful).toEqual([{ Id: "0" }]);
    // Without sqs:SendMessage, SendMessageBatch is denied, named as the action that was checked.
    const send = await failure(
      agent.send(
        new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: [{ Id: "0", MessageBody: "forged" }] }),
      ),
    );
    expect(send.name).toBe("AccessDenied");
    expect(send.message).toContain("not authorized to perform: sqs:SendMessage on resource");
    const other = await failure(
      agent.send(
        new DeleteMessageBatchCommand({
          QueueUrl: `${sqsServer.endpoint}/000000000000/other-queue`,
          Entries: [{ Id: "0", ReceiptHandle: "x" }],
        }),
      ),
    );
    expect(other.message).toContain(
      "sqs:DeleteMessage on resource: arn:aws:sqs:local:000000000000:other-queue",
    );
    agent.destroy();
  });

  test("given no Authorization header, then MissingAuthenticationToken", async () => {
    const response = await fetch(sqsServer.endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-amz-json-1.0", "x-amz-target": "AmazonSQS.ListQueues" },
      body: "{}",
    });
    expect(response.status).toBe(403);
    expect(response.headers.get("x-amzn-query-error")).toBe("MissingAuthenticationToken;Sender");
  });

  test("given a correctly signed request whose body is then altered, then the signature no longer matches", async () => {
    const body = JSON.stringify({ QueueUrl: queueUrl, MessageBody: "original" });
    const headers = await signedHeaders(sqsServer.endpoint, "AmazonSQS.SendMessage", body, CONTROL, "sqs");
    const intact = await post(sqsServer.endpoint, headers, body);
    expect(intact.status).toBe(200);

    const altered = await post(sqsServer.endpoint, headers, body.replace("original", "tampered"));
    expect(altered.headers.get("x-amzn-query-error")).toBe("SignatureDoesNotMatch;Sender");

    // A client-supplied payload hash cannot vouch for a different body either.
    const claimed = await signedHeaders(sqsServer.endpoint, "AmazonSQS.SendMessage", body, CONTROL, "sqs", {
      "x-amz-content-sha256": createHash("sha256").update(body).digest("hex"),
    });
    const swapped = await post(sqsServer.endpoint, claimed, body.replace("original", "tampered"));
    expect(swapped.status).toBe(403);
    expect(((await swapped.json()) as { message: string }).message).toContain("x-amz-content-sha256");
  });

  test("given a signature 20 minutes old or scoped to another service, then it is refused with the reason", async () => {
    const body = JSON.stringify({});
    const old = await signedHeaders(
      sqsServer.endpoint,
      "AmazonSQS.ListQueues",
      body,
      CONTROL,
      "sqs",
      {},
      new Date(Date.now() - 20 * 60_000),
    );
    const expired = await post(sqsServer.endpoint, old, body);
    expect(expired.headers.get("x-amzn-query-error")).toBe("RequestExpired;Sender");
    expect(((await expired.json()) as { message: string }).message).toMatch(
      /^Signature expired: \d{8}T\d{6}Z is now earlier than/,
    );

    const wrongService = await signedHeaders(
      sqsServer.endpoint,
      "AmazonSQS.ListQueues",
      body,
      CONTROL,
      "events",
    );
    const scoped = await post(sqsServer.endpoint, wrongService, body);
    expect(((await scoped.json()) as { message: string }).message).toBe(
      "Credential should be scoped to correct service: 'sqs'.",
    );
  });

  test("given the AWS CLI (botocore's own SigV4 signer), then the right key passes and a wrong secret is SignatureDoesNotMatch", async () => {
    const cli = (secret: string) =>
      run(
        "aws",
        [
          "sqs",
          "get-queue-url",
          "--queue-name",
          "cairn-agent-a1",
          "--endpoint-url",
          sqsServer.endpoint,
          "--output",
          "json",
        ],
        {
          env: {
            ...process.env,
            AWS_ACCESS_KEY_ID: CONTROL.accessKeyId,
            AWS_SECRET_ACCESS_KEY: secret,
            AWS_DEFAULT_REGION: "us-east-1",
            AWS_CONFIG_FILE: "/dev/null",
            AWS_SHARED_CREDENTIALS_FILE: "/dev/null",
          },
        },
      );
    const ok = JSON.parse((await cli(CONTROL.secretAccessKey)).stdout) as { QueueUrl: string };
    expect(ok.QueueUrl).toBe(queueUrl);
    const bad = await cli("wrong").catch((e: { stderr: string }) => e);
    expect(bad.stderr).toContain("SignatureDoesNotMatch");
  }, 30_000);
});

describe("SigV4 and policy on the EventBridge endpoint (AWS JSON 1.1 codes)", () => {
  const entry = (source: string) => ({ Source: source, DetailType: "Kernel Status Changed", Detail: "{}" });

  test("given each principal's own source, then PutEvents passes; another source is AccessDeniedException with the condition", async () => {
    const agent = eventsAs(AGENT);
    expect(
      (await agent.send(new PutEventsCommand({ Entries: [entry("cairn.agent")] }))).FailedEntryCount,
    ).toBe(0);
    const mixed = await failure(
      agent.send(new PutEventsCommand({ Entries: [entry("cairn.agent"), entry("cairn.client")] })),
    );
    expect(mixed.name).toBe("AccessDeniedException");
    expect(mixed.message).toBe(
      "User: agent is not authorized to perform: events:PutEvents on resource: arn:aws:events:local:000000000000:event-bus/default because statement agent-events allows events:PutEvents only when every events:source is one of [cairn.agent], and the request has [cairn.agent, cairn.client]",
    );
    agent.destroy();

    const client = eventsAs(CLIENT);
    expect(
      (await client.send(new PutEventsCommand({ Entries: [entry("cairn.client")] }))).FailedEntryCount,
    ).toBe(0);
    expect((await failure(client.send(new PutEventsCommand({ Entries: [entry("cairn.agent")] })))).name).toBe(
      "AccessDeniedException",
    );
    client.destroy();
  });

  test("given a wrong secret or an unknown key, then InvalidSignatureException / UnrecognizedClientException (400)", async () => {
    const forged = eventsAs({ accessKeyId: CLIENT.accessKeyId, secretAccessKey: "nope" });
    const bad = await failure(forged.send(new PutEventsCommand({ Entries: [entry("cairn.client")] })));
    expect(bad.name).toBe("InvalidSignatureException");
    expect(bad.$metadata?.httpStatusCode).toBe(400);
    forged.destroy();
    const stranger = eventsAs({ accessKeyId: "AKIAUNKNOWN", secretAccessKey: "x" });
    const unknown = await failure(stranger.send(new PutEventsCommand({ Entries: [entry("cairn.client")] })));
    expect(unknown).toMatchObject({
      name: "UnrecognizedClientException",
      message: "The security token included in the request is invalid.",
    });
    stranger.destroy();
  });
});

test("given the Step Functions endpoint with auth, then only known keys get through", async () => {
  const service = new LocalStepFunctions({});
  const server = await startStepFunctionsServer(service, { auth: { credentials: [CONTROL] } });
  try {
    const known = new SFNClient({ endpoint: server.endpoint, region: "local", credentials: CONTROL });
    expect((await known.send(new ListStateMachinesCommand({}))).stateMachines).toEqual([]);
    const unknown = new SFNClient({ endpoint: server.endpoint, region: "local", credentials: AGENT });
    expect((await failure(unknown.send(new ListStateMachinesCommand({})))).name).toBe(
      "UnrecognizedClientException",
    );
    known.destroy();
    unknown.destroy();
  } finally {
    await server.close();
    await service.close();
  }
});

describe("compilePolicy", () => {
  const decide = compilePolicy(STATEMENTS);
  const request = (action: string, resource: string, conditionValues: Record<string, string[]> = {}) => ({
    operation: action.split(":")[1]!,
    action,
    resources: [resource],
    conditionValues,
    input: {},
  });

  test("given statements, then principal, action (case-insensitive), resource pattern and every condition must match", () => {
    const queue = "arn:aws:sqs:local:000000000000:cairn-agent-7";
    expect(decide("agent", request("sqs:ReceiveMessage", queue))).toBeUndefined();
    expect(decide("agent", request("sqs:receivemessage", queue))).toBeUndefined();
    expect(decide("agent", request("sqs:SendMessage", queue))).toContain("no identity-based policy allows");
    expect(decide("client", request("sqs:ReceiveMessage", queue))).toContain("User: client");
    expect(
      decide("agent", request("sqs:ReceiveMessage", "arn:aws:sqs:local:000000000000:cairn-agentX")),
    ).toBeDefined();
    const putEvents = (sources: string[]) =>
      decide(
        "agent",
        request("events:PutEvents", "arn:aws:events:local:0:event-bus/b", { "events:source": sources }),
      );
    expect(putEvents(["cairn.agent", "cairn.agent"])).toBeUndefined();
    expect(putEvents([])).toContain("the request has none");
    expect(decide("nobody", request("sqs:ReceiveMessage", queue))).toBeDefined();
  });

  test("given a policy variable in a resource, then it is the request's principal tag, taken literally; without the tag the statement matches nothing", () => {
    const tagged = compilePolicy([
      {
        sid: "Own",
        principals: ["agent"],
        actions: ["sqs:ReceiveMessage"],
        resources: ["arn:aws:sqs:local:0:q-${aws:PrincipalTag/id}"],
      },
    ]);
    const receive = (queue: string, tags: Record<string, string[]>) =>
      tagged("agent", request("sqs:ReceiveMessage", `arn:aws:sqs:local:0:${queue}`, tags));
    expect(receive("q-a1", { "aws:PrincipalTag/id": ["a1"] })).toBeUndefined();
    expect(receive("q-a2", { "aws:PrincipalTag/id": ["a1"] })).toContain("no identity-based policy allows");
    expect(receive("q-a1", {})).toContain("no identity-based policy allows");
    // A tag value is a name, not a pattern: `*` in it matches only itself.
    expect(receive("q-a1", { "aws:PrincipalTag/id": ["*"] })).toBeDefined();
  });

  test("given a request's context, then global aws: keys come from the credential only, never from the request", () => {
    const fromRequest = { "events:source": ["cairn.agent"], "aws:PrincipalTag/cairn-agent-id": ["agent-1"] };
    expect(requestContext(fromRequest, AGENT)).toEqual({ "events:source": ["cairn.agent"] });
    expect(requestContext(fromRequest, { ...AGENT, tags: { "cairn-agent-id": "agent-2" } })).toEqual({
      "events:source": ["cairn.agent"],
      "aws:PrincipalTag/cairn-agent-id": ["agent-2"],
    });
  });

  test("given malformed statements, then compiling fails naming the field", () => {
    const bad = (statement: Partial<PolicyStatement>) => () =>
      compilePolicy([{ principals: ["p"], actions: ["sqs:X"], resources: ["*"], ...statement }]);
    expect(bad({ actions: ["ReceiveMessage"] })).toThrow(
      new PolicyError("statements[0].actions[0]", '"ReceiveMessage" is not of the form service:Action'),
    );
    expect(bad({ principals: [] })).toThrow("policy statements[0].principals: must list at least one entry");
    expect(bad({ resources: ["cairn-agent-*"] })).toThrow("statements[0].resources[0]");
    expect(bad({ conditions: [{ key: "events:source", anyOf: [] }] })).toThrow(
      "statements[0].conditions[0].anyOf",
    );
  });
});

async function signedHeaders(
  endpoint: string,
  target: string,
  body: string,
  credential: { accessKeyId: string; secretAccessKey: string },
  service: string,
  extra: Record<string, string> = {},
  signingDate = new Date(),
): Promise<Record<string, string>> {
  const url = new URL(endpoint);
  const signer = new SignatureV4({ credentials: credential, region: "local", service, sha256: Sha256 });
  const signed = await signer.sign(
    {
      method: "POST",
      protocol: "http:",
      hostname: url.hostname,
      port: Number(url.port),
      path: "/",
      query: {},
      headers: {
        host: url.host,
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": target,
        ...extra,
      },
      body,
    },
    { signingDate },
  );
  return signed.headers;
}

function post(endpoint: string, headers: Record<string, string>, body: string): Promise<Response> {
  const { host: _host, ...rest } = headers;
  return fetch(endpoint, { method: "POST", headers: rest, body });
}

class Sha256 {
  readonly #hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.#hash =
      secret === undefined
        ? createHash("sha256")
        : createHmac("sha256", typeof secret === "string" ? secret : new Uint8Array(secret as ArrayBuffer));
  }
  update(data: Uint8Array): void {
    this.#hash.update(data);
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.#hash.digest()));
  }
  reset(): void {}
}
