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
}

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
      output,
    },
    details:
      "The spec is validated locally first: an invalid spec prints every problem and sends nothing.\n" +
      'Prints the session id (JSON: {"sessionId": ...}); with --wait, the final session as `cairn get` shows it.\n\n' +
      "examples:\n" +
      "  cairn submit -f examples/hello.yaml --wait\n" +
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
    summary: "ask Cairn to cancel a session",
    positionals: "SESSION_ID",
    minPositionals: 1,
    maxPositionals: 1,
    options: {
      reason: { type: "string", value: "TEXT", description: "why (recorded with the request)" },
      output,
    },
    details:
      "A session that has not started its command ends CANCELLED; a running one is stopped and ends\n" +
      "TERMINATED with result cancelled. Follow it with `cairn get SESSION_ID`.",
    exitCodes: [ExitCode.Usage, ExitCode.NotFound, ExitCode.Unreachable],
  },
} as const satisfies Record<string, CommandDef>;

export type CommandName = keyof typeof COMMANDS;
export const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];

export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(COMMANDS, name);
}
