/**
 * `cairn agent`: runs agent/host.ts in this process until SIGTERM or SIGINT, against whatever
 * the global options point at (a stack, an endpoint, or the local runtime). Only the endpoints
 * differ between them: the agent talks to Cairn through SQS and EventBridge alone.
 */
import { closeSync, readFileSync } from "node:fs";
import { hostname, availableParallelism, totalmem } from "node:os";
import { resolve } from "node:path";
import { CloudWatchLogsClient } from "@aws-sdk/client-cloudwatch-logs";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { SQSClient } from "@aws-sdk/client-sqs";
import { withoutSdkLogging } from "../../../functions/adapters/sdk-logging.ts";
import { z } from "zod";
import { AgentHost } from "../../../agent/host.ts";
import { DEFAULT_PATH } from "../../../agent/environment.ts";
import { InvalidAgentInputError } from "../../../agent/errors.ts";
import { resolveExecutable } from "../../../agent/executable.ts";
import { checkKernelUser, lookUpKernelUser, type KernelUser } from "../../../agent/kernel-user.ts";
import type { AgentOptions } from "../args.ts";
import { UnreachableError, UsageError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import type { CliIo } from "../io.ts";
import type { Connection } from "../target.ts";

/** The agent's id when --id is not given: this host's name in the agent id alphabet. */
export function defaultAgentId(host = hostname()): string {
  const id = host
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .slice(0, 40)
    .replace(/-+$/, "");
  return id === "" ? "agent" : id;
}

export async function runAgent(options: AgentOptions, connection: Connection, io: CliIo): Promise<ExitCode> {
  if (connection.agentQueuePrefix === undefined) {
    throw new UnreachableError(
      `${connection.where} names no agent queues (the AgentQueuePrefix output): deploy the current Cairn stack ` +
        "(or restart `npm start`) to run agents",
    );
  }
  const id = options.id ?? defaultAgentId();
  const capacity = {
    cpu: options.cpu ?? availableParallelism(),
    memoryMiB: options.memoryMiB ?? Math.floor((totalmem() / 1024 / 1024) * 0.9),
  };
  const workRoot = resolve(io.cwd, options.workRoot ?? "cairn-work");
  const kernelUser =
    options.kernelUser === undefined ? undefined : await kernelUserOption(options.kernelUser, workRoot);
  // Handed over on a descriptor (npm start does), else the SDK's chain (an instance role, the
  // environment). Never the client's: an agent speaks with agent credentials only.
  const credentials =
    options.credentialsFd === undefined
      ? connection.agentCredentials
      : readCredentialsFd(options.credentialsFd);
  const common = {
    ...(connection.region === undefined ? {} : { region: connection.region }),
    ...(credentials === undefined ? {} : { credentials }),
  };
  // No logger is given, so the SDK's logger middleware would only walk every call's data.
  const events = withoutSdkLogging(
    new EventBridgeClient({
      ...common,
      ...(connection.endpoints.eventBridge === undefined
        ? {}
        : { endpoint: connection.endpoints.eventBridge }),
    }),
  );
  const sqs = withoutSdkLogging(
    new SQSClient({
      ...common,
      ...(connection.endpoints.sqs === undefined ? {} : { endpoint: connection.endpoints.sqs }),
    }),
  );
  const logs = connection.logs.readable
    ? new CloudWatchLogsClient({
        ...common,
        ...(connection.logs.endpoint === undefined ? {} : { endpoint: connection.logs.endpoint }),
      })
    : undefined;
  const log = (line: string) => io.stderr(`${new Date(io.nowMs()).toISOString()} ${line}`);
  const host = new AgentHost({
    id,
    capacity,
    labels: options.labels,
    workRoot,
    ...(kernelUser === undefined ? {} : { kernelUser }),
    busName: connection.eventBusName,
    queueName: `${connection.agentQueuePrefix}${id}`,
    events,
    sqs,
    ...(logs && connection.logs.readable
      ? { kernelLogs: { client: logs, logGroupName: connection.logs.logGroupName } }
      : {}),
    ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
    ...(options.drainGraceMs === undefined ? {} : { drainGraceMs: options.drainGraceMs }),
    log,
  });
  const drain = (signal: string) => {
    log(`agent ${id}: ${signal}: draining`);
    void host.drain(`agent received ${signal}`);
  };
  process.once("SIGTERM", () => drain("SIGTERM"));
  process.once("SIGINT", () => drain("SIGINT"));
  // Kernels run in their own process groups: if this process dies of anything else, stop them.
  process.once("exit", () => host.agent.killAllNow());
  try {
    if (kernelUser) {
      log(
        `agent ${id}: kernels run as ${kernelUser.user.name} (uid ${kernelUser.user.uid}, gid ${kernelUser.user.gid})`,
      );
    }
    if (!connection.logs.readable) {
      log(`agent ${id}: kernel output stays in the work root only: ${connection.logs.why}`);
    }
    await host.start();
    log(`agent ${id}: ready on ${connection.where} (queue ${connection.agentQueuePrefix}${id})`);
    await host.stopped();
  } finally {
    events.destroy();
    sqs.destroy();
    logs?.destroy();
  }
  log(`agent ${id}: stopped`);
  return host.exitReason === undefined ? ExitCode.Ok : ExitCode.SessionDidNotSucceed;
}

const FdCredentialsSchema = z.strictObject({
  accessKeyId: z.string().min(1),
  secretAccessKey: z.string().min(1),
  sessionToken: z.string().min(1).optional(),
});

/**
 * The agent's credentials from a descriptor its starter opened (a pipe): read to its end, then
 * closed, so no kernel inherits it and nothing of it is in a file, the environment or argv.
 */
export function readCredentialsFd(fd: number): z.output<typeof FdCredentialsSchema> {
  let text: string;
  try {
    text = readFileSync(fd, "utf8");
  } catch (error) {
    throw new UsageError(`--credentials-fd ${fd}: cannot read it: ${(error as Error).message}`);
  } finally {
    try {
      closeSync(fd);
    } catch {
      // Already closed, or never open (the read said so).
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UsageError(`--credentials-fd ${fd}: not JSON (expected {"accessKeyId","secretAccessKey"})`);
  }
  const parsed = FdCredentialsSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UsageError(
      `--credentials-fd ${fd}: ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "not credentials"}`,
    );
  }
  return parsed.data;
}

/** The user kernels run as, checked against this host and the work root before anything starts. */
async function kernelUserOption(
  name: string,
  workRoot: string,
): Promise<{ readonly user: KernelUser; readonly setpriv: string }> {
  try {
    const user = lookUpKernelUser(name);
    const setpriv = await resolveExecutable("setpriv", process.env["PATH"] ?? DEFAULT_PATH, "/").catch(
      () => undefined,
    );
    checkKernelUser(user, workRoot, setpriv);
    return { user, setpriv: setpriv! };
  } catch (error) {
    if (error instanceof InvalidAgentInputError) throw new UsageError(error.message);
    throw error;
  }
}
