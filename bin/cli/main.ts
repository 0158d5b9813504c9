/**
 * The CLI from argv to exit code: parse, validate what can be validated offline (the spec),
 * find Cairn, run the command, and turn every failure into a `cairn: …` line and its exit code.
 */
import { parseCommandLine, type Invocation } from "./args.ts";
import { explainAwsError } from "./aws-errors.ts";
import type { CairnApi } from "./cairn-api.ts";
import type { CommandContext } from "./commands/context.ts";
import type { DraftSaveRequest } from "./commands/job-draft.ts";
import type { SubmitRequest } from "./commands/submit.ts";
import { CliError, UsageError } from "./errors.ts";
import { ExitCode } from "./exit-codes.ts";
import type { CliIo } from "./io.ts";
import { explainStoreError } from "./store-errors.ts";
import type { DeploymentSpec } from "../../functions/core/deployments/spec.ts";
import type { SessionSpec } from "../../functions/core/model.ts";
import type { RetryPolicy } from "../../functions/core/retry/policy.ts";
import type { JobTemplate } from "../../functions/core/templates.ts";
import type { FailureCategoryDefinition } from "../../functions/core/retry/category-definitions.ts";
import { resolveConnection, type Connection } from "./target.ts";
import { terminalText } from "./terminal-text.ts";

/*
 * Each command's module is imported when that command runs, not at start: a start loads what
 * its command needs (the dashboard's pages, the YAML parser for files, the submission's checks
 * only when they are used). Measured in docs/performance.md.
 */
const documents = () => import("./document-files.ts");

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
    const submit = invocation.kind === "submit" ? await submitRequest(invocation, io) : undefined;
    const draft =
      invocation.kind === "job create" || invocation.kind === "job edit"
        ? await draftRequest(invocation, io)
        : undefined;
    const deployment =
      invocation.kind === "deployment create" ? await deploymentSpec(invocation.file, io) : undefined;
    const policy =
      invocation.kind === "retry-policy create" || invocation.kind === "retry-policy update"
        ? (await documents()).readPolicyFile(invocation.file, io)
        : undefined;
    const template =
      invocation.kind === "template create" || invocation.kind === "template update"
        ? (await documents()).readTemplateFile(invocation.file, io)
        : undefined;
    const category =
      invocation.kind === "failure-category create" || invocation.kind === "failure-category update"
        ? (await documents()).readFailureCategoryFile(invocation.file, io)
        : undefined;
    connection = await resolveConnection(invocation.target, {
      cwd: io.cwd,
      env: io.env,
      readFile: (path) => io.readFile(path),
      ...(io.processAlive === undefined ? {} : { processAlive: io.processAlive.bind(io) }),
      stackOutputs: (request) => io.stackOutputs(request),
    });
    if (invocation.kind === "agent") {
      if (!io.runAgent) throw new UsageError("`cairn agent` cannot run here", "agent");
      return await io.runAgent(invocation.agent, connection);
    }
    api = await io.openApi(connection);
    if (invocation.kind === "dashboard") {
      const { runDashboard } = await import("./commands/dashboard.ts");
      return await runDashboard(invocation.port, connection, { io, api });
    }
    return await dispatch(invocation, { submit, policy, deployment, draft, template, category }, { io, api });
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
  readonly template?: JobTemplate | undefined;
  readonly category?: FailureCategoryDefinition | undefined;
}

async function dispatch(
  invocation: Exclude<Invocation, { kind: "help" }>,
  prepared: Prepared,
  ctx: CommandContext,
): Promise<ExitCode> {
  switch (invocation.kind) {
    case "submit": {
      const { runSubmit } = await import("./commands/submit.ts");
      return runSubmit(prepared.submit ?? (await submitRequest(invocation, ctx.io)), ctx);
    }
    case "get":
      return (await import("./commands/get.ts")).runGet(invocation, ctx);
    case "history":
      return (await import("./commands/history.ts")).runHistory(invocation, ctx);
    case "list":
      return (await import("./commands/list.ts")).runList(invocation, ctx);
    case "cancel":
      return (await import("./commands/cancel.ts")).runCancel(invocation, ctx);
    case "job get":
      return (await import("./commands/job.ts")).runJobGet(invocation, ctx);
    case "job create":
    case "job edit": {
      const request = prepared.draft ?? (await draftRequest(invocation, ctx.io));
      const { runJobCreate, runJobEdit } = await import("./commands/job-draft.ts");
      return invocation.kind === "job create" ? runJobCreate(request, ctx) : runJobEdit(request, ctx);
    }
    case "job submit":
      return (await import("./commands/job-draft.ts")).runJobSubmit(invocation, ctx);
    case "job delete":
      return (await import("./commands/job-draft.ts")).runJobDelete(invocation, ctx);
    case "tasks":
      return (await import("./commands/job.ts")).runTasks(invocation, ctx);
    case "task":
      return (await import("./commands/job.ts")).runTask(invocation, ctx);
    case "logs":
      return (await import("./commands/logs.ts")).runLogs(invocation, ctx);
    case "retry-policy create":
    case "retry-policy update": {
      const policy = prepared.policy ?? (await documents()).readPolicyFile(invocation.file, ctx.io);
      return (await import("./commands/retry-policy.ts")).runPolicyWrite(invocation, policy, ctx);
    }
    case "retry-policy get":
      return (await import("./commands/retry-policy.ts")).runPolicyGet(invocation, ctx);
    case "retry-policy delete":
      return (await import("./commands/retry-policy.ts")).runPolicyDelete(invocation, ctx);
    case "retry-policy list":
      return (await import("./commands/retry-policy.ts")).runPolicyList(invocation, ctx);
    case "queue create":
    case "queue update":
      return (await import("./commands/queue.ts")).runQueueWrite(invocation, ctx);
    case "queue get":
      return (await import("./commands/queue.ts")).runQueueGet(invocation, ctx);
    case "queue delete":
      return (await import("./commands/queue.ts")).runQueueDelete(invocation, ctx);
    case "queue list":
      return (await import("./commands/queue.ts")).runQueueList(invocation, ctx);
    case "template create":
    case "template update": {
      const template = prepared.template ?? (await documents()).readTemplateFile(invocation.file, ctx.io);
      return (await import("./commands/template.ts")).runTemplateWrite(invocation, template, ctx);
    }
    case "template get":
      return (await import("./commands/template.ts")).runTemplateGet(invocation, ctx);
    case "template delete":
      return (await import("./commands/template.ts")).runTemplateDelete(invocation, ctx);
    case "template list":
      return (await import("./commands/template.ts")).runTemplateList(invocation, ctx);
    case "failure-category create":
    case "failure-category update": {
      const category =
        prepared.category ?? (await documents()).readFailureCategoryFile(invocation.file, ctx.io);
      return (await import("./commands/failure-category.ts")).runCategoryWrite(invocation, category, ctx);
    }
    case "failure-category get":
      return (await import("./commands/failure-category.ts")).runCategoryGet(invocation, ctx);
    case "failure-category delete":
      return (await import("./commands/failure-category.ts")).runCategoryDelete(invocation, ctx);
    case "failure-category list":
      return (await import("./commands/failure-category.ts")).runCategoryList(invocation, ctx);
    case "retry-config get":
      return (await import("./commands/retry-config.ts")).runRetryConfigGet(invocation, ctx);
    case "retry-config set":
      return (await import("./commands/retry-config.ts")).runRetryConfigSet(invocation, ctx);
    case "deployment create": {
      const spec = prepared.deployment ?? (await deploymentSpec(invocation.file, ctx.io));
      return (await import("./commands/deployment.ts")).runDeploymentCreate({ ...invocation, spec }, ctx);
    }
    case "deployment get":
      return (await import("./commands/deployment.ts")).runDeploymentGet(invocation, ctx);
    case "deployment list":
      return (await import("./commands/deployment.ts")).runDeploymentList(invocation, ctx);
    case "deployment scale":
      return (await import("./commands/deployment.ts")).runDeploymentScale(invocation, ctx);
    case "deployment destroy":
      return (await import("./commands/deployment.ts")).runDeploymentDestroy(invocation, ctx);
    case "deployment routes":
      return (await import("./commands/deployment.ts")).runDeploymentRoutes(invocation, ctx);
    case "agent":
      throw new UsageError("`cairn agent` runs without a session store", "agent");
    case "dashboard":
      throw new UsageError("`cairn dashboard` serves until it is stopped", "dashboard");
  }
}

/**
 * The spec file as written and the id it goes under: the one given, checked to leave room for the
 * ids of its independent tasks (sessions <id>-t<index>), or a new one that does.
 */
async function specWithId(
  file: string,
  io: CliIo,
  given: { readonly id: string | undefined; readonly flag: string; readonly command: string },
): Promise<{ spec: SessionSpec; written: unknown; id: string }> {
  const { spec, written } = (await documents()).readWrittenSpecFile(file, io);
  const { maxJobIdLength } = await import("../../functions/core/jobs.ts");
  const maxLength = maxJobIdLength(spec);
  if (given.id !== undefined && given.id.length > maxLength) {
    throw new UsageError(
      `${given.flag} "${given.id}" is too long for ${spec.replicas} independent tasks: at most ` +
        `${maxLength} characters, so that their sessions (<id>-t<index>) are valid ids`,
      given.command,
    );
  }
  const { newSessionId } = await import("./session-id.ts");
  return { spec, written, id: given.id ?? newSessionId(spec.name, () => io.random(), maxLength) };
}

async function submitRequest(
  invocation: Extract<Invocation, { kind: "submit" }>,
  io: CliIo,
): Promise<SubmitRequest> {
  const { spec, written, id } = await specWithId(invocation.file, io, {
    id: invocation.sessionId,
    flag: "--id",
    command: "submit",
  });
  // Size and contract checks; the real bus name is filled in once Cairn is found.
  (await import("./commands/submit.ts")).submittedEntry("-", id, spec, written);
  return {
    sessionId: id,
    idChosen: invocation.sessionId !== undefined,
    spec,
    written,
    wait: invocation.wait,
    streamLogs: invocation.streamLogs,
    output: invocation.output,
    ...(invocation.timeoutSeconds === undefined ? {} : { timeoutSeconds: invocation.timeoutSeconds }),
  };
}

/** A draft's spec and id, checked as a submission's are before anything is sent. */
async function draftRequest(
  invocation: Extract<Invocation, { kind: "job create" | "job edit" }>,
  io: CliIo,
): Promise<DraftSaveRequest> {
  // Sent as written, as `submit` does, so a job template's defaults apply to what it leaves unset.
  const { spec, written, id } = await specWithId(invocation.file, io, {
    id: invocation.jobId,
    flag: invocation.kind === "job create" ? "--id" : "JOB_ID",
    command: invocation.kind,
  });
  // Size and contract checks; the real bus name is filled in once Cairn is found.
  (await import("./commands/job-draft.ts")).draftSavedEntry("-", { jobId: id, spec }, written);
  return { jobId: id, spec, written, output: invocation.output };
}

/** The file's deployment spec, checked against the event that carries it (the bus named later). */
async function deploymentSpec(file: string, io: CliIo): Promise<DeploymentSpec> {
  const spec = (await documents()).readDeploymentFile(file, io);
  (await import("./commands/deployment.ts")).createdEntry("-", spec);
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
  // Messages quote what users and kernels wrote (rejection reasons, kernel messages): as text.
  io.stderr(`cairn: ${terminalText(known.message)}`);
  if (known instanceof UsageError) {
    io.stderr(known.command === undefined ? "see `cairn --help`" : `see \`cairn ${known.command} --help\``);
  }
  return known.exitCode;
}
