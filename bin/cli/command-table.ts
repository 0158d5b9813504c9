/**
 * Every command and option the CLI accepts, as data: the parser (args.ts) and the help
 * (help.ts) both read this table, so they cannot disagree.
 */
import { ExitCode } from "./exit-codes.ts";

export interface OptionDef {
  readonly type: "string" | "boolean";
  readonly short?: string;
  /** Placeholder shown in the help for a string option's value. */
  readonly value?: string;
  readonly description: string;
}

export type OptionTable = Readonly<Record<string, OptionDef>>;

export interface CommandDef {
  readonly summary: string;
  /** The positional part of the usage line. */
  readonly positionals: string;
  readonly minPositionals: number;
  readonly maxPositionals: number;
  readonly options: OptionTable;
  /** Extra help text (examples, notes). */
  readonly details: string;
  /** Exit codes this command can end with besides 0. */
  readonly exitCodes: readonly ExitCode[];
  /** Values --output accepts. @default ["text", "json"] */
  readonly outputs?: readonly OutputFormat[];
}

export type OutputFormat = "text" | "json" | "yaml";

export const DEFAULT_RUNTIME_FILE = ".cairn/runtime.json";
export const DEFAULT_LIST_LIMIT = 20;
export const MAX_LIST_LIMIT = 1000;

/** Accepted by every command, before or after the command name. */
export const GLOBAL_OPTIONS = {
  "runtime-file": {
    type: "string",
    value: "PATH",
    description: `the local runtime to talk to (default ${DEFAULT_RUNTIME_FILE}, written by \`npm start\`)`,
  },
  stack: {
    type: "string",
    value: "NAME",
    description: "a deployed stack: read TableName, EventBusName and StateMachineArn from its outputs",
  },
  endpoint: {
    type: "string",
    value: "URL",
    description: "send every AWS call to URL (LocalStack), like AWS_ENDPOINT_URL",
  },
  region: {
    type: "string",
    value: "REGION",
    description: "AWS region (default: AWS_REGION or the SDK's configuration)",
  },
  help: { type: "boolean", short: "h", description: "show help" },
} as const satisfies OptionTable;

const output = {
  type: "string",
  short: "o",
  value: "FORMAT",
  description: "text (default) or json",
} as const satisfies OptionDef;

const documentOutput = {
  type: "string",
  short: "o",
  value: "FORMAT",
  description: "text (default), json or yaml (both are documents `create -f` accepts back)",
} as const satisfies OptionDef;

const policyFile = {
  type: "string",
  short: "f",
  value: "FILE",
  description: "the RetryPolicy document, YAML or JSON (`-` reads stdin); may also be given as FILE",
} as const satisfies OptionDef;

const queueOptions = {
  priority: {
    type: "string",
    value: "N",
    description: "added to each session's own priority (an integer, -1000 to 1000; create: default 0)",
  },
  "retry-policy": {
    type: "string",
    value: "NAMES",
    description: 'retry policies, comma-separated, in order; each must exist ("" for none)',
  },
  output,
} as const satisfies OptionTable;

const POLICY_EXAMPLE =
  "example (policy.yaml):\n" +
  "  apiVersion: cairn.dev/v1\n" +
  "  kind: RetryPolicy\n" +
  "  metadata: { name: infra }\n" +
  "  spec:\n" +
  "    retryLimit: 3\n" +
  "    backoff: { initialDelay: 10s, maxDelay: 5m, multiplier: 2 }\n" +
  "    rules:\n" +
  "      - { action: Retry, onConditions: [OOMKilled, Evicted], antiAffinity: { mode: node } }\n" +
  "      - { action: Retry, onExitCodes: { operator: In, values: [137, 143] } }\n" +
  "      - { action: Fail, onExitCodes: { operator: In, values: [1, 2] } }";
export const COMMANDS = {
  submit: {
    summary: "submit a session spec; with --wait, follow it to the end",
    positionals: "[FILE]",
    minPositionals: 0,
    maxPositionals: 1,
    options: {
      file: {
        type: "string",
        short: "f",
        value: "FILE",
        description: "the spec, YAML or JSON (`-` reads stdin); may also be given as FILE",
      },
      id: {
        type: "string",
        value: "ID",
        description: "session id (3-63 of a-z, 0-9, '-'); default: the spec's name and a random suffix",
      },
      wait: {
        type: "boolean",
        description: "follow the session until it ends, printing each status change on stderr",
      },
      timeout: {
        type: "string",
        value: "SECONDS",
        description: "with --wait: give up waiting after SECONDS (exit 124; the session keeps going)",
      },
      "stream-logs": {
        type: "boolean",
        description:
          "with --wait: print every task's output as it is written ([task N]-prefixed; local runtime)",
      },
      output,
    },
    details:
      "The spec is validated locally first: an invalid spec prints every problem and sends nothing.\n" +
      'Prints the id (JSON: {"sessionId": ...}); with --wait, the final session as `cairn get` shows it, or\n' +
      "for a job of many tasks (replicas > 1, or coscheduled: false) the final job as `cairn job get` shows it;\n" +
      "exit 0 only if it succeeded. A job of independent tasks is waited for until all its tasks have ended.\n\n" +
      "examples:\n" +
      "  cairn submit -f examples/hello.yaml --wait\n" +
      "  cairn submit -f examples/gang.yaml --wait --stream-logs\n" +
      '  id=$(cairn submit examples/hello.yaml) && cairn get "$id"',
    exitCodes: [ExitCode.SessionDidNotSucceed, ExitCode.Usage, ExitCode.Unreachable, ExitCode.WaitTimedOut],
  },
  get: {
    summary: "show a session: status, result, kernels, timestamps",
    positionals: "SESSION_ID",
    minPositionals: 1,
    maxPositionals: 1,
    options: { output },
    details: "result is succeeded, failed or cancelled once the session has ended (null before).",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  history: {
    summary: "show a session's lifecycle history",
    positionals: "SESSION_ID",
    minPositionals: 1,
    maxPositionals: 1,
    options: { output },
    details: "One record per outcome; identical outcomes in a row are merged (count).",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  list: {
    summary: "list sessions, newest first, or those in one status in queue order",
    positionals: "",
    minPositionals: 0,
    maxPositionals: 0,
    options: {
      status: { type: "string", value: "STATUS", description: "only sessions in STATUS" },
      limit: {
        type: "string",
        value: "N",
        description: `at most N sessions (1-${MAX_LIST_LIMIT}, default ${DEFAULT_LIST_LIMIT})`,
      },
      output,
    },
    details: "",
    exitCodes: [ExitCode.Usage, ExitCode.Unreachable],
  },
  cancel: {
    summary: "ask Cairn to cancel a session, or every task of a job",
    positionals: "SESSION_ID",
    minPositionals: 1,
    maxPositionals: 1,
    options: {
      reason: { type: "string", value: "TEXT", description: "why (recorded with the request)" },
      output,
    },
    details:
      "A session that has not started its command ends CANCELLED; a running one is stopped and ends\n" +
      "TERMINATED with result cancelled. Follow it with `cairn get SESSION_ID`. The id of a job of\n" +
      "independent tasks cancels every task: follow it with `cairn job get JOB_ID`.",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  "job get": {
    summary: "show a job: its state and why, settings, tasks by state, parent and children",
    positionals: "JOB_ID",
    minPositionals: 1,
    maxPositionals: 1,
    options: { output },
    details:
      "A job is what one submission describes (its id is the submitted id): `replicas` tasks that run as one\n" +
      "gang (co-scheduled, one session whose kernels are the tasks) or independently (one session per task,\n" +
      "JOB_ID-t<index>). Its state is derived from the task states (final once the control plane records it):\n" +
      "SUCCEEDED, FAILED (more than maxTaskFailures failed), UNSCHEDULABLE, KILLED, WORKER_FAILED, RUNNING, PENDING.",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  tasks: {
    summary: "list a job's tasks: state, agent, exit code, run, retries, why pending or how ended",
    positionals: "JOB_ID",
    minPositionals: 1,
    maxPositionals: 1,
    options: { output },
    details:
      "REASON is why a PENDING task waits (no agent matches, not enough capacity, the gang needs more\n" +
      "agents, priority), or how an ended task ended. RETRIES counts runs retried after failures and\n" +
      "preemptions (a gang's tasks share one count).",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  task: {
    summary: "show one task: state, session, agent, exit code, reason and its part in every run",
    positionals: "JOB_ID INDEX",
    minPositionals: 2,
    maxPositionals: 2,
    options: { output },
    details: "INDEX is the task's index in the job, from 0 (its CAIRN_TASK_INDEX).",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  logs: {
    summary: "print a job's task output (from CloudWatch Logs); with --follow, until the tasks end",
    positionals: "JOB_ID",
    minPositionals: 1,
    maxPositionals: 1,
    options: {
      task: {
        type: "string",
        value: "INDEX",
        description: "only this task's output (default: every task's)",
      },
      follow: {
        type: "boolean",
        description: "keep printing new lines (and later runs') until the tasks have ended",
      },
      output: {
        type: "string",
        short: "o",
        value: "FORMAT",
        description: "text (default) or json: one JSON object per line (task, run, stream, text, at)",
      },
    },
    details:
      "Prints each task's current run (a task waiting to be retried: its previous run). Lines keep their\n" +
      "stream (the program's stderr on stderr); lines of several tasks are merged in time order and\n" +
      "prefixed `[task N]`. A task that has not started says so on stderr (exit 3 if none has).\n" +
      "The agents ship every line to CloudWatch Logs (stream <session>/<kernel>/run-<run> of the kernel\n" +
      "log group: a stack's KernelLogGroupName output, or the local runtime's); exit 4 when none is known.\n\n" +
      "examples:\n" +
      "  cairn logs gang-k3x9q2mf\n" +
      "  cairn logs gang-k3x9q2mf --task 2 --follow",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  "retry-policy create": {
    summary: "store a new retry policy from a file",
    positionals: "[FILE]",
    minPositionals: 0,
    maxPositionals: 1,
    options: { file: policyFile, output },
    details:
      "The file is validated first: every problem is printed as `<path>: <reason>` and nothing is stored.\n\n" +
      POLICY_EXAMPLE,
    exitCodes: [ExitCode.Usage, ExitCode.Unreachable],
  },
  "retry-policy update": {
    summary: "replace a stored retry policy (named in the file) with the file's",
    positionals: "[FILE]",
    minPositionals: 0,
    maxPositionals: 1,
    options: { file: policyFile, output },
    details:
      "Validated like create. Queues that attach the policy use the new rules from their next decision.",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  "retry-policy get": {
    summary: "show a retry policy",
    positionals: "NAME",
    minPositionals: 1,
    maxPositionals: 1,
    options: { output: documentOutput },
    details:
      "example: cairn retry-policy get infra -o yaml > infra.yaml  (edit, then `retry-policy update -f`)",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
    outputs: ["text", "json", "yaml"],
  },
  "retry-policy delete": {
    summary: "delete a retry policy no queue attaches",
    positionals: "NAME",
    minPositionals: 1,
    maxPositionals: 1,
    options: { output },
    details:
      "A policy a queue attaches is refused (exit 2), naming the queues: detach it with `cairn queue update`.",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  "retry-policy list": {
    summary: "list retry policies by name",
    positionals: "",
    minPositionals: 0,
    maxPositionals: 0,
    options: { output },
    details: "",
    exitCodes: [ExitCode.Usage, ExitCode.Unreachable],
  },
  "queue create": {
    summary: "create a queue: a priority and the retry policies its sessions get",
    positionals: "NAME",
    minPositionals: 1,
    maxPositionals: 1,
    options: queueOptions,
    details:
      "Every policy named must exist (create it first with `cairn retry-policy create`).\n\n" +
      "example: cairn queue create gpu --priority 10 --retry-policy infra,ml-training",
    exitCodes: [ExitCode.Usage, ExitCode.Unreachable],
  },
  "queue update": {
    summary: "change a queue's priority or retry policies (what is not given is kept)",
    positionals: "NAME",
    minPositionals: 1,
    maxPositionals: 1,
    options: queueOptions,
    details: 'example: cairn queue update gpu --retry-policy ""   (detach every policy)',
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  "queue get": {
    summary: "show a queue",
    positionals: "NAME",
    minPositionals: 1,
    maxPositionals: 1,
    options: { output },
    details: "",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  "queue delete": {
    summary: "delete a queue (its policies stay)",
    positionals: "NAME",
    minPositionals: 1,
    maxPositionals: 1,
    options: { output },
    details: "",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
  "queue list": {
    summary: "list queues by name",
    positionals: "",
    minPositionals: 0,
    maxPositionals: 0,
    options: { output },
    details: "",
    exitCodes: [ExitCode.Usage, ExitCode.Unreachable],
  },
  "retry-config get": {
    summary: "show the global retry settings (the defaults until set)",
    positionals: "",
    minPositionals: 0,
    maxPositionals: 0,
    options: { output },
    details: "",
    exitCodes: [ExitCode.Usage, ExitCode.Unreachable],
  },
  "retry-config set": {
    summary: "change global retry settings (what is not given is kept)",
    positionals: "",
    minPositionals: 0,
    maxPositionals: 0,
    options: {
      "global-max-retries": {
        type: "string",
        value: "N",
        description: "cap on a session's counted retries under policies (0 stops every retry)",
      },
      "default-policy": {
        type: "string",
        value: "NAME",
        description: "the policy for sessions whose queue and spec name none (used if it exists)",
      },
      enabled: {
        type: "string",
        value: "true|false",
        description: "false: policies are ignored and the spec's retry budgets decide alone",
      },
      "default-backoff-initial": {
        type: "string",
        value: "DURATION",
        description: "the first retry's wait when no policy sets one (e.g. 0s, 10s)",
      },
      "default-backoff-max": {
        type: "string",
        value: "DURATION",
        description: "the longest wait (e.g. 10m)",
      },
      "default-backoff-multiplier": {
        type: "string",
        value: "X",
        description: "each retry waits X times the previous one (1 to 100)",
      },
      output,
    },
    details:
      "Validated before anything is stored; every problem is printed as `<field> (--flag): <reason>`.\n\n" +
      "example: cairn retry-config set --global-max-retries 5 --default-backoff-initial 10s",
    exitCodes: [ExitCode.Usage, ExitCode.Unreachable],
  },
  agent: {
    summary: "run an agent on this host: kernels of Cairn's sessions run here as child processes",
    positionals: "",
    minPositionals: 0,
    maxPositionals: 0,
    options: {
      id: {
        type: "string",
        value: "ID",
        description: "the agent's id (1-40 of letters, digits, '-', '_'; default: this host's name)",
      },
      cpu: { type: "string", value: "N", description: "cpu it offers (default: this host's cpu count)" },
      "memory-mib": {
        type: "string",
        value: "N",
        description: "memory it offers, in MiB (default: 90% of this host's memory)",
      },
      labels: {
        type: "string",
        value: "K=V,...",
        description: "labels a spec's nodeSelector can ask for (e.g. gpu=a100,zone=b)",
      },
      "work-root": {
        type: "string",
        value: "DIR",
        description: "where kernels' work directories go (default: ./cairn-work)",
      },
      "heartbeat-seconds": {
        type: "string",
        value: "N",
        description: "how often it tells Cairn it is alive (default 5)",
      },
      "drain-grace-seconds": {
        type: "string",
        value: "N",
        description: "on SIGTERM/SIGINT, how long each kernel gets between SIGTERM and SIGKILL (default 10)",
      },
    },
    details:
      "Runs until SIGTERM or SIGINT, then drains: takes no more work, stops its kernels (each is retried\n" +
      "elsewhere under the preemption budget), reports how each ended, and exits. Talks to Cairn only\n" +
      "through AWS APIs: commands from its own SQS queue, reports and heartbeats on the event bus (needs\n" +
      "the stack's AgentPolicy; see docs/agents.md).\n\n" +
      "examples:\n" +
      "  cairn agent --stack Cairn --labels gpu=a100\n" +
      "  cairn agent --id agent-9 --cpu 2 --memory-mib 2048   # against the local runtime (npm start)",
    exitCodes: [ExitCode.SessionDidNotSucceed, ExitCode.Usage, ExitCode.Unreachable],
    outputs: ["text"],
  },
} as const satisfies Record<string, CommandDef>;

export type CommandName = keyof typeof COMMANDS;
export const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];

export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(COMMANDS, name);
}

/** Commands written as two words, `cairn <group> <action>`: the group's name and summary. */
export const COMMAND_GROUPS = {
  job: "show a job of many tasks (see also `cairn tasks`, `cairn task`, `cairn logs`)",
  "retry-policy": "create, update, get, delete and list retry policies",
  queue: "create, update, get, delete and list queues",
  "retry-config": "get and set the global retry settings",
} as const;

export type GroupName = keyof typeof COMMAND_GROUPS;

export function isGroupName(name: string): name is GroupName {
  return Object.hasOwn(COMMAND_GROUPS, name);
}

/** The actions of a group, in table order: `create`, `update`, … */
export function groupActions(group: GroupName): string[] {
  return COMMAND_NAMES.filter((name) => name.startsWith(`${group} `)).map((name) =>
    name.slice(group.length + 1),
  );
}

export function outputsOf(command: CommandName): readonly OutputFormat[] {
  const def: CommandDef = COMMANDS[command];
  return def.outputs ?? ["text", "json"];
}
