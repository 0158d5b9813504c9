/**
 * Every endpoint of the embedded runtime authenticates: a request must be signed (SigV4) by one
 * of the runtime's own credentials, and what it asks must be allowed to that principal by the
 * runtime's access rules, the stack's. Tried as an attacker would: with a key the runtime never
 * issued, with a known key and a guessed secret, and, on Step Functions (whose execution
 * histories hold task tokens), with the real AWS CLI under each principal's own keys.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { SignatureV4 } from "@smithy/signature-v4";
import { createHash, createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

const run = promisify(execFile);

let rt: TestRuntime;
let executionArn: string;
const sessionId = `auth-${Date.now().toString(36)}`;

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 1, agentCapacity: { cpu: 1, memoryMiB: 1024 } });
  // A session that runs on, so its execution waits on a callback whose token its history holds.
  await rt.submit({ sessionId, spec: { name: "auth", command: ["/bin/sh", "-c", "sleep 600"] } });
  await rt.waitForStatus(sessionId, "RUNNING", 60_000);
  executionArn = `${rt.runtime.info.stateMachineArn.replace(":stateMachine:", ":execution:")}:${sessionId}`;
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

interface Keys {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/**
 * One cheap read per endpoint, as its SDK would send it: the SigV4 signing name, the protocol's
 * target header and an empty-enough body. The answer's error code is what is asserted.
 */
const READS = {
  eventBridge: { service: "events", target: "AWSEvents.ListRules", contentType: "1.1", body: "{}" },
  sqs: { service: "sqs", target: "AmazonSQS.ListQueues", contentType: "1.0", body: "{}" },
  logs: { service: "logs", target: "Logs_20140328.DescribeLogGroups", contentType: "1.1", body: "{}" },
  stepFunctions: {
    service: "states",
    target: "AWSStepFunctions.ListStateMachines",
    contentType: "1.0",
    body: "{}",
  },
  ecs: {
    service: "ecs",
    target: "AmazonEC2ContainerServiceV20141113.ListClusters",
    contentType: "1.1",
    body: "{}",
  },
  dynamoDb: { service: "dynamodb", target: "DynamoDB_20120810.ListTables", contentType: "1.0", body: "{}" },
} as const;

async function signedRead(
  endpoint: string,
  read: (typeof READS)[keyof typeof READS],
  keys: Keys,
): Promise<{ status: number; code: string }> {
  const url = new URL(endpoint);
  const signer = new SignatureV4({
    credentials: keys,
    region: rt.runtime.info.region,
    service: read.service,
    sha256: Sha256,
  });
  const signed = await signer.sign({
    method: "POST",
    protocol: "http:",
    hostname: url.hostname,
    port: Number(url.port),
    path: "/",
    query: {},
    headers: {
      host: url.host,
      "content-type": `application/x-amz-json-${read.contentType}`,
      "x-amz-target": read.target,
    },
    body: read.body,
  });
  const response = await fetch(endpoint, {
    method: "POST",
    headers: signed.headers,
    body: read.body,
  });
  const text = await response.text();
  let code = response.headers.get("x-amzn-errortype")?.split(":")[0] ?? "";
  if (code === "") {
    try {
      code = String((JSON.parse(text) as { __type?: string }).__type ?? "");
    } catch {
      code = "";
    }
  }
  return { status: response.status, code: code.replace(/^.*#/, "") };
}

describe.each(Object.keys(READS) as (keyof typeof READS)[])("the %s endpoint", (name) => {
  const read = READS[name];
  const endpoints = () => [rt.runtime.info.endpoints[name], rt.runtime.info.endpoints.edge];

  test("refuses a key the runtime never issued", async () => {
    for (const endpoint of endpoints()) {
      const answer = await signedRead(endpoint, read, {
        accessKeyId: "AKIAIOSFODNN7EXAMPLE",
        secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      });
      expect(answer.status, `${name} at ${endpoint}`).toBeGreaterThanOrEqual(400);
      expect(["UnrecognizedClientException", "InvalidClientTokenId"], `${name} at ${endpoint}`).toContain(
        answer.code,
      );
    }
  });

  test("refuses the client's key signed with a guessed secret", async () => {
    const client = rt.runtime.info.credentials.client;
    for (const endpoint of endpoints()) {
      const answer = await signedRead(endpoint, read, {
        accessKeyId: client.accessKeyId,
        secretAccessKey: `${client.secretAccessKey}x`,
      });
      expect(answer.status, `${name} at ${endpoint}`).toBeGreaterThanOrEqual(400);
      expect(["InvalidSignatureException", "SignatureDoesNotMatch"], `${name} at ${endpoint}`).toContain(
        answer.code,
      );
    }
  });
});

describe("Step Functions through the AWS CLI", () => {
  const cli = async (
    keys: Keys,
    args: string[],
  ): Promise<{ code: number; stdout: string; stderr: string }> => {
    try {
      const { stdout, stderr } = await run(
        "aws",
        [
          "stepfunctions",
          ...args,
          "--endpoint-url",
          rt.runtime.info.endpoints.stepFunctions,
          "--output",
          "json",
        ],
        {
          env: {
            ...process.env,
            AWS_ACCESS_KEY_ID: keys.accessKeyId,
            AWS_SECRET_ACCESS_KEY: keys.secretAccessKey,
            AWS_DEFAULT_REGION: rt.runtime.info.region,
            AWS_CONFIG_FILE: "/dev/null",
            AWS_SHARED_CREDENTIALS_FILE: "/dev/null",
            AWS_MAX_ATTEMPTS: "1",
          },
        },
      );
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
    }
  };
  const stranger = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "not-a-secret-of-this-runtime" };
  const list = () => ["list-executions", "--state-machine-arn", rt.runtime.info.stateMachineArn];
  const describeIt = () => ["describe-execution", "--execution-arn", executionArn];
  const history = () => ["get-execution-history", "--execution-arn", executionArn];
  const stop = () => ["stop-execution", "--execution-arn", executionArn, "--error", "Forged"];

  test("unknown credentials: list, describe, history and stop are each refused, and the execution runs on", async () => {
    for (const args of [list(), describeIt(), history(), stop()]) {
      const out = await cli(stranger, args);
      expect(out.code, args[0]).not.toBe(0);
      expect(out.stderr, args[0]).toContain("UnrecognizedClientException");
    }
    const guessed = { ...rt.runtime.info.credentials.client, secretAccessKey: "guessed" };
    for (const args of [history(), stop()]) {
      const out = await cli(guessed, args);
      expect(out.stderr, args[0]).toContain("InvalidSignatureException");
    }
    expect((await rt.runtime.stepFunctions.describeExecution({ executionArn })).status).toBe("RUNNING");
    expect((await rt.store.getSession(sessionId))?.session.status).toBe("RUNNING");
  });

  test("the agent's credentials read no execution", async () => {
    const agent = rt.runtime.info.credentials.agent;
    for (const args of [list(), describeIt(), history(), stop()]) {
      const out = await cli(agent, args);
      expect(out.stderr, args[0]).toContain("AccessDeniedException");
    }
  });

  test("the client's may read its executions, as the docs tell users to, but neither stop one nor complete a task with a token the history shows", async () => {
    const client = rt.runtime.info.credentials.client;
    const described = await cli(client, describeIt());
    expect(described.code).toBe(0);
    expect(JSON.parse(described.stdout)).toMatchObject({ executionArn, status: "RUNNING" });
    const read = await cli(client, history());
    expect(read.code).toBe(0);
    // The token of the stage the session waits in, as the history shows it to whoever may read it.
    const token = (await rt.store.getSession(sessionId))?.session.stage.taskToken;
    expect(token).toBeDefined();
    expect(read.stdout).toContain(token);
    // No secret rides in an execution: not an agent's signing key (commands go by queue).
    for (const listed of await rt.store.listAgents()) {
      const signingKey = (await rt.store.getAgent(listed.id))?.signingKey;
      expect(signingKey).toBeDefined();
      expect(read.stdout).not.toContain(signingKey);
    }

    const stopped = await cli(client, stop());
    expect(stopped.stderr).toContain("AccessDeniedException");
    const completed = await cli(client, ["send-task-success", "--task-token", token!, "--task-output", "{}"]);
    expect(completed.stderr).toContain("AccessDeniedException");
    const failed = await cli(client, [
      "send-task-failure",
      "--task-token",
      token!,
      "--error",
      "Cairn.To.TERMINATED",
    ]);
    expect(failed.stderr).toContain("AccessDeniedException");
    expect((await rt.runtime.stepFunctions.describeExecution({ executionArn })).status).toBe("RUNNING");
    expect((await rt.store.getSession(sessionId))?.session.status).toBe("RUNNING");
  });
});

/** @smithy/signature-v4 wants a hash constructor: node's crypto, as the SDK's own. */
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
}
