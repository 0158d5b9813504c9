/**
 * The CLI from argv to exit code: parse, validate what can be validated offline (the spec),
 * find Cairn, run the command, and turn every failure into a `cairn: …` line and its exit code.
 */
import { parseCommandLine, type Invocation } from "./args.ts";
import { explainAwsError } from "./aws-errors.ts";
import type { CairnApi } from "./cairn-api.ts";
import { runCancel } from "./commands/cancel.ts";
import { runDashboard } from "./commands/dashboard.ts";
import {
  createdEntry,
  runDeploymentCreate,
  runDeploymentDestroy,
  runDeploymentGet,
  runDeploymentList,
  runDeploymentRoutes,
  runDeploymentScale,
} from "./commands/deployment.ts";
import type { CommandContext } from "./commands/context.ts";
import { runGet } from "./commands/get.ts";
import { runHistory } from "./commands/history.ts";
import { runJobGet, runTask, runTasks } from "./commands/job.ts";
import {
  draftSavedEntry,
  runJobCreate,
  runJobDelete,
  runJobEdit,
  runJobSubmit,
  type DraftSaveRequest,
} from "./commands/job-draft.ts";
import { runLogs } from "./commands/logs.ts";
import { runList } from "./commands/list.ts";
import { runQueueDelete, runQueueGet, runQueueList, runQueueWrite } from "./commands/queue.ts";
import { runRetryConfigGet, runRetryConfigSet } from "./commands/retry-config.ts";
import { runPolicyDelete, runPolicyGet, runPolicyList, runPolicyWrite } from "./commands/retry-policy.ts";
import { runTemplateDelete, runTemplateGet, runTemplateList, runTemplateWrite } from "./commands/template.ts";
import { runSubmit, submittedEntry, type SubmitRequest } from "./commands/submit.ts";
import { CliError, UsageError } from "./errors.ts";
import { ExitCode } from "./exit-codes.ts";
import type { CliIo } from "./io.ts";
import {
  readDeploymentFile,
  readPolicyFile,
  readTemplateFile,
  readWrittenSpecFile,
} from "./document-files.ts";
import { newSessionId } from "./session-id.ts";
import { explainStoreError } from "./store-errors.ts";
import { maxJobIdLength } from "../../functions/core/jobs.ts";
import type { DeploymentSpec } from "../../functions/core/deployments/spec.ts";
import type { RetryPolicy } from "../../functions/core/retry/policy.ts";
import { resolveConnection, type Connection } from "./target.ts";

/** Never throws: every outcome is an exit code, with the reason on stderr. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let connection: Connection | undefined;
  let api: CairnApi | undefined;
  try {
    const invocation = parseCommandLine(argv);
    if (invocation.kind === "help") {
      io.stdout(invocation.text);
      return ExitCode.Ok;
    }
    // A bad spec or policy is reported before looking for Cairn: nothing is sent, wherever Cairn is.
    const submit = invocation.kind === "submit" ? submitRequest(invocation, io) : undefined;
    const draft =
      invocation.kind === "job create" || invocation.kind === "job edit"
        ? draftRequest(invocation, io)
        : undefined;
    const deployment =
      invocation.kind === "deployment create" ? deploymentSpec(invocation.file, io) : undefined;
    const policy =
      invocation.kind === "retry-policy create" || invocation.kind === "retry-policy update"
        ? readPolicyFile(invocation.file, io)
        : undefined;
    const template =
      invocation.kind === "template create" || invocation.kind === "template update"
        ? readTemplateFile(invocation.file, io)
        : undefined;
    connection = await resolveConnection(invocation.target, {
      cwd: io.cwd,
      env: io.env,
      readFile: (path) => io.readFile(path),
      stackOutputs: (request) => io.stackOutputs(request),
    });
    if (invocation.kind === "agent") {
      if (!io.runAgent) throw new UsageError("`cairn agent` cannot run here", "agent");
      return await io.runAgent(invocation.agent, connection);
    }
    api = await io.openApi(connection);
    if (invocation.kind === "dashboard") return await runDashboard(invocation.port, connection, { io, api });
    if (
      template !== undefined &&
      (invocation.kind === "template create" || invocation.kind === "template update")
    ) {
      return await runTemplateWrite(invocation, template, { io, api });
    }
    return await dispatch(invocation, { submit, policy, deployment, draft }, { io, api });
  } catch (error) {
    return report(error, connection, io);
  } finally {
    api?.close();
  }
}

/** What main.ts read and validated before connecting. */
interface Prepared {
  readonly submit: SubmitRequest | undefined;
  readonly policy: RetryPolicy | undefined;
  readonly deployment: DeploymentSpec | undefined;
  /** `job create` / `job edit`: the draft's id and spec. */
  readonly draft?: DraftSaveRequest | undefined;
}

function dispatch(
  invocation: Exclude<Invocation, { kind: "help" }>,
  prepared: Prepared,
  ctx: CommandContext,
): Promise<ExitCode> {
  switch (invocation.kind) {
    case "submit":
      return runSubmit(prepared.submit ?? submitRequest(invocation, ctx.io), ctx);
    case "get":
      return runGet(invocation, ctx);
    case "history":
      return runHistory(invocation, ctx);
    case "list":
      return runList(invocation, ctx);
    case "cancel":
      return runCancel(invocation, ctx);
    case "job get":
      return runJobGet(invocation, ctx);
    case "job create":
    case "job edit": {
      const request = prepared.draft ?? draftRequest(invocation, ctx.io);
      return invocation.kind === "job create" ? runJobCreate(request, ctx) : runJobEdit(request, ctx);
    }
    case "job submit":
      return runJobSubmit(invocation, ctx);
    case "job delete":
      return runJobDelete(invocation, ctx);
    case "tasks":
      return runTasks(invocation, ctx);
    case "task":
      return runTask(invocation, ctx);
    case "logs":
      return runLogs(invocation, ctx);
    case "retry-policy create":
    case "retry-policy update":
      return runPolicyWrite(invocation, prepared.policy ?? readPolicyFile(invocation.file, ctx.io), ctx);
    case "retry-policy get":
      return runPolicyGet(invocation, ctx);
    case "retry-policy delete":
      return runPolicyDelete(invocation, ctx);
    case "retry-policy list":
      return runPolicyList(invocation, ctx);
    case "queue create":
    case "queue update":
      return runQueueWrite(invocation, ctx);
    case "queue get":
      return runQueueGet(invocation, ctx);
    case "queue delete":
      return runQueueDelete(invocation, ctx);
    case "queue list":
      return runQueueList(invocation, ctx);
    case "template create":
    case "template update":
      return runTemplateWrite(invocation, readTemplateFile(invocation.file, ctx.io), ctx);
    case "template get":
      return runTemplateGet(invocation, ctx);
    case "template delete":
      return runTemplateDelete(invocation, ctx);
    case "template list":
      return runTemplateList(invocation, ctx);
    case "retry-config get":
      return runRetryConfigGet(invocation, ctx);
    case "retry-config set":
      return runRetryConfigSet(invocation, ctx);
    case "deployment create":
      return runDeploymentCreate(
        { ...invocation, spec: prepared.deployment ?? deploymentSpec(invocation.file, ctx.io) },
        ctx,
      );
    case "deployment get":
      return runDeploymentGet(invocation, ctx);
    case "deployment list":
      return runDeploymentList(invocation, ctx);
    case "deployment scale":
      return runDeploymentScale(invocation, ctx);
    case "deployment destroy":
      return runDeploymentDestroy(invocation, ctx);
    case "deployment routes":
      return runDeploymentRoutes(invocation, ctx);
    case "agent":
      throw new UsageError("`cairn agent` runs without a session store", "agent");
    case "dashboard":
      throw new UsageError("`cairn dashboard` serves until it is stopped", "dashboard");
  }
}

function submitRequest(invocation: Extract<Invocation, { kind: "submit" }>, io: CliIo): SubmitRequest {
  const { spec, written } = readWrittenSpecFile(invocation.file, io);
  // Independent tasks run as sessions <id>-t<index>: those ids must fit the id limit too.
  const maxLength = maxJobIdLength(spec);
  if (invocation.sessionId !== undefined && invocation.sessionId.length > maxLength) {
    throw new UsageError(
      `--id "${invocation.sessionId}" is too long for ${spec.replicas} independent tasks: at most ` +
        `${maxLength} characters, so that their sessions (<id>-t<index>) are valid ids`,
      "submit",
    );
  }
  const sessionId = invocation.sessionId ?? newSessionId(spec.name, () => io.random(), maxLength);
  // Size and contract checks; the real bus name is filled in once Cairn is found.
  submittedEntry("-", sessionId, spec, written);
  return {
    sessionId,
    idChosen: invocation.sessionId !== undefined,
    spec,
    written,
    wait: invocation.wait,
    streamLogs: invocation.streamLogs,
    output: invocation.output,
    ...(invocation.timeoutSeconds === undefined ? {} : { timeoutSeconds: invocation.timeoutSeconds }),
  };
}

/** A draft's spec and id, checked as a submission's are before anything is sent (issue 16 item 3). */
function draftRequest(
  invocation: Extract<Invocation, { kind: "job create" | "job edit" }>,
  io: CliIo,
): DraftSaveRequest {
  // Sent as written, as `submit` does, so a job template's defaults apply to what it leaves unset.
  const { spec, written } = readWrittenSpecFile(invocation.file, io);
  const maxLength = maxJobIdLength(spec);
  if (invocation.jobId !== undefined && invocation.jobId.length > maxLength) {
    const flag = invocation.kind === "job create" ? "--id" : "JOB_ID";
    throw new UsageError(
      `${flag} "${invocation.jobId}" is too long for ${spec.replicas} independent tasks: at most ` +
        `${maxLength} characters, so that their sessions (<id>-t<index>) are valid ids`,
      invocation.kind,
    );
  }
  const jobId = invocation.jobId ?? newSessionId(spec.name, () => io.random(), maxLength);
  // Size and contract checks; the real bus name is filled in once Cairn is found.
  draftSavedEntry("-", { jobId, spec }, written);
  return { jobId, spec, written, output: invocation.output };
}

/** The file's deployment spec, checked against the event that carries it (the bus named later). */
function deploymentSpec(file: string, io: CliIo): DeploymentSpec {
  const spec = readDeploymentFile(file, io);
  createdEntry("-", spec);
  return spec;
}

function report(error: unknown, connection: Connection | undefined, io: CliIo): number {
  const known =
    error instanceof CliError
      ? error
      : (explainStoreError(error) ??
        (connection === undefined
          ? undefined
          : explainAwsError(error, {
              where: connection.where,
              hint: connection.hint,
              resources: `table ${connection.tableName}, event bus ${connection.eventBusName}`,
            })));
  if (known === undefined) {
    // A bug or an answer nobody planned for: show all of it.
    io.stderr(
      `cairn: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    return ExitCode.SessionDidNotSucceed;
  }
  io.stderr(`cairn: ${known.message}`);
  if (known instanceof UsageError) {
    io.stderr(known.command === undefined ? "see `cairn --help`" : `see \`cairn ${known.command} --help\``);
  }
  return known.exitCode;
}
