/**
 * Every command and option the CLI accepts, declared for commander (which parses and writes the
 * help), and the checks that turn what a command was given into its Invocation. The checks throw
 * UsageError without a command name: parseCommandLine (args.ts) adds the one that was running.
 */
import { Command, Option } from "commander";
import { DEPLOYMENT_LIMITS } from "../../functions/core/deployments/spec.ts";
import { AGENT_ID_PATTERN, labelsSchema } from "../../functions/core/event-fields.ts";
import { MAX_MESSAGE_LENGTH, SESSION_ID_PATTERN } from "../../functions/core/events.ts";
import { CapacityProvider, type QueueFargateChanges } from "../../functions/core/queue-settings.ts";
import { NAME_PATTERN, safeParseWithIssues, SPEC_LIMITS } from "../../functions/core/spec.ts";
import { deploymentIdSchema } from "../../functions/core/service-binding.ts";
import { SESSION_STATUSES, type SessionStatus } from "../../functions/core/status.ts";
import { parseDurationMs } from "../../functions/core/retry/duration.ts";
import { VOCABULARIES, type Vocabulary } from "./invocation.ts";
import type {
  AgentOptions,
  Invocation,
  OutputFormat,
  RetryConfigChanges,
  TargetOptions,
} from "./invocation.ts";
import { UsageError } from "./errors.ts";
import { EXIT_CODE_HELP, ExitCode } from "./exit-codes.ts";
import { DEFAULT_RUNTIME_FILE } from "./runtime-locate.ts";

export { DEFAULT_RUNTIME_FILE };
export const DEFAULT_LIST_LIMIT = 20;
/** Sessions `cairn list` reads at most when a filter no index serves is set (the dashboard's budget). */
export const LIST_SCAN_BUDGET = 1000;
export const MAX_LIST_LIMIT = 1000;

/** An option: commander flags (`-f, --file <FILE>`: a value; `--wait`: a switch) and its help line. */
type OptionSpec = readonly [flags: string, description: string];

/**
 * Option values as commander stores them (camelCase keys); a `--no-x` switch is `false` when
 * given (and `true` by default).
 */
type Values = Readonly<Record<string, string | boolean | undefined>>;

interface Parsed {
  /** The positional arguments, as many as the command declares (more are refused before). */
  readonly args: readonly (string | undefined)[];
  readonly values: Values;
  readonly common: { readonly target: TargetOptions; readonly output: OutputFormat };
}

interface CommandDef {
  readonly summary: string;
  /** commander's argument syntax: `<SESSION_ID>`, `[FILE]`. */
  readonly args: readonly string[];
  readonly options: readonly OptionSpec[];
  /** Values --output accepts. @default ["text", "json"] */
  readonly outputs?: readonly OutputFormat[];
  /** Extra help text (examples, notes). */
  readonly details?: string;
  /** Exit codes this command can end with besides 0. */
  readonly exitCodes: readonly ExitCode[];
  readonly build: (parsed: Parsed) => Exclude<Invocation, { kind: "help" }>;
}

/** Accepted by every command, before or after the command name. */
export const GLOBAL_OPTIONS: readonly OptionSpec[] = [
  [
    "--runtime-file <PATH>",
    `the local runtime's file (default: CAIRN_RUNTIME_FILE, else the nearest ${DEFAULT_RUNTIME_FILE} ` +
      "here or above, else the runtime `npm start` recorded for you)",
  ],
  ["--stack <NAME>", "a deployed stack: read TableName, EventBusName and StateMachineArn from its outputs"],
  ["--endpoint <URL>", "send every AWS call to URL (LocalStack), like AWS_ENDPOINT_URL"],
  ["--region <REGION>", "AWS region (default: AWS_REGION or the SDK's configuration)"],
];

const output: OptionSpec = ["-o, --output <FORMAT>", "text (default) or json"];
const documentOutput: OptionSpec = [
  "-o, --output <FORMAT>",
  "text (default), json or yaml (both are documents `create -f` accepts back)",
];
const policyFile: OptionSpec = [
  "-f, --file <FILE>",
  "the RetryPolicy document, YAML or JSON (`-` reads stdin); may also be given as FILE",
];
const queueOptions: readonly OptionSpec[] = [
  ["--priority <N>", "added to each session's own priority (an integer, -1000 to 1000; create: default 0)"],
  ["--retry-policy <NAMES>", 'retry policies, comma-separated, in order; each must exist ("" for none)'],
  [
    "--capacity-provider <PROVIDER>",
    "Fargate: FARGATE (default) or FARGATE_SPOT (Spot interruptions are preemptions)",
  ],
  [
    "--vcpu-quota <N>",
    "Fargate: vCPUs the queue's Fargate kernels may hold at once (> 0; placement waits beyond it)",
  ],
];
const queueCreateOptions: readonly OptionSpec[] = [...queueOptions, output];
const queueUpdateOptions: readonly OptionSpec[] = [
  ...queueOptions,
  ["--no-fargate", "remove the queue's Fargate settings"],
  output,
];

const deploymentWait: readonly OptionSpec[] = [
  [
    "--wait",
    "wait until the deployment is READY with every replica HEALTHY, printing each change and why on stderr",
  ],
  [
    "--timeout <SECONDS>",
    "with --wait: give up waiting after SECONDS, default 600 (exit 124 with the reason; the deployment keeps going)",
  ],
];

const { Usage, NotFound, Unreachable, SessionDidNotSucceed, WaitTimedOut } = ExitCode;
const READS = [Usage, NotFound, Unreachable];

const DEPLOYMENT_EXAMPLE = `example (svc.yaml):
  name: web                   # the deployment's id: 3-56 of a-z, 0-9, '-'
  replicas: 2                 # 0 to ${DEPLOYMENT_LIMITS.replicas.max}
  service:
    command: [python3, -m, http.server]   # listens on $CAIRN_PORT
    resources: { cpu: 0.5, memoryMiB: 256 }
    # port: 8080              # pins every replica's port (default: each agent picks one)
  healthCheck: { path: /, intervalSeconds: 5, timeoutSeconds: 2, healthyThreshold: 1, unhealthyThreshold: 3 }`;

const POLICY_EXAMPLE = `example (policy.yaml):
  apiVersion: cairn.dev/v1
  kind: RetryPolicy
  metadata: { name: infra }
  spec:
    retryLimit: 3
    backoff: { initialDelay: 10s, maxDelay: 5m, multiplier: 2 }
    rules:
      - { action: Retry, onConditions: [OOMKilled, Evicted], antiAffinity: { mode: node } }
      - { action: Retry, onExitCodes: { operator: In, values: [137, 143] } }
      - { action: Fail, onExitCodes: { operator: In, values: [1, 2] } }`;

const categoryFile: OptionSpec = [
  "-f, --file <FILE>",
  "the FailureCategory document, YAML or JSON (`-` reads stdin); may also be given as FILE",
];

const CATEGORY_EXAMPLE = `example (cuda.yaml):
  apiVersion: cairn.dev/v1
  kind: FailureCategory
  metadata: { name: cuda_error }
  spec:
    precedence: 10           # lower is checked first (default 0), then by name
    rules:                   # any rule; within a rule every matcher must match
      - onTerminationMessage: { pattern: "(?i)cuda error" }
      - { onExitCodes: { operator: In, values: [74] }, onConditions: [OOMKilled] }

A retry rule then matches it: { action: Retry, onFailureCategory: [cuda_error] }.`;

const templateFile: OptionSpec = [
  "-f, --file <FILE>",
  "the job template, YAML or JSON (`-` reads stdin); may also be given as FILE",
];

const TEMPLATE_EXAMPLE = `example (small.yaml):
  name: small
  defaults: { resources: { cpu: 1 }, timeouts: { running: 600 } }
  constraints:                 # by field path; kinds: required, min, max, allowed
    resources.cpu: { max: 2 }
    timeouts.running: { max: 3600 }
    queue: { allowed: [default, batch] }`;

/** The commands, in help order; two-word names are `cairn <group> <action>`. */
export const COMMANDS: Readonly<Record<string, CommandDef>> = {
  submit: {
    summary: "submit a session spec; with --wait, follow it to the end",
    args: ["[FILE]"],
    options: [
      ["-f, --file <FILE>", "the spec, YAML or JSON (`-` reads stdin); may also be given as FILE"],
      ["--id <ID>", "session id (3-63 of a-z, 0-9, '-'); default: the spec's name and a random suffix"],
      ["--wait", "follow the session until it ends, printing each status change on stderr"],
      [
        "--timeout <SECONDS>",
        "with --wait: give up waiting after SECONDS (exit 124; the session keeps going)",
      ],
      [
        "--stream-logs",
        "with --wait: print every task's output as it is written ([task N]-prefixed; local runtime)",
      ],
      output,
    ],
    details: `The spec is validated locally first: an invalid spec prints every problem and sends nothing.
Prints the id (JSON: {"sessionId": ...}); with --wait, the final session as \`cairn get\` shows it, or
for a job of many tasks (replicas > 1, or coscheduled: false) the final job as \`cairn job get\` shows it;
exit 0 only if it succeeded. A job of independent tasks is waited for until all its tasks have ended.

examples:
  cairn submit -f examples/hello.yaml --wait
  cairn submit -f examples/gang.yaml --wait --stream-logs
  id=$(cairn submit examples/hello.yaml) && cairn get "$id"`,
    exitCodes: [SessionDidNotSucceed, Usage, Unreachable, WaitTimedOut],
    build: submitInvocation,
  },
  get: {
    summary: "show a session: status, result, kernels, timestamps",
    args: ["<SESSION_ID>"],
    options: [output],
    details: "result is succeeded, failed or cancelled once the session has ended (null before).",
    exitCodes: READS,
    build: ({ args, common }) => ({ ...common, kind: "get", sessionId: sessionIdValue(args[0]) }),
  },
  history: {
    summary: "show a session's lifecycle history",
    args: ["<SESSION_ID>"],
    options: [output],
    details: "One record per outcome; identical outcomes in a row are merged (count).",
    exitCodes: READS,
    build: ({ args, common }) => ({ ...common, kind: "history", sessionId: sessionIdValue(args[0]) }),
  },
  list: {
    summary: "list sessions, newest first, or those in one status in queue order",
    args: [],
    options: [
      ["--status <STATUS>", "only sessions in STATUS"],
      ["--name <PREFIX>", "only sessions whose name or id starts with PREFIX"],
      ["--queue <QUEUE>", "only sessions of QUEUE"],
      ["--job <JOB_ID>", "only the sessions of job JOB_ID (its tasks)"],
      ["--since <DURATION>", "only sessions created at most DURATION ago (30s, 5m, 1h30m)"],
      ["--older-than <DURATION>", "only sessions created at least DURATION ago"],
      ["--limit <N>", `at most N sessions (1-${MAX_LIST_LIMIT}, default ${DEFAULT_LIST_LIMIT})`],
      [
        "--view <VOCABULARY>",
        "the state shown: sokovan (the session's status and how it ended, the default), iris (Iris's job state) or hpc (HPC Pack's)",
      ],
      ["-w, --watch", "after the list, print each session again whenever its state changes (Ctrl-C stops)"],
      output,
    ],
    details: `Filters combine. --status reads its status index and --job the job's sessions; the others read
sessions newest first, at most ${LIST_SCAN_BUDGET} of them, and say so when more may match.
The state column names its vocabulary; how an ended session ended (succeeded, failed, cancelled) is
coloured on a terminal (not when NO_COLOR is set). With -o json, --watch prints one JSON object per line.

examples:
  cairn list --name train --since 1h
  cairn list --queue gpu --status RUNNING --watch
  cairn list --job tasks-abc12345 --view iris`,
    exitCodes: [Usage, Unreachable],
    build: ({ values, common }) => ({
      ...common,
      kind: "list",
      ...optional("status", statusOption(text(values["status"]))),
      limit: limitOption(text(values["limit"])),
      ...optional("namePrefix", filterText("--name", text(values["name"]), 128)),
      ...optional("queue", filterText("--queue", text(values["queue"]), 64)),
      ...optional("jobId", filterText("--job", text(values["job"]), 63)),
      ...optional("sinceMs", ageOption("--since", text(values["since"]))),
      ...optional("olderThanMs", ageOption("--older-than", text(values["olderThan"]))),
      watch: values["watch"] === true,
      view: vocabularyOption(text(values["view"])),
    }),
  },
  cancel: {
    summary: "ask Cairn to cancel a session, or every task of a job",
    args: ["<SESSION_ID>"],
    options: [
      ["--reason <TEXT>", "why (recorded with the request)"],
      ["--force", "do not wait for the run to end: kill without a grace period and end it at once"],
      output,
    ],
    details: `A session that has not started its command ends CANCELLED; a running one is stopped and ends
TERMINATED with result cancelled. Follow it with \`cairn get SESSION_ID\`. The id of a job of
independent tasks cancels every task: follow it with \`cairn job get JOB_ID\`.

--force (HPC Pack's Force Cancel) is for a run whose end never comes, say on an agent that
stopped answering: its kernels are killed without a grace period where their agents can be
reached, and ended at once (KILLED) whether or not they confirm it; their capacity is given
back. It may follow a plain cancel of the same session.`,
    exitCodes: READS,
    build: ({ args, values, common }) => ({
      ...common,
      kind: "cancel",
      sessionId: sessionIdValue(args[0]),
      ...optional("reason", reasonOption(text(values["reason"]))),
      force: values["force"] === true,
    }),
  },
  "job get": {
    summary: "show a job: its state and why, settings, tasks by state, parent and children",
    args: ["<JOB_ID>"],
    options: [output],
    details: `A job is what one submission describes (its id is the submitted id): \`replicas\` tasks that run as one
gang (co-scheduled, one session whose kernels are the tasks) or independently (one session per task,
JOB_ID-t<index>). Its state is derived from the task states (final once the control plane records it):
SUCCEEDED, FAILED (more than maxTaskFailures failed), UNSCHEDULABLE, KILLED, WORKER_FAILED, RUNNING, PENDING.`,
    exitCodes: READS,
    build: ({ args, common }) => ({ ...common, kind: "job get", jobId: jobIdValue(args[0]) }),
  },
  "job create": {
    summary: "store a job as a draft (HPC Pack's Configuring): not queued until `cairn job submit`",
    args: ["[FILE]"],
    options: [
      ["-f, --file <FILE>", "the spec, YAML or JSON (`-` reads stdin); may also be given as FILE"],
      ["--id <ID>", "the job's id (3-63 of a-z, 0-9, '-'); default: the spec's name and a random suffix"],
      output,
    ],
    details: `The spec is validated locally first, as \`cairn submit\` does: an invalid spec prints every problem
and sends nothing. The draft has no sessions and nothing runs; \`cairn job get ID\` shows it
(Configuring), \`cairn job edit\` replaces its spec, \`cairn job submit\` queues it under the same id,
\`cairn job delete\` removes it. Prints the id (JSON: {"jobId": ..., "version": 1}) once the control
plane has stored it; a refusal (the id taken by a job or another draft) exits 2 with the reason.

examples:
  id=$(cairn job create -f examples/hello.yaml) && cairn job get "$id"`,
    exitCodes: [Usage, Unreachable],
    build: ({ args, values, common }) => {
      const id = text(values["id"]);
      return {
        ...common,
        kind: "job create",
        file: fileArgument(values, args[0], "the spec"),
        ...optional("jobId", id === undefined ? undefined : sessionIdValue(id, "--id")),
      };
    },
  },
  "job edit": {
    summary: "replace a draft's spec (only a draft: a submitted job cannot be edited)",
    args: ["<JOB_ID>", "[FILE]"],
    options: [
      ["-f, --file <FILE>", "the new spec, YAML or JSON (`-` reads stdin); may also be given as FILE"],
      output,
    ],
    details: `The spec is validated locally first. The edit is made from the version read now: if the draft
changed meanwhile (another edit) it is refused, and exit 2 says so; so is an edit of a job that was
submitted, or of a draft being submitted.`,
    exitCodes: [Usage, NotFound, Unreachable],
    build: ({ args, values, common }) => ({
      ...common,
      kind: "job edit",
      jobId: jobIdValue(args[0]),
      file: fileArgument(values, args[1], "the spec"),
    }),
  },
  "job submit": {
    summary: "queue a draft: from then on it is the job `cairn submit` of its spec makes, same id",
    args: ["<JOB_ID>"],
    options: [
      ["--wait", "follow the job until it ends, printing each status change on stderr"],
      ["--timeout <SECONDS>", "with --wait: give up waiting after SECONDS (exit 124; the job keeps going)"],
      [
        "--stream-logs",
        "with --wait: print every task's output as it is written ([task N]-prefixed; local runtime)",
      ],
      output,
    ],
    details: `The draft goes through everything a submission does and is removed once its job exists; a
submission refused without a job (an unknown queue) leaves it a draft, to be edited and submitted
again. Prints and waits as \`cairn submit\` does.`,
    exitCodes: [SessionDidNotSucceed, Usage, NotFound, Unreachable, WaitTimedOut],
    build: ({ args, values, common }) => ({
      ...common,
      kind: "job submit",
      jobId: jobIdValue(args[0]),
      ...submitFollowOptions(values, common),
    }),
  },
  "job delete": {
    summary: "delete a draft (a submitted job is cancelled instead: `cairn cancel`)",
    args: ["<JOB_ID>"],
    options: [output],
    exitCodes: [Usage, NotFound, Unreachable],
    build: ({ args, common }) => ({ ...common, kind: "job delete", jobId: jobIdValue(args[0]) }),
  },
  tasks: {
    summary: "list a job's tasks: state, agent, exit code, run, retries, why pending or how ended",
    args: ["<JOB_ID>"],
    options: [output],
    details: `REASON is why a PENDING task waits (no agent matches, not enough capacity, the gang needs more
agents, priority), or how an ended task ended. RETRIES counts runs retried after failures and
preemptions (a gang's tasks share one count).`,
    exitCodes: READS,
    build: ({ args, common }) => ({ ...common, kind: "tasks", jobId: jobIdValue(args[0]) }),
  },
  task: {
    summary: "show one task: state, session, agent, exit code, reason and its part in every run",
    args: ["<JOB_ID>", "<INDEX>"],
    options: [output],
    details: "INDEX is the task's index in the job, from 0 (its CAIRN_TASK_INDEX).",
    exitCodes: READS,
    build: ({ args, common }) => ({
      ...common,
      kind: "task",
      jobId: jobIdValue(args[0]),
      index: taskIndexValue("INDEX", args[1] ?? ""),
    }),
  },
  logs: {
    summary: "print a job's task output (from CloudWatch Logs); with --follow, until the tasks end",
    args: ["<JOB_ID>"],
    options: [
      ["--task <INDEX>", "only this task's output (default: every task's)"],
      ["--follow", "keep printing new lines (and later runs') until the tasks have ended"],
      [
        "-o, --output <FORMAT>",
        "text (default) or json: one JSON object per line (task, run, stream, text, at)",
      ],
    ],
    details: `Prints each task's current run (a task waiting to be retried: its previous run). Lines keep their
stream (the program's stderr on stderr); lines of several tasks are merged in time order and
prefixed \`[task N]\`. A task that has not started says so on stderr (exit 3 if none has).
The agents ship every line to CloudWatch Logs (stream <session>/<kernel>/run-<run> of the kernel
log group: a stack's KernelLogGroupName output, or the local runtime's); exit 4 when none is known.

examples:
  cairn logs gang-k3x9q2mf
  cairn logs gang-k3x9q2mf --task 2 --follow`,
    exitCodes: READS,
    build: ({ args, values, common }) => {
      const task = text(values["task"]);
      return {
        ...common,
        kind: "logs",
        jobId: jobIdValue(args[0]),
        ...optional("task", task === undefined ? undefined : taskIndexValue("--task", task)),
        follow: values["follow"] === true,
      };
    },
  },
  "retry-policy create": {
    summary: "store a new retry policy from a file",
    args: ["[FILE]"],
    options: [policyFile, output],
    details: `The file is validated first: every problem is printed as \`<path>: <reason>\` and nothing is stored.\n\n${POLICY_EXAMPLE}`,
    exitCodes: [Usage, Unreachable],
    build: ({ args, values, common }) => ({
      ...common,
      kind: "retry-policy create",
      file: fileArgument(values, args[0], "the policy"),
    }),
  },
  "retry-policy update": {
    summary: "replace a stored retry policy (named in the file) with the file's",
    args: ["[FILE]"],
    options: [policyFile, output],
    details:
      "Validated like create. Queues that attach the policy use the new rules from their next decision.",
    exitCodes: READS,
    build: ({ args, values, common }) => ({
      ...common,
      kind: "retry-policy update",
      file: fileArgument(values, args[0], "the policy"),
    }),
  },
  "retry-policy get": {
    summary: "show a retry policy",
    args: ["<NAME>"],
    options: [documentOutput],
    outputs: ["text", "json", "yaml"],
    details:
      "example: cairn retry-policy get infra -o yaml > infra.yaml  (edit, then `retry-policy update -f`)",
    exitCodes: READS,
    build: ({ args, common }) => ({ ...common, kind: "retry-policy get", name: nameValue(args[0], "NAME") }),
  },
  "retry-policy delete": {
    summary: "delete a retry policy no queue attaches",
    args: ["<NAME>"],
    options: [output],
    details:
      "A policy a queue attaches is refused (exit 2), naming the queues: detach it with `cairn queue update`.",
    exitCodes: READS,
    build: ({ args, common }) => ({
      ...common,
      kind: "retry-policy delete",
      name: nameValue(args[0], "NAME"),
    }),
  },
  "retry-policy list": {
    summary: "list retry policies by name",
    args: [],
    options: [output],
    exitCodes: [Usage, Unreachable],
    build: ({ common }) => ({ ...common, kind: "retry-policy list" }),
  },
  "failure-category create": {
    summary: "store a new failure category from a file: a name for failures its rules match",
    args: ["[FILE]"],
    options: [categoryFile, output],
    details: `The file is validated first: every problem is printed as \`<path>: <reason>\` and nothing is stored.
Runs that end from then on are classified with it (within the catalog's cache, seconds).\n\n${CATEGORY_EXAMPLE}`,
    exitCodes: [Usage, Unreachable],
    build: ({ args, values, common }) => ({
      ...common,
      kind: "failure-category create",
      file: fileArgument(values, args[0], "the failure category"),
    }),
  },
  "failure-category update": {
    summary: "replace a stored failure category (named in the file) with the file's",
    args: ["[FILE]"],
    options: [categoryFile, output],
    details: "Validated like create. Runs that end from then on are classified with the new rules.",
    exitCodes: READS,
    build: ({ args, values, common }) => ({
      ...common,
      kind: "failure-category update",
      file: fileArgument(values, args[0], "the failure category"),
    }),
  },
  "failure-category get": {
    summary: "show a failure category",
    args: ["<NAME>"],
    options: [documentOutput],
    outputs: ["text", "json", "yaml"],
    details:
      "example: cairn failure-category get cuda_error -o yaml > cuda.yaml  (edit, then `failure-category update -f`)",
    exitCodes: READS,
    build: ({ args, common }) => ({
      ...common,
      kind: "failure-category get",
      name: nameValue(args[0], "NAME"),
    }),
  },
  "failure-category delete": {
    summary: "delete a failure category",
    args: ["<NAME>"],
    options: [output],
    details: "Runs that end from then on get the agents' built-in category instead.",
    exitCodes: READS,
    build: ({ args, common }) => ({
      ...common,
      kind: "failure-category delete",
      name: nameValue(args[0], "NAME"),
    }),
  },
  "failure-category list": {
    summary: "list failure categories in the order they are checked",
    args: [],
    options: [output],
    exitCodes: [Usage, Unreachable],
    build: ({ common }) => ({ ...common, kind: "failure-category list" }),
  },
  "template create": {
    summary: "store a new job template from a file: defaults and constraints for submissions",
    args: ["[FILE]"],
    options: [templateFile, output],
    details: `The file is validated first: every problem is printed as \`<path>: <reason>\` and nothing is stored.
A submission names its template with the spec field \`template: NAME\`, else it gets Default.\n\n${TEMPLATE_EXAMPLE}`,
    exitCodes: [Usage, Unreachable],
    build: ({ args, values, common }) => ({
      ...common,
      kind: "template create",
      file: fileArgument(values, args[0], "the template"),
    }),
  },
  "template update": {
    summary: "replace a stored job template (named in the file) with the file's; Default too",
    args: ["[FILE]"],
    options: [templateFile, output],
    details: "Validated like create. Submissions validate against the new template within seconds.",
    exitCodes: READS,
    build: ({ args, values, common }) => ({
      ...common,
      kind: "template update",
      file: fileArgument(values, args[0], "the template"),
    }),
  },
  "template get": {
    summary: "show a job template (as the YAML document `create -f` accepts)",
    args: ["<NAME>"],
    options: [output],
    exitCodes: READS,
    build: ({ args, common }) => ({ ...common, kind: "template get", name: nameValue(args[0], "NAME") }),
  },
  "template delete": {
    summary: "delete a job template (Default always exists and cannot be deleted)",
    args: ["<NAME>"],
    options: [output],
    details: "Submissions naming it afterwards fail validation, naming the template.",
    exitCodes: READS,
    build: ({ args, common }) => ({ ...common, kind: "template delete", name: nameValue(args[0], "NAME") }),
  },
  "template list": {
    summary: "list job templates by name, Default among them",
    args: [],
    options: [output],
    exitCodes: [Usage, Unreachable],
    build: ({ common }) => ({ ...common, kind: "template list" }),
  },
  "queue create": {
    summary: "create a queue: a priority, the retry policies its sessions get, its Fargate settings",
    args: ["<NAME>"],
    options: queueCreateOptions,
    details: `Every policy named must exist (create it first with \`cairn retry-policy create\`).
Fargate settings (for sessions with \`executor: fargate\`) need --vcpu-quota; --capacity-provider
defaults to FARGATE.

examples:
  cairn queue create gpu --priority 10 --retry-policy infra,ml-training
  cairn queue create batch --capacity-provider FARGATE_SPOT --vcpu-quota 16`,
    exitCodes: [Usage, Unreachable],
    build: ({ args, values, common }) => ({ ...common, kind: "queue create", ...queueChanges(args, values) }),
  },
  "queue update": {
    summary: "change a queue's priority, retry policies or Fargate settings (what is not given is kept)",
    args: ["<NAME>"],
    options: queueUpdateOptions,
    details: `A Fargate setting not given is kept; a queue without Fargate settings needs --vcpu-quota.

examples:
  cairn queue update gpu --retry-policy ""        (detach every policy)
  cairn queue update batch --vcpu-quota 32        (the capacity provider is kept)
  cairn queue update batch --no-fargate           (remove the Fargate settings)`,
    exitCodes: READS,
    build: ({ args, values, common }) => {
      const changes = queueChanges(args, values);
      if (
        changes.priority === undefined &&
        changes.retryPolicies === undefined &&
        changes.fargate === undefined
      ) {
        throw new UsageError(
          "nothing to change: give --priority, --retry-policy, --capacity-provider, --vcpu-quota or --no-fargate",
        );
      }
      return { ...common, kind: "queue update", ...changes };
    },
  },
  "queue get": {
    summary: "show a queue",
    args: ["<NAME>"],
    options: [output],
    exitCodes: READS,
    build: ({ args, common }) => ({ ...common, kind: "queue get", name: nameValue(args[0], "NAME") }),
  },
  "queue delete": {
    summary: "delete a queue (its policies stay)",
    args: ["<NAME>"],
    options: [output],
    exitCodes: READS,
    build: ({ args, common }) => ({ ...common, kind: "queue delete", name: nameValue(args[0], "NAME") }),
  },
  "queue list": {
    summary: "list queues by name",
    args: [],
    options: [output],
    exitCodes: [Usage, Unreachable],
    build: ({ common }) => ({ ...common, kind: "queue list" }),
  },
  "retry-config get": {
    summary: "show the global retry settings (the defaults until set)",
    args: [],
    options: [output],
    exitCodes: [Usage, Unreachable],
    build: ({ common }) => ({ ...common, kind: "retry-config get" }),
  },
  "retry-config set": {
    summary: "change global retry settings (what is not given is kept)",
    args: [],
    options: [
      ["--global-max-retries <N>", "cap on a session's counted retries under policies (0 stops every retry)"],
      [
        "--default-policy <NAME>",
        "the policy for sessions whose queue and spec name none (used if it exists)",
      ],
      ["--enabled <true|false>", "false: policies are ignored and the spec's retry budgets decide alone"],
      [
        "--default-backoff-initial <DURATION>",
        "the first retry's wait when no policy sets one (e.g. 0s, 10s)",
      ],
      ["--default-backoff-max <DURATION>", "the longest wait (e.g. 10m)"],
      ["--default-backoff-multiplier <X>", "each retry waits X times the previous one (1 to 100)"],
      output,
    ],
    details: `Validated before anything is stored; every problem is printed as \`<field> (--flag): <reason>\`.

example: cairn retry-config set --global-max-retries 5 --default-backoff-initial 10s`,
    exitCodes: [Usage, Unreachable],
    build: ({ values, common }) => ({
      ...common,
      kind: "retry-config set",
      changes: retryConfigChanges(values),
    }),
  },
  "deployment create": {
    summary: "create a deployment: N replicas of a service, each a route backed by a session",
    args: ["[FILE]"],
    options: [
      ["-f, --file <FILE>", "the deployment spec, YAML or JSON (`-` reads stdin); may also be given as FILE"],
      ...deploymentWait,
      output,
    ],
    details: `The spec is validated locally first: every problem is printed as \`<field>: <reason>\` and nothing is
sent. The spec's name is the deployment's id. Creating it again with the same spec sends nothing; a
deployment of that name with another spec must be scaled, or destroyed first. With --wait, exit 1 if
the deployment is destroyed before it is READY.

${DEPLOYMENT_EXAMPLE}`,
    exitCodes: [SessionDidNotSucceed, Usage, Unreachable, WaitTimedOut],
    build: ({ args, values, common }) => ({
      ...common,
      kind: "deployment create",
      file: fileArgument(values, args[0], "the deployment spec"),
      ...waitOptions(values),
    }),
  },
  "deployment get": {
    summary: "show a deployment: status, replicas, its spec, its routes and their health, its history",
    args: ["<NAME>"],
    options: [output],
    details: `Routes that have TERMINATED are counted, not listed (\`cairn deployment routes NAME --all\` lists
them; -o json has every route and every history record).`,
    exitCodes: READS,
    build: ({ args, common }) => ({ ...common, kind: "deployment get", name: deploymentName(args[0]) }),
  },
  "deployment list": {
    summary: "list deployments: status, replicas live/asked for, healthy routes, age",
    args: [],
    options: [output],
    exitCodes: [Usage, Unreachable],
    build: ({ common }) => ({ ...common, kind: "deployment list" }),
  },
  "deployment scale": {
    summary: "ask for another number of replicas",
    args: ["<NAME>", "<REPLICAS>"],
    options: [...deploymentWait, output],
    details: `REPLICAS is ${DEPLOYMENT_LIMITS.replicas.min} to ${DEPLOYMENT_LIMITS.replicas.max}. A deployment being destroyed cannot be scaled (exit 2). With --wait,
waits until it is READY with that many replicas; exit 1 if it is destroyed first.`,
    exitCodes: [SessionDidNotSucceed, Usage, NotFound, Unreachable, WaitTimedOut],
    build: ({ args, values, common }) => ({
      ...common,
      kind: "deployment scale",
      name: deploymentName(args[0]),
      replicas: replicasValue(args[1] ?? ""),
      ...waitOptions(values),
    }),
  },
  "deployment destroy": {
    summary: "destroy a deployment: its routes are terminated, then it is DESTROYED",
    args: ["<NAME>"],
    options: [
      ["--reason <TEXT>", "why (recorded with the request)"],
      ["--wait", "wait until the deployment is DESTROYED, printing each status change on stderr"],
      ["--timeout <SECONDS>", "with --wait: give up waiting after SECONDS (exit 124; the destroy goes on)"],
      output,
    ],
    details: "A deployment destroyed (or being destroyed) already is left as it is; nothing is sent.",
    exitCodes: [Usage, NotFound, Unreachable, WaitTimedOut],
    build: ({ args, values, common }) => ({
      ...common,
      kind: "deployment destroy",
      name: deploymentName(args[0]),
      ...optional("reason", reasonOption(text(values["reason"]))),
      ...waitOptions(values),
    }),
  },
  "deployment routes": {
    summary: "list a deployment's routes: status, agent:port, session, health",
    args: ["<NAME>"],
    options: [["--all", "include TERMINATED routes"], output],
    exitCodes: READS,
    build: ({ args, values, common }) => ({
      ...common,
      kind: "deployment routes",
      name: deploymentName(args[0]),
      all: values["all"] === true,
    }),
  },
  agent: {
    summary: "run an agent on this host: kernels of Cairn's sessions run here as child processes",
    args: [],
    options: [
      ["--id <ID>", "the agent's id (1-40 of letters, digits, '-', '_'; default: this host's name)"],
      ["--cpu <N>", "cpu it offers (default: this host's cpu count)"],
      ["--memory-mib <N>", "memory it offers, in MiB (default: 90% of this host's memory)"],
      ["--labels <K=V,...>", "labels a spec's nodeSelector can ask for (e.g. gpu=a100,zone=b)"],
      ["--work-root <DIR>", "where kernels' work directories go (default: ./cairn-work)"],
      [
        "--heartbeat-seconds <N>",
        "how often it tells Cairn it is alive (default 30; the liveness window is 90 on AWS)",
      ],
      [
        "--drain-grace-seconds <N>",
        "on SIGTERM/SIGINT, how long each kernel gets between SIGTERM and SIGKILL (default 10)",
      ],
      [
        "--kernel-user <NAME>",
        "run every kernel as this unprivileged user (the agent itself runs as root), so kernels cannot read the agent's credentials",
      ],
      [
        "--credentials-fd <N>",
        'read the agent\'s AWS credentials from this open file descriptor, as JSON {"accessKeyId","secretAccessKey"[,"sessionToken"]}, then close it (how npm start hands its agents theirs)',
      ],
    ],
    outputs: ["text"],
    details: `Runs until SIGTERM or SIGINT, then drains: takes no more work, stops its kernels (each is retried
elsewhere under the preemption budget), reports how each ended, and exits. Talks to Cairn only
through AWS APIs: commands from its own SQS queue, reports and heartbeats on the event bus (needs
the stack's AgentPolicy; see docs/agents.md). The local runtime's agents are the ones \`npm start\`
runs (--agents N): it hands each its credentials on a descriptor, and writes them nowhere.

examples:
  cairn agent --stack Cairn --labels gpu=a100
  sudo cairn agent --stack Cairn --kernel-user cairn-kernel --work-root /var/lib/cairn/work`,
    exitCodes: [SessionDidNotSucceed, Usage, Unreachable],
    build: ({ values, common }) => ({ ...common, kind: "agent", agent: agentOptions(values) }),
  },
  dashboard: {
    summary: "serve the dashboard on 127.0.0.1: sessions, jobs, timelines, agents, queues; cancel",
    args: [],
    options: [["--port <N>", "the port on 127.0.0.1 (0 to 65535; default 0: a free port)"]],
    outputs: ["text"],
    details: `Reads wherever the global options point (a stack with --stack, LocalStack with --endpoint, or
the local runtime) with your own credentials, like \`kubectl proxy\`: nothing is deployed for it.
Prints the URL and serves until SIGINT or SIGTERM. Only loopback is bound; the one write is a
cancel, a POST from the dashboard's own pages.

examples:
  cairn dashboard --stack Cairn --port 8080
  cairn dashboard                       # against the local runtime (npm start serves one too)`,
    exitCodes: [Usage, Unreachable],
    build: ({ values, common }) => ({ ...common, kind: "dashboard", port: portOption(text(values["port"])) }),
  },
};

/** Commands written as two words, `cairn <group> <action>`: the group's name and summary. */
export const COMMAND_GROUPS: Readonly<Record<string, string>> = {
  job: "show a job of many tasks (see also `cairn tasks`, `cairn task`, `cairn logs`)",
  "retry-policy": "create, update, get, delete and list retry policies",
  template: "create, update, get, delete and list job templates",
  "failure-category": "create, update, get, delete and list the failure categories retry rules match",
  queue: "create, update, get, delete and list queues",
  "retry-config": "get and set the global retry settings",
  deployment: "create, get, list, scale, destroy deployments and list their routes",
};

const MAIN_HELP_END = `
where Cairn is: by default the local runtime that \`npm start\` runs, found through --runtime-file,
else CAIRN_RUNTIME_FILE, else the nearest .cairn/runtime.json in this directory or one above it, else
the record \`npm start\` keeps in $XDG_STATE_HOME/cairn (~/.local/state/cairn) while it runs;
with --stack, a deployed stack (its region from --region or the AWS configuration); with --endpoint,
LocalStack or another endpoint (names from --stack, or CAIRN_TABLE_NAME and CAIRN_EVENT_BUS_NAME).

${exitCodeHelp(EXIT_CODE_HELP.map(([code]) => code))}

\`cairn <command> --help\` (or \`cairn help <command>\`) shows a command's options.`;

/**
 * The `cairn` program: `write` receives the help commander prints, `done` the invocation of the
 * command that ran. Commander errors are thrown (exitOverride), never printed.
 */
export function cairnProgram(write: (text: string) => void, done: (invocation: Invocation) => void): Command {
  const program = new Command("cairn")
    .description(
      "submit, follow and cancel Cairn sessions and jobs; read task logs; manage queues and retry policies",
    )
    .usage("<command> [options]")
    .helpCommand(false)
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({ writeOut: write, writeErr: write, outputError: () => undefined })
    .addHelpText("after", MAIN_HELP_END);
  for (const spec of GLOBAL_OPTIONS) program.addOption(option(spec, "Global options:"));
  const groups = new Map<string, Command>();
  for (const [name, def] of Object.entries(COMMANDS)) {
    const [first = name, action] = name.split(" ");
    let parent = program;
    if (action !== undefined) {
      parent =
        groups.get(first) ??
        program
          .command(first)
          .description(COMMAND_GROUPS[first] ?? "")
          .helpCommand(false);
      groups.set(first, parent);
    }
    const command = parent
      .command(action ?? first)
      .description(def.summary)
      .allowExcessArguments();
    for (const arg of def.args) command.argument(arg);
    for (const spec of def.options) command.addOption(option(spec));
    for (const spec of GLOBAL_OPTIONS) command.addOption(option(spec, "Global options:"));
    command
      .addHelpText(
        "after",
        `${def.details === undefined ? "" : `\n${def.details}\n`}\n${exitCodeHelp(def.exitCodes)}`,
      )
      .action(function (this: Command) {
        const extra = this.args[def.args.length];
        if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
        const values = this.opts<Values>();
        const common = {
          target: targetOptions(values),
          output: outputFormat(text(values["output"]), def.outputs ?? ["text", "json"]),
        };
        done(def.build({ args: this.args, values, common }));
      });
  }
  for (const [group, command] of groups) {
    command.usage(`<${command.commands.map((c) => c.name()).join("|")}> [options]`);
    command.addHelpText("after", `\n\`cairn ${group} <command> --help\` shows a command's options.`);
  }
  return program;
}

/** A commander Option; one that takes a value refuses to be given twice. */
function option([flags, description]: OptionSpec, group?: string): Option {
  const made = new Option(flags, description);
  if (group !== undefined) made.helpGroup(group);
  if (!made.required) return made;
  return made.argParser((value: string, previous: string | undefined) => {
    if (previous !== undefined) throw new UsageError(`option ${made.long ?? flags} given more than once`);
    return value;
  });
}

function exitCodeHelp(codes: readonly ExitCode[]): string {
  const shown = new Set<ExitCode>([ExitCode.Ok, ...codes]);
  return [
    "Exit codes:",
    ...EXIT_CODE_HELP.filter(([code]) => shown.has(code)).map(
      ([code, line]) => `  ${String(code).padEnd(3)}  ${line}`,
    ),
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// The checks: each names the option or argument and what it must be.

function text(value: string | boolean | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** `{ key: value }` when value is defined, else `{}`: keeps absent options absent. */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function submitInvocation({ args, values, common }: Parsed): Exclude<Invocation, { kind: "help" }> {
  const file = fileArgument(values, args[0], "the spec");
  const id = text(values["id"]);
  return {
    ...common,
    kind: "submit",
    file,
    ...submitFollowOptions(values, common),
    ...optional("sessionId", id === undefined ? undefined : sessionIdValue(id, "--id")),
  };
}

/** `--wait [--timeout SECONDS] [--stream-logs]` of `submit` and `job submit`. */
function submitFollowOptions(
  values: Values,
  common: Parsed["common"],
): { wait: boolean; streamLogs: boolean; timeoutSeconds?: number } {
  const wait = values["wait"] === true;
  const rawTimeout = text(values["timeout"]);
  if (rawTimeout !== undefined && !wait) throw new UsageError("--timeout only applies with --wait");
  const streamLogs = values["streamLogs"] === true;
  if (streamLogs && !wait) throw new UsageError("--stream-logs only applies with --wait");
  if (streamLogs && common.output === "json") {
    throw new UsageError(
      "--stream-logs prints the tasks' output on stdout, which -o json keeps for one JSON document; " +
        "leave one of them out (`cairn logs JOB_ID -o json` gives the output as JSON Lines)",
    );
  }
  return {
    wait,
    streamLogs,
    ...optional("timeoutSeconds", rawTimeout === undefined ? undefined : timeoutOption(rawTimeout)),
  };
}

/** `--wait [--timeout SECONDS]`. */
function waitOptions(values: Values): { wait: boolean; timeoutSeconds?: number } {
  const wait = values["wait"] === true;
  const rawTimeout = text(values["timeout"]);
  if (rawTimeout !== undefined && !wait) throw new UsageError("--timeout only applies with --wait");
  return {
    wait,
    ...optional("timeoutSeconds", rawTimeout === undefined ? undefined : timeoutOption(rawTimeout)),
  };
}

/** A deployment's name is its id (it names executions and prefixes its routes' ids). */
function deploymentName(raw: string | undefined): string {
  const name = raw ?? "";
  const parsed = safeParseWithIssues(deploymentIdSchema, name);
  if (!parsed.success) {
    throw new UsageError(
      `NAME "${name}" is not a deployment name: ${parsed.issues.map((i) => i.message).join("; ")}`,
    );
  }
  return name;
}

function replicasValue(raw: string): number {
  const { min, max } = DEPLOYMENT_LIMITS.replicas;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new UsageError(`REPLICAS must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/** A file given as FILE or -f FILE, not both. */
function fileArgument(values: Values, positional: string | undefined, what: string): string {
  const flag = text(values["file"]);
  if (flag !== undefined && positional !== undefined) {
    throw new UsageError(`give ${what} once: either FILE or -f, not both ("${positional}", "${flag}")`);
  }
  const file = flag ?? positional;
  if (file === undefined) throw new UsageError(`missing ${what}: -f FILE`);
  return file;
}

function queueChanges(
  args: Parsed["args"],
  values: Values,
): {
  name: string;
  priority?: number;
  retryPolicies?: readonly string[];
  fargate?: QueueFargateChanges | null;
} {
  const policies = text(values["retryPolicy"]);
  return {
    name: nameValue(args[0], "NAME"),
    ...optional("priority", priorityOption(text(values["priority"]))),
    ...optional("retryPolicies", policies === undefined ? undefined : policyList(policies)),
    ...optional("fargate", fargateChanges(values)),
  };
}

/**
 * `--capacity-provider`, `--vcpu-quota`: the Fargate settings to change (merged with the queue's
 * by the command); `--no-fargate` (update only): `null`, remove them; none: undefined.
 */
function fargateChanges(values: Values): QueueFargateChanges | null | undefined {
  const rawProvider = text(values["capacityProvider"]);
  const rawQuota = text(values["vcpuQuota"]);
  if (values["fargate"] === false) {
    if (rawProvider !== undefined || rawQuota !== undefined) {
      throw new UsageError(
        "--no-fargate removes the Fargate settings: it cannot be combined with --capacity-provider or --vcpu-quota",
      );
    }
    return null;
  }
  if (rawProvider === undefined && rawQuota === undefined) return undefined;
  const providers = Object.values(CapacityProvider);
  const provider =
    rawProvider === undefined ? undefined : providers.find((p) => p === rawProvider.toUpperCase());
  if (rawProvider !== undefined && provider === undefined) {
    throw new UsageError(`--capacity-provider must be ${providers.join(" or ")}, got "${rawProvider}"`);
  }
  return {
    ...optional("capacityProvider", provider),
    ...optional("vcpuQuota", rawQuota === undefined ? undefined : vcpuQuotaOption(rawQuota)),
  };
}

function vcpuQuotaOption(raw: string): number {
  const quota = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(quota) || quota <= 0) {
    throw new UsageError(`--vcpu-quota must be a number of vCPUs greater than 0, got "${raw}"`);
  }
  return quota;
}

function retryConfigChanges(values: Values): RetryConfigChanges {
  const enabled = text(values["enabled"]);
  if (enabled !== undefined && enabled !== "true" && enabled !== "false") {
    throw new UsageError(`--enabled must be true or false, got "${enabled}"`);
  }
  const maxRetries = text(values["globalMaxRetries"]);
  if (maxRetries !== undefined && !/^\d+$/.test(maxRetries)) {
    throw new UsageError(`--global-max-retries must be a whole number, got "${maxRetries}"`);
  }
  const defaultPolicy = text(values["defaultPolicy"]);
  if (defaultPolicy !== undefined) nameValue(defaultPolicy, "--default-policy");
  const multiplier = text(values["defaultBackoffMultiplier"]);
  if (multiplier !== undefined && (multiplier.trim() === "" || !Number.isFinite(Number(multiplier)))) {
    throw new UsageError(`--default-backoff-multiplier must be a number, got "${multiplier}"`);
  }
  const changes: RetryConfigChanges = {
    ...optional("enabled", enabled === undefined ? undefined : enabled === "true"),
    ...optional("globalMaxRetries", maxRetries === undefined ? undefined : Number(maxRetries)),
    ...optional("defaultPolicyName", defaultPolicy),
    ...optional("initialDelay", text(values["defaultBackoffInitial"])),
    ...optional("maxDelay", text(values["defaultBackoffMax"])),
    ...optional("multiplier", multiplier === undefined ? undefined : Number(multiplier)),
  };
  if (Object.keys(changes).length === 0) {
    throw new UsageError("nothing to change: give at least one setting (see the options)");
  }
  return changes;
}

function targetOptions(values: Values): TargetOptions {
  const runtimeFile = text(values["runtimeFile"]);
  const stack = text(values["stack"]);
  const endpoint = text(values["endpoint"]);
  const region = text(values["region"]);
  if (runtimeFile !== undefined && (stack !== undefined || endpoint !== undefined)) {
    throw new UsageError(
      "--runtime-file is for the local runtime; it cannot be combined with --stack or --endpoint",
    );
  }
  for (const [flag, value] of [
    ["--runtime-file", runtimeFile],
    ["--stack", stack],
    ["--region", region],
  ] as const) {
    if (value !== undefined && value.trim() === "") throw new UsageError(`${flag} must not be empty`);
  }
  if (endpoint !== undefined && !isHttpUrl(endpoint)) {
    throw new UsageError(`--endpoint must be an http(s) URL, got "${endpoint}"`);
  }
  return {
    ...optional("runtimeFile", runtimeFile),
    ...optional("stack", stack),
    ...optional("endpoint", endpoint),
    ...optional("region", region),
  };
}

function isHttpUrl(raw: string): boolean {
  const url = URL.parse(raw);
  return url !== null && (url.protocol === "http:" || url.protocol === "https:");
}

function outputFormat(raw: string | undefined, allowed: readonly OutputFormat[]): OutputFormat {
  if (raw === undefined) return "text";
  const format = allowed.find((f) => f === raw);
  if (format !== undefined) return format;
  const list =
    allowed.length === 2 ? allowed.join(" or ") : `${allowed.slice(0, -1).join(", ")} or ${allowed.at(-1)}`;
  throw new UsageError(`--output must be ${list}, got "${raw}"`);
}

/** A policy or queue name: the same rule as a spec's name. */
function portOption(raw: string | undefined): number {
  if (raw === undefined) return 0;
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) {
    throw new UsageError(`--port must be a whole number from 0 to 65535, got "${raw}"`);
  }
  return Number(raw);
}

function nameValue(raw: string | undefined, what: string): string {
  const name = raw ?? "";
  if (name.length === 0 || name.length > SPEC_LIMITS.nameMaxLength || !NAME_PATTERN.test(name)) {
    throw new UsageError(
      `${what} "${name}" is not a valid name: 1 to ${SPEC_LIMITS.nameMaxLength} letters, digits, '.', '_' or '-', ` +
        "starting with a letter or digit",
    );
  }
  return name;
}

function priorityOption(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const { min, max } = SPEC_LIMITS.priority;
  const value = Number(raw);
  if (!/^[-+]?\d+$/.test(raw) || value < min || value > max) {
    throw new UsageError(`--priority must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/** `a,b` → ["a", "b"]; "" → [] (no policies). */
function policyList(raw: string): string[] {
  const names = raw
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  const seen = new Set<string>();
  for (const name of names) {
    nameValue(name, "--retry-policy");
    if (seen.has(name)) throw new UsageError(`--retry-policy lists ${name} twice`);
    seen.add(name);
  }
  return names;
}

function sessionIdValue(raw: string | undefined, what = "SESSION_ID", noun = "session"): string {
  const id = raw ?? "";
  if (!SESSION_ID_PATTERN.test(id)) {
    throw new UsageError(
      `${what} "${id}" is not a ${noun} id: 3 to 63 lowercase letters, digits or '-', ` +
        "starting with a letter or digit",
    );
  }
  return id;
}

/** Job ids are session ids: the job's id is its submission's `sessionId`. */
function jobIdValue(raw: string | undefined): string {
  return sessionIdValue(raw, "JOB_ID", "job");
}

/** A task's index in its job: 0 to replicas - 1 (checked against the job once it is read). */
function taskIndexValue(what: string, raw: string): number {
  const max = SPEC_LIMITS.replicas.max - 1;
  const index = Number(raw);
  if (!/^\d+$/.test(raw) || index > max) {
    throw new UsageError(`${what} must be a task index, a whole number from 0 to ${max}, got "${raw}"`);
  }
  return index;
}

function timeoutOption(raw: string): number {
  const seconds = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(seconds) || seconds <= 0) {
    throw new UsageError(`--timeout must be a positive number of seconds, got "${raw}"`);
  }
  return seconds;
}

function statusOption(raw: string | undefined): SessionStatus | undefined {
  if (raw === undefined) return undefined;
  const status = SESSION_STATUSES.find((s) => s === raw.toUpperCase());
  if (status === undefined) {
    throw new UsageError(
      `--status: unknown status "${raw}" (expected one of ${SESSION_STATUSES.join(", ")})`,
    );
  }
  return status;
}

function filterText(option: string, raw: string | undefined, max: number): string | undefined {
  if (raw === undefined) return undefined;
  if (raw.trim() === "") throw new UsageError(`${option} must not be empty`);
  if (raw.length > max)
    throw new UsageError(`${option} must be at most ${max} characters, got ${raw.length}`);
  return raw;
}

function ageOption(option: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const parsed = parseDurationMs(raw);
  if (!parsed.ok) throw new UsageError(`${option} ${parsed.reason}, got "${raw}"`);
  return parsed.ms;
}

function vocabularyOption(raw: string | undefined): Vocabulary {
  if (raw === undefined) return "sokovan";
  const view = VOCABULARIES.find((v) => v === raw.toLowerCase());
  if (view === undefined)
    throw new UsageError(`--view must be one of ${VOCABULARIES.join(", ")}, got "${raw}"`);
  return view;
}

function limitOption(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIST_LIMIT;
  const limit = Number(raw);
  if (!/^\d+$/.test(raw) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new UsageError(`--limit must be a whole number from 1 to ${MAX_LIST_LIMIT}, got "${raw}"`);
  }
  return limit;
}

function reasonOption(raw: string | undefined): string | undefined {
  if (raw !== undefined && raw.length > MAX_MESSAGE_LENGTH) {
    throw new UsageError(`--reason must be at most ${MAX_MESSAGE_LENGTH} characters, got ${raw.length}`);
  }
  return raw;
}

function agentOptions(values: Values): AgentOptions {
  const id = text(values["id"]);
  if (id !== undefined && !AGENT_ID_PATTERN.test(id)) {
    throw new UsageError(
      `--id must be 1 to 40 letters, digits, '-' or '_', starting with a letter or digit, got "${id}"`,
    );
  }
  const number = (flag: string, key: string, integer: boolean, scale = 1): number | undefined => {
    const raw = text(values[key]);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
      throw new UsageError(`${flag} must be a ${integer ? "whole " : ""}number greater than 0, got "${raw}"`);
    }
    return value * scale;
  };
  return {
    ...optional("id", id),
    ...optional("cpu", number("--cpu", "cpu", false)),
    ...optional("memoryMiB", number("--memory-mib", "memoryMib", true)),
    labels: labelsOption(text(values["labels"])),
    ...optional("workRoot", text(values["workRoot"])),
    ...optional("heartbeatMs", number("--heartbeat-seconds", "heartbeatSeconds", false, 1000)),
    ...optional("drainGraceMs", number("--drain-grace-seconds", "drainGraceSeconds", false, 1000)),
    ...optional("kernelUser", text(values["kernelUser"])),
    ...optional("credentialsFd", fileDescriptor(text(values["credentialsFd"]))),
  };
}

/** A descriptor the agent was started with, past stdin, stdout and stderr. */
function fileDescriptor(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const fd = Number(raw);
  if (raw.trim() === "" || !Number.isInteger(fd) || fd < 3 || fd > 1_000_000) {
    throw new UsageError(`--credentials-fd must be a file descriptor number of 3 or more, got "${raw}"`);
  }
  return fd;
}

/** `k=v,k2=v2` → a label map; every pair checked as the agent registration checks it. */
function labelsOption(raw: string | undefined): Record<string, string> {
  if (raw === undefined || raw.trim() === "") return {};
  const labels: Record<string, string> = {};
  for (const pair of raw.split(",")) {
    const eq = pair.indexOf("=");
    const key = eq < 0 ? pair : pair.slice(0, eq);
    if (eq < 0) throw new UsageError(`--labels: "${pair}" is not KEY=VALUE`);
    if (Object.hasOwn(labels, key)) throw new UsageError(`--labels: "${key}" is given twice`);
    labels[key] = pair.slice(eq + 1);
  }
  const parsed = safeParseWithIssues(labelsSchema, labels);
  if (!parsed.success) {
    throw new UsageError(`--labels: ${parsed.issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`);
  }
  return labels;
}
