/**
 * Command-line parsing: argv in, a typed invocation out, or a UsageError naming the offending
 * argument. Pure (no I/O). `node:util` parseArgs tokenises; the checks are ours, so every
 * message names the flag and the command's help.
 */
import { AGENT_ID_PATTERN, labelsSchema } from "../../functions/core/event-fields.ts";
import { safeParseWithIssues } from "../../functions/core/spec.ts";
import { parseArgs } from "node:util";
import { MAX_MESSAGE_LENGTH, SESSION_ID_PATTERN } from "../../functions/core/events.ts";
import { NAME_PATTERN, SPEC_LIMITS } from "../../functions/core/spec.ts";
import { SESSION_STATUSES, type SessionStatus } from "../../functions/core/status.ts";
import {
  COMMAND_NAMES,
  COMMANDS,
  DEFAULT_LIST_LIMIT,
  GLOBAL_OPTIONS,
  groupActions,
  isCommandName,
  isGroupName,
  MAX_LIST_LIMIT,
  outputsOf,
  type CommandName,
  type GroupName,
  type OptionTable,
  type OutputFormat,
} from "./command-table.ts";
import { UsageError } from "./errors.ts";

export type { OutputFormat } from "./command-table.ts";

/** Where Cairn is: the local runtime file, or a stack and/or endpoint. */
export interface TargetOptions {
  /** Set only when --runtime-file was given. */
  readonly runtimeFile?: string;
  readonly stack?: string;
  readonly endpoint?: string;
  readonly region?: string;
}

interface Common {
  readonly target: TargetOptions;
  readonly output: OutputFormat;
}

/** `retry-config set` flags, as given (validated with the stored configuration they change). */
export interface RetryConfigChanges {
  readonly enabled?: boolean;
  readonly globalMaxRetries?: number;
  readonly defaultPolicyName?: string;
  readonly initialDelay?: string;
  readonly maxDelay?: string;
  readonly multiplier?: number;
}

export type Invocation =
  /** `command` and `group` undefined: the CLI's own help. */
  | { readonly kind: "help"; readonly command?: CommandName; readonly group?: GroupName }
  | (Common & {
      readonly kind: "submit";
      /** A path, or `-` for stdin. */
      readonly file: string;
      readonly sessionId?: string;
      readonly wait: boolean;
      readonly timeoutSeconds?: number;
      readonly streamLogs: boolean;
    })
  | (Common & { readonly kind: "get"; readonly sessionId: string })
  | (Common & { readonly kind: "history"; readonly sessionId: string })
  | (Common & { readonly kind: "list"; readonly status?: SessionStatus; readonly limit: number })
  | (Common & { readonly kind: "cancel"; readonly sessionId: string; readonly reason?: string })
  | (Common & { readonly kind: "job get" | "tasks"; readonly jobId: string })
  | (Common & { readonly kind: "task"; readonly jobId: string; readonly index: number })
  | (Common & {
      readonly kind: "logs";
      readonly jobId: string;
      /** Undefined: every task. */
      readonly task?: number;
      readonly follow: boolean;
    })
  | (Common & {
      readonly kind: "retry-policy create" | "retry-policy update";
      /** A path, or `-` for stdin. */
      readonly file: string;
    })
  | (Common & {
      readonly kind: "retry-policy get" | "retry-policy delete" | "queue get" | "queue delete";
      readonly name: string;
    })
  | (Common & { readonly kind: "retry-policy list" | "queue list" | "retry-config get" })
  | (Common & {
      readonly kind: "queue create" | "queue update";
      readonly name: string;
      readonly priority?: number;
      readonly retryPolicies?: readonly string[];
    })
  | (Common & { readonly kind: "retry-config set"; readonly changes: RetryConfigChanges })
  | (Common & { readonly kind: "agent"; readonly agent: AgentOptions });

/** `cairn agent`'s flags; absent ones take the host's defaults (commands/agent.ts). */
export interface AgentOptions {
  readonly id?: string;
  readonly cpu?: number;
  readonly memoryMiB?: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly workRoot?: string;
  readonly heartbeatMs?: number;
  readonly drainGraceMs?: number;
}

type Values = Readonly<Record<string, string | true | undefined>>;

export function parseCommandLine(argv: readonly string[]): Invocation {
  const at = commandIndex(argv);
  const first = at === undefined ? undefined : argv[at];
  if (first === undefined || at === undefined) {
    const { values } = readOptions([...argv], GLOBAL_OPTIONS, undefined);
    if (values["help"] === true) return { kind: "help" };
    throw new UsageError(`missing command (expected one of ${TOP_LEVEL.join(", ")})`);
  }
  if (first === "help") return helpTopic(argv.slice(at + 1));
  let command: CommandName;
  let rest: string[];
  if (isGroupName(first)) {
    // `cairn retry-policy create …`: the action is the next word that is not an option.
    const after = argv.slice(at + 1);
    const actionAt = commandIndex(after);
    const action = actionAt === undefined ? undefined : after[actionAt];
    const others = [...argv.slice(0, at), ...after.filter((_, i) => i !== actionAt)];
    if (action === undefined || actionAt === undefined) {
      if (
        readOptions(others, { ...GLOBAL_OPTIONS, ...groupOptions(first) }, undefined).values["help"] === true
      ) {
        return { kind: "help", group: first };
      }
      throw missingAction(first);
    }
    const name = `${first} ${action}`;
    if (!isCommandName(name)) throw missingAction(first, action);
    command = name;
    rest = others;
  } else {
    if (!isCommandName(first)) throw unknownCommand(first);
    command = first;
    rest = [...argv.slice(0, at), ...argv.slice(at + 1)];
  }
  const def = COMMANDS[command];
  const { values, positionals } = readOptions(rest, { ...GLOBAL_OPTIONS, ...def.options }, command);
  if (values["help"] === true) return { kind: "help", command };
  if (positionals.length < def.minPositionals) {
    throw new UsageError(`missing ${def.positionals}`, command);
  }
  if (positionals.length > def.maxPositionals) {
    const extra = positionals[def.maxPositionals] ?? "";
    throw new UsageError(`unexpected argument "${extra}"`, command);
  }
  const common: Common = { target: targetOptions(values, command), output: outputFormat(values, command) };
  switch (command) {
    case "retry-policy create":
    case "retry-policy update":
      return { ...common, kind: command, file: fileArgument(values, positionals, command, "the policy") };
    case "retry-policy get":
    case "retry-policy delete":
      return { ...common, kind: command, name: nameArgument(positionals[0], "NAME", command) };
    case "queue get":
    case "queue delete":
      return { ...common, kind: command, name: nameArgument(positionals[0], "NAME", command) };
    case "retry-policy list":
    case "queue list":
    case "retry-config get":
      return { ...common, kind: command };
    case "queue create":
    case "queue update":
      return queueInvocation(common, command, values, positionals);
    case "retry-config set":
      return { ...common, kind: command, changes: retryConfigChanges(values) };
    case "submit":
      return submitInvocation(common, values, positionals);
    case "get":
    case "history":
      return { ...common, kind: command, sessionId: sessionIdArgument(positionals[0], command) };
    case "list":
      return {
        ...common,
        kind: "list",
        ...optional("status", statusOption(values["status"])),
        limit: limitOption(values["limit"]),
      };
    case "cancel":
      return {
        ...common,
        kind: "cancel",
        sessionId: sessionIdArgument(positionals[0], command),
        ...optional("reason", reasonOption(values["reason"])),
      };
    case "job get":
    case "tasks":
      return { ...common, kind: command, jobId: jobIdArgument(positionals[0], command) };
    case "task":
      return {
        ...common,
        kind: "task",
        jobId: jobIdArgument(positionals[0], command),
        index: taskIndexValue("INDEX", positionals[1] ?? "", command),
      };
    case "agent":
      return { ...common, kind: "agent", agent: agentOptions(values) };
    case "logs": {
      const task = stringValue(values, "task");
      return {
        ...common,
        kind: "logs",
        jobId: jobIdArgument(positionals[0], command),
        ...optional("task", task === undefined ? undefined : taskIndexValue("--task", task, command)),
        follow: values["follow"] === true,
      };
    }
  }
}

function submitInvocation(common: Common, values: Values, positionals: readonly string[]): Invocation {
  const file = fileArgument(values, positionals, "submit", "the spec");
  const wait = values["wait"] === true;
  const rawTimeout = stringValue(values, "timeout");
  if (rawTimeout !== undefined && !wait) {
    throw new UsageError("--timeout only applies with --wait", "submit");
  }
  const streamLogs = values["stream-logs"] === true;
  if (streamLogs && !wait) throw new UsageError("--stream-logs only applies with --wait", "submit");
  if (streamLogs && common.output === "json") {
    throw new UsageError(
      "--stream-logs prints the tasks' output on stdout, which -o json keeps for one JSON document; " +
        "leave one of them out (`cairn logs JOB_ID -o json` gives the output as JSON Lines)",
      "submit",
    );
  }
  const id = stringValue(values, "id");
  return {
    ...common,
    kind: "submit",
    file,
    wait,
    streamLogs,
    ...optional("sessionId", id === undefined ? undefined : sessionIdValue("--id", id, "submit")),
    ...optional("timeoutSeconds", rawTimeout === undefined ? undefined : timeoutOption(rawTimeout)),
  };
}

/** A file given as FILE or -f FILE, not both. */
function fileArgument(
  values: Values,
  positionals: readonly string[],
  command: CommandName,
  what: string,
): string {
  const flag = stringValue(values, "file");
  const positional = positionals[0];
  if (flag !== undefined && positional !== undefined) {
    throw new UsageError(
      `give ${what} once: either FILE or -f, not both ("${positional}", "${flag}")`,
      command,
    );
  }
  const file = flag ?? positional;
  if (file === undefined) throw new UsageError(`missing ${what}: -f FILE`, command);
  return file;
}

function queueInvocation(
  common: Common,
  command: "queue create" | "queue update",
  values: Values,
  positionals: readonly string[],
): Invocation {
  const name = nameArgument(positionals[0], "NAME", command);
  const priority = priorityOption(stringValue(values, "priority"), command);
  const policies = stringValue(values, "retry-policy");
  const retryPolicies = policies === undefined ? undefined : policyList(policies, command);
  if (command === "queue update" && priority === undefined && retryPolicies === undefined) {
    throw new UsageError("nothing to change: give --priority and/or --retry-policy", command);
  }
  return {
    ...common,
    kind: command,
    name,
    ...optional("priority", priority),
    ...optional("retryPolicies", retryPolicies),
  };
}

function retryConfigChanges(values: Values): RetryConfigChanges {
  const command = "retry-config set";
  const enabled = stringValue(values, "enabled");
  if (enabled !== undefined && enabled !== "true" && enabled !== "false") {
    throw new UsageError(`--enabled must be true or false, got "${enabled}"`, command);
  }
  const maxRetries = stringValue(values, "global-max-retries");
  if (maxRetries !== undefined && !/^\d+$/.test(maxRetries)) {
    throw new UsageError(`--global-max-retries must be a whole number, got "${maxRetries}"`, command);
  }
  const defaultPolicy = stringValue(values, "default-policy");
  if (defaultPolicy !== undefined) nameArgument(defaultPolicy, "--default-policy", command);
  const multiplier = stringValue(values, "default-backoff-multiplier");
  if (multiplier !== undefined && (multiplier.trim() === "" || !Number.isFinite(Number(multiplier)))) {
    throw new UsageError(`--default-backoff-multiplier must be a number, got "${multiplier}"`, command);
  }
  const changes: RetryConfigChanges = {
    ...optional("enabled", enabled === undefined ? undefined : enabled === "true"),
    ...optional("globalMaxRetries", maxRetries === undefined ? undefined : Number(maxRetries)),
    ...optional("defaultPolicyName", defaultPolicy),
    ...optional("initialDelay", stringValue(values, "default-backoff-initial")),
    ...optional("maxDelay", stringValue(values, "default-backoff-max")),
    ...optional("multiplier", multiplier === undefined ? undefined : Number(multiplier)),
  };
  if (Object.keys(changes).length === 0) {
    throw new UsageError("nothing to change: give at least one setting (see the options)", command);
  }
  return changes;
}

// ---------------------------------------------------------------------------------------------
// Tokens: parseArgs in non-strict mode, then our own checks (so each message names the flag).

function readOptions(
  args: string[],
  table: OptionTable,
  command: CommandName | undefined,
): { values: Values; positionals: string[] } {
  const { tokens } = parseArgs({
    args,
    options: Object.fromEntries(
      Object.entries(table).map(([name, def]) => [
        name,
        def.short === undefined ? { type: def.type } : { type: def.type, short: def.short },
      ]),
    ),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: Record<string, string | true> = {};
  const positionals: string[] = [];
  // --help wins over any other problem on the line.
  if (tokens.some((t) => t.kind === "option" && t.name === "help"))
    return { values: { help: true }, positionals };
  for (const token of tokens) {
    if (token.kind === "positional") {
      positionals.push(token.value);
      continue;
    }
    if (token.kind !== "option") continue;
    const def = Object.hasOwn(table, token.name) ? table[token.name] : undefined;
    const flag = `--${token.name}`;
    if (def === undefined) throw new UsageError(`unknown option ${token.rawName}`, command);
    if (def.type === "boolean") {
      if (token.value !== undefined) throw new UsageError(`option ${flag} takes no value`, command);
      values[token.name] = true;
      continue;
    }
    if (token.value === undefined) {
      throw new UsageError(`option ${flag} needs a value (${flag} ${def.value ?? "VALUE"})`, command);
    }
    // Non-strict parseArgs takes the next argument whatever it is: `--id --wait` is a mistake.
    if (!token.inlineValue && token.value.startsWith("-") && token.value !== "-") {
      throw new UsageError(
        `option ${flag} needs a value, got "${token.value}" (write ${flag}=${token.value} if that is the value)`,
        command,
      );
    }
    if (values[token.name] !== undefined)
      throw new UsageError(`option ${flag} given more than once`, command);
    values[token.name] = token.value;
  }
  return { values, positionals };
}

/**
 * Flags that take a value, in any table: `cairn -o json get x` must find `get`, not `json`.
 * Whether the flag is allowed for the command is checked once the command is known.
 */
const VALUE_FLAGS: ReadonlySet<string> = new Set(
  [GLOBAL_OPTIONS, ...Object.values(COMMANDS).map((c) => c.options)].flatMap((table: OptionTable) =>
    Object.entries(table).flatMap(([name, def]) =>
      def.type !== "string" ? [] : [`--${name}`, ...(def.short === undefined ? [] : [`-${def.short}`])],
    ),
  ),
);

/** The first argument that is neither an option nor an option's value. */
function commandIndex(argv: readonly string[]): number | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--") return undefined;
    if (arg.startsWith("-") && arg.length > 1) {
      if (VALUE_FLAGS.has(arg)) i++;
      continue;
    }
    return i;
  }
  return undefined;
}

/** What `cairn <command>` accepts as its first word: single commands and groups. */
const TOP_LEVEL: readonly string[] = [...new Set(COMMAND_NAMES.map((name) => name.split(" ")[0] ?? name))];

function unknownCommand(name: string): UsageError {
  return new UsageError(`unknown command "${name}" (expected one of ${TOP_LEVEL.join(", ")})`);
}

function missingAction(group: GroupName, action?: string): UsageError {
  const expected = `expected one of ${groupActions(group).join(", ")}`;
  return new UsageError(
    action === undefined
      ? `missing what to do with ${group} (${expected})`
      : `unknown ${group} command "${action}" (${expected})`,
    group,
  );
}

/** The options any action of the group takes, so `cairn queue --priority 3 --help` is help. */
function groupOptions(group: GroupName): OptionTable {
  return Object.assign(
    {},
    ...groupActions(group).map((action) => COMMANDS[`${group} ${action}` as CommandName].options),
  ) as OptionTable;
}

/** `cairn help`, `cairn help get`, `cairn help queue`, `cairn help queue create`. */
function helpTopic(words: readonly string[]): Invocation {
  const [topic, action] = words;
  if (topic === undefined) return { kind: "help" };
  if (isGroupName(topic)) {
    if (action === undefined) return { kind: "help", group: topic };
    const name = `${topic} ${action}`;
    if (!isCommandName(name)) throw missingAction(topic, action);
    return { kind: "help", command: name };
  }
  if (!isCommandName(topic)) throw unknownCommand(topic);
  return { kind: "help", command: topic };
}

// ---------------------------------------------------------------------------------------------
// Values.

function stringValue(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
}

function targetOptions(values: Values, command: CommandName): TargetOptions {
  const runtimeFile = stringValue(values, "runtime-file");
  const stack = stringValue(values, "stack");
  const endpoint = stringValue(values, "endpoint");
  const region = stringValue(values, "region");
  if (runtimeFile !== undefined && (stack !== undefined || endpoint !== undefined)) {
    throw new UsageError(
      "--runtime-file is for the local runtime; it cannot be combined with --stack or --endpoint",
      command,
    );
  }
  for (const [flag, value] of [
    ["--runtime-file", runtimeFile],
    ["--stack", stack],
    ["--region", region],
  ] as const) {
    if (value !== undefined && value.trim() === "")
      throw new UsageError(`${flag} must not be empty`, command);
  }
  if (endpoint !== undefined && !isHttpUrl(endpoint)) {
    throw new UsageError(`--endpoint must be an http(s) URL, got "${endpoint}"`, command);
  }
  return {
    ...optional("runtimeFile", runtimeFile),
    ...optional("stack", stack),
    ...optional("endpoint", endpoint),
    ...optional("region", region),
  };
}

function isHttpUrl(text: string): boolean {
  const url = URL.parse(text);
  return url !== null && (url.protocol === "http:" || url.protocol === "https:");
}

function outputFormat(values: Values, command: CommandName): OutputFormat {
  const raw = stringValue(values, "output");
  if (raw === undefined) return "text";
  const allowed = outputsOf(command);
  const format = allowed.find((f) => f === raw);
  if (format !== undefined) return format;
  const list =
    allowed.length === 2 ? allowed.join(" or ") : `${allowed.slice(0, -1).join(", ")} or ${allowed.at(-1)}`;
  throw new UsageError(`--output must be ${list}, got "${raw}"`, command);
}

/** A policy or queue name: the same rule as a spec's name. */
function nameArgument(raw: string | undefined, what: string, command: CommandName): string {
  const name = raw ?? "";
  if (name.length === 0 || name.length > SPEC_LIMITS.nameMaxLength || !NAME_PATTERN.test(name)) {
    throw new UsageError(
      `${what} "${name}" is not a valid name: 1 to ${SPEC_LIMITS.nameMaxLength} letters, digits, '.', '_' or '-', ` +
        "starting with a letter or digit",
      command,
    );
  }
  return name;
}

function priorityOption(raw: string | undefined, command: CommandName): number | undefined {
  if (raw === undefined) return undefined;
  const { min, max } = SPEC_LIMITS.priority;
  const value = Number(raw);
  if (!/^[-+]?\d+$/.test(raw) || value < min || value > max) {
    throw new UsageError(`--priority must be a whole number from ${min} to ${max}, got "${raw}"`, command);
  }
  return value;
}

/** `a,b` → ["a", "b"]; "" → [] (no policies). */
function policyList(raw: string, command: CommandName): string[] {
  const names = raw
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  const seen = new Set<string>();
  for (const name of names) {
    nameArgument(name, "--retry-policy", command);
    if (seen.has(name)) throw new UsageError(`--retry-policy lists ${name} twice`, command);
    seen.add(name);
  }
  return names;
}

function sessionIdArgument(raw: string | undefined, command: CommandName): string {
  // Presence is checked against the command's positional count before this runs.
  return sessionIdValue("SESSION_ID", raw ?? "", command);
}

function sessionIdValue(what: string, raw: string, command: CommandName, noun = "session"): string {
  if (!SESSION_ID_PATTERN.test(raw)) {
    throw new UsageError(
      `${what} "${raw}" is not a ${noun} id: 3 to 63 lowercase letters, digits or '-', ` +
        "starting with a letter or digit",
      command,
    );
  }
  return raw;
}

/** Job ids are session ids: the job's id is its submission's `sessionId`. */
function jobIdArgument(raw: string | undefined, command: CommandName): string {
  return sessionIdValue("JOB_ID", raw ?? "", command, "job");
}

/** A task's index in its job: 0 to replicas - 1 (checked against the job once it is read). */
function taskIndexValue(what: string, raw: string, command: CommandName): number {
  const max = SPEC_LIMITS.replicas.max - 1;
  const index = Number(raw);
  if (!/^\d+$/.test(raw) || index > max) {
    throw new UsageError(
      `${what} must be a task index, a whole number from 0 to ${max}, got "${raw}"`,
      command,
    );
  }
  return index;
}

function timeoutOption(raw: string): number {
  const seconds = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(seconds) || seconds <= 0) {
    throw new UsageError(`--timeout must be a positive number of seconds, got "${raw}"`, "submit");
  }
  return seconds;
}

function statusOption(raw: string | true | undefined): SessionStatus | undefined {
  if (typeof raw !== "string") return undefined;
  const status = SESSION_STATUSES.find((s) => s === raw.toUpperCase());
  if (status === undefined) {
    throw new UsageError(
      `--status: unknown status "${raw}" (expected one of ${SESSION_STATUSES.join(", ")})`,
      "list",
    );
  }
  return status;
}

function limitOption(raw: string | true | undefined): number {
  if (typeof raw !== "string") return DEFAULT_LIST_LIMIT;
  const limit = Number(raw);
  if (!/^\d+$/.test(raw) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new UsageError(`--limit must be a whole number from 1 to ${MAX_LIST_LIMIT}, got "${raw}"`, "list");
  }
  return limit;
}

function reasonOption(raw: string | true | undefined): string | undefined {
  if (typeof raw !== "string") return undefined;
  if (raw.length > MAX_MESSAGE_LENGTH) {
    throw new UsageError(
      `--reason must be at most ${MAX_MESSAGE_LENGTH} characters, got ${raw.length}`,
      "cancel",
    );
  }
  return raw;
}

/** `{ key: value }` when value is defined, else `{}`: keeps absent options absent. */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function agentOptions(values: Values): AgentOptions {
  const id = stringValue(values, "id");
  if (id !== undefined && !AGENT_ID_PATTERN.test(id)) {
    throw new UsageError(
      `--id must be 1 to 40 letters, digits, '-' or '_', starting with a letter or digit, got "${id}"`,
      "agent",
    );
  }
  const number = (flag: string, integer: boolean, scale = 1): number | undefined => {
    const raw = stringValue(values, flag);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
      throw new UsageError(
        `--${flag} must be a ${integer ? "whole " : ""}number greater than 0, got "${raw}"`,
        "agent",
      );
    }
    return value * scale;
  };
  const workRoot = stringValue(values, "work-root");
  return {
    ...optional("id", id),
    ...optional("cpu", number("cpu", false)),
    ...optional("memoryMiB", number("memory-mib", true)),
    labels: labelsOption(stringValue(values, "labels")),
    ...optional("workRoot", workRoot),
    ...optional("heartbeatMs", number("heartbeat-seconds", false, 1000)),
    ...optional("drainGraceMs", number("drain-grace-seconds", false, 1000)),
  };
}

/** `k=v,k2=v2` → a label map; every pair checked as the agent registration checks it. */
function labelsOption(raw: string | undefined): Record<string, string> {
  if (raw === undefined || raw.trim() === "") return {};
  const labels: Record<string, string> = {};
  for (const pair of raw.split(",")) {
    const eq = pair.indexOf("=");
    const key = eq < 0 ? pair : pair.slice(0, eq);
    if (eq < 0) throw new UsageError(`--labels: "${pair}" is not KEY=VALUE`, "agent");
    if (Object.hasOwn(labels, key)) throw new UsageError(`--labels: "${key}" is given twice`, "agent");
    labels[key] = pair.slice(eq + 1);
  }
  const parsed = safeParseWithIssues(labelsSchema, labels);
  if (!parsed.success) {
    throw new UsageError(
      `--labels: ${parsed.issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`,
      "agent",
    );
  }
  return labels;
}
