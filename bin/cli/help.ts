/** Help text, generated from the command table so it lists exactly what the parser accepts. */
import {
  COMMAND_GROUPS,
  COMMAND_NAMES,
  COMMANDS,
  GLOBAL_OPTIONS,
  groupActions,
  type CommandName,
  type GroupName,
  type OptionTable,
} from "./command-table.ts";
import { EXIT_CODE_HELP } from "./exit-codes.ts";

export function mainHelp(): string {
  const width = Math.max(...COMMAND_NAMES.map((n) => n.length));
  return [
    "cairn: submit, follow and cancel Cairn sessions and jobs; read task logs; manage queues and retry policies",
    "",
    "usage: cairn <command> [options]",
    "",
    "commands:",
    ...COMMAND_NAMES.map((name) => `  ${name.padEnd(width)}  ${COMMANDS[name].summary}`),
    "",
    "global options (any command):",
    ...optionLines(GLOBAL_OPTIONS),
    "",
    "where Cairn is: by default the local runtime described by .cairn/runtime.json (`npm start` writes it);",
    "with --stack, a deployed stack (its region from --region or the AWS configuration); with --endpoint,",
    "LocalStack or another endpoint (names from --stack, or CAIRN_TABLE_NAME and CAIRN_EVENT_BUS_NAME).",
    "",
    "exit codes:",
    ...EXIT_CODE_HELP.map(([code, text]) => `  ${String(code).padEnd(3)}  ${text}`),
    "",
    "`cairn <command> --help` shows a command's options.",
  ].join("\n");
}

/** `cairn queue --help`: the group's commands. */
export function groupHelp(group: GroupName): string {
  const actions = groupActions(group);
  const width = Math.max(...actions.map((a) => a.length));
  return [
    `cairn ${group}: ${COMMAND_GROUPS[group]}`,
    "",
    `usage: cairn ${group} <${actions.join("|")}> [options]`,
    "",
    "commands:",
    ...actions.map(
      (action) => `  ${action.padEnd(width)}  ${COMMANDS[`${group} ${action}` as CommandName].summary}`,
    ),
    "",
    `\`cairn ${group} <command> --help\` shows a command's options.`,
  ].join("\n");
}

export function commandHelp(command: CommandName): string {
  const def = COMMANDS[command];
  const usage = ["cairn", command, def.positionals, "[options]"].filter((part) => part !== "").join(" ");
  const codes = new Set<number>([0, ...def.exitCodes]);
  return [
    `cairn ${command}: ${def.summary}`,
    "",
    `usage: ${usage}`,
    "",
    "options:",
    ...optionLines(def.options),
    "",
    "global options:",
    ...optionLines(GLOBAL_OPTIONS),
    ...(def.details === "" ? [] : ["", def.details]),
    "",
    "exit codes:",
    ...EXIT_CODE_HELP.filter(([code]) => codes.has(code)).map(
      ([code, text]) => `  ${String(code).padEnd(3)}  ${text}`,
    ),
  ].join("\n");
}

function optionLines(table: OptionTable): string[] {
  const rows = Object.entries(table).map(([name, def]) => {
    const long = `--${name}${def.value === undefined ? "" : ` ${def.value}`}`;
    return [def.short === undefined ? `    ${long}` : `-${def.short}, ${long}`, def.description] as const;
  });
  const width = Math.max(...rows.map(([flags]) => flags.length));
  return rows.map(([flags, description]) => `  ${flags.padEnd(width)}  ${description}`);
}
