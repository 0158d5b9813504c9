/**
 * Generates the user guide's reference pages from the code, so they cannot drift from it:
 *
 * - docs/reference/spec.md: every field of the documents users write (a session's spec, a job
 *   template, a retry policy, the global retry settings, a deployment's spec), from their zod
 *   schemas (zod's JSON Schema of the input side: what a user may write, with the defaults) and
 *   the doc comments on the schemas' fields;
 * - docs/reference/cli.md: every command of `cairn`, as its `--help` prints it, from the
 *   commander definitions (bin/cli/command-table.ts).
 *
 * `npm run docs:reference` writes them; test/docs-reference.test.ts generates them in memory and
 * fails when a file on disk differs.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import * as prettier from "prettier";
import { z } from "zod";
import { cairnProgram } from "../bin/cli/command-table.ts";
import { DeploymentSpecSchema } from "../functions/core/deployments/spec.ts";
import { RetryConfigSchema } from "../functions/core/retry/config.ts";
import { RetryPolicyDocumentSchema } from "../functions/core/retry/policy.ts";
import { SessionSpecSchema } from "../functions/core/spec.ts";
import { JobTemplateSchema } from "../functions/core/templates.ts";
import { PROJECT_ROOT } from "../lib/functions.ts";
import { schemaComments, type CommentTree } from "./event-schema-comments.ts";

export const SPEC_REFERENCE = "docs/reference/spec.md";
export const CLI_REFERENCE = "docs/reference/cli.md";

type JsonSchema = { readonly [keyword: string]: unknown };

export interface DocumentSchema {
  readonly title: string;
  /** What the document is and where it is used, one paragraph. */
  readonly about: string;
  readonly schema: z.ZodType;
  /** Where the schema is declared, for its doc comments. */
  readonly source: string;
  readonly exportName: string;
}

export const DOCUMENTS: readonly DocumentSchema[] = [
  {
    title: "A session's spec",
    about:
      "What `cairn submit -f FILE` reads and a `Session Submitted` event carries as `spec` (YAML or JSON). " +
      "A spec describes a job of `replicas` tasks; see [concepts.md](../concepts.md#a-sessions-spec) and [jobs.md](../jobs.md).",
    schema: SessionSpecSchema,
    source: "functions/core/spec.ts",
    exportName: "SessionSpecSchema",
  },
  {
    title: "A job template",
    about:
      "What `cairn template create|update -f FILE` reads: defaults and constraints every submission naming the " +
      "template is validated against (HPC Pack's Validating); see [jobs.md](../jobs.md#validating-job-templates-and-the-submission-filter).",
    schema: JobTemplateSchema,
    source: "functions/core/templates.ts",
    exportName: "JobTemplateSchema",
  },
  {
    title: "A retry policy",
    about:
      "What `cairn retry-policy create|update -f FILE` reads: the document shape of Armada's retry-policy proposal; " +
      "see [retries.md](../retries.md).",
    schema: RetryPolicyDocumentSchema,
    source: "functions/core/retry/policy.ts",
    exportName: "RetryPolicyDocumentSchema",
  },
  {
    title: "The global retry settings",
    about: "What `cairn retry-config set` changes: the settings every retry decision reads.",
    schema: RetryConfigSchema,
    source: "functions/core/retry/config.ts",
    exportName: "RetryConfigSchema",
  },
  {
    title: "A deployment's spec",
    about:
      "What `cairn deployment create -f FILE` reads: how many replicas of which service, and how each replica's " +
      "health is checked; see [deployments.md](../deployments.md).",
    schema: DeploymentSpecSchema,
    source: "functions/core/deployments/spec.ts",
    exportName: "DeploymentSpecSchema",
  },
];

export interface FieldRow {
  readonly path: string;
  readonly type: string;
  readonly required: boolean;
  readonly defaultValue: string;
  readonly rules: string;
  readonly description: string;
}

/** Every field of a schema, depth first in declaration order, with its doc comment if any. */
export function fieldRows(schema: z.ZodType, comments: CommentTree): FieldRow[] {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  const rows: FieldRow[] = [];
  walkObject(json, comments, "", rows);
  return rows;
}

function walkObject(json: JsonSchema, comments: CommentTree | undefined, prefix: string, rows: FieldRow[]) {
  const properties = json["properties"] as Record<string, JsonSchema> | undefined;
  if (properties === undefined) return;
  const required = new Set((json["required"] as string[] | undefined) ?? []);
  for (const [name, field] of Object.entries(properties)) {
    const path = prefix === "" ? name : `${prefix}.${name}`;
    const tree = comments?.fields.get(name);
    rows.push({
      path,
      type: typeOf(field),
      required: required.has(name),
      defaultValue: "default" in field ? literal(field["default"]) : "",
      rules: rulesOf(field),
      description: oneLine(descriptionOf(field) ?? tree?.description ?? ""),
    });
    const inner = objectPart(field);
    if (inner !== undefined) walkObject(inner.schema, tree, `${path}${inner.suffix}`, rows);
  }
}

/** The object a field holds (itself, its array's items, or its map's values), if any. */
function objectPart(field: JsonSchema): { schema: JsonSchema; suffix: string } | undefined {
  if (field["properties"] !== undefined) return { schema: field, suffix: "" };
  const items = field["items"] as JsonSchema | undefined;
  if (items?.["properties"] !== undefined) return { schema: items, suffix: "[]" };
  const values = field["additionalProperties"];
  if (typeof values === "object" && values !== null && (values as JsonSchema)["properties"] !== undefined) {
    return { schema: values as JsonSchema, suffix: ".<key>" };
  }
  return undefined;
}

function descriptionOf(field: JsonSchema): string | undefined {
  if (typeof field["description"] === "string") return field["description"];
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const parts = field[key] as JsonSchema[] | undefined;
    const found = parts?.map(descriptionOf).find((d) => d !== undefined);
    if (found !== undefined) return found;
  }
  return undefined;
}

function typeOf(field: JsonSchema): string {
  if ("const" in field) return literal(field["const"]);
  if (Array.isArray(field["enum"])) return (field["enum"] as unknown[]).map(literal).join(" \\| ");
  for (const key of ["anyOf", "oneOf"]) {
    const parts = field[key] as JsonSchema[] | undefined;
    if (parts !== undefined) return [...new Set(parts.map(typeOf))].join(" or ");
  }
  const type = field["type"];
  if (type === "array") {
    const items = field["items"] as JsonSchema | undefined;
    return items === undefined ? "list" : `list of ${typeOf(items)}`;
  }
  if (type === "object") {
    const values = field["additionalProperties"];
    if (field["properties"] === undefined && typeof values === "object" && values !== null) {
      return `map of ${typeOf(values as JsonSchema)}`;
    }
    return "object";
  }
  if (typeof type === "string") return type;
  if (Array.isArray(type)) return type.join(" or ");
  return "any";
}

function rulesOf(field: JsonSchema): string {
  const rules: string[] = [];
  const bound = (key: string, words: string) => {
    const value = field[key];
    if (typeof value === "number" && Math.abs(value) < Number.MAX_SAFE_INTEGER)
      rules.push(`${words} ${value}`);
  };
  bound("exclusiveMinimum", ">");
  bound("minimum", "≥");
  bound("maximum", "≤");
  bound("minLength", "length ≥");
  bound("maxLength", "length ≤");
  bound("minItems", "items ≥");
  bound("maxItems", "items ≤");
  if (typeof field["pattern"] === "string") rules.push(`matches \`${field["pattern"]}\``);
  const keys = field["propertyNames"] as JsonSchema | undefined;
  if (typeof keys?.["pattern"] === "string") rules.push(`keys match \`${keys["pattern"]}\``);
  if (field["additionalProperties"] === false && field["properties"] !== undefined)
    rules.push("no other fields");
  return rules.join(", ");
}

function literal(value: unknown): string {
  return `\`${JSON.stringify(value)}\``;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").replaceAll("|", "\\|").trim();
}

function specReference(root: string): string {
  const parts = [
    "# Spec reference",
    "",
    "<!-- Generated by `npm run docs:reference` from the zod schemas named below; do not edit. -->",
    "",
    "Every field of the documents Cairn reads, generated from the schemas that check them. A field",
    "marked required must be written; the others take the default shown, or are absent. Unknown",
    "fields are refused, and every problem is reported as `<path>: <reason>` before anything is",
    "stored. Rules that span fields (a Fargate spec needs an `image`; `timeouts.running` at most",
    "`timeouts.job`) are checked too, and named in the guide pages each section links to.",
    "",
  ];
  for (const doc of DOCUMENTS) {
    const comments = schemaComments(join(root, doc.source), doc.exportName);
    parts.push(`## ${doc.title}`, "", `${doc.about} Schema: \`${doc.exportName}\` in \`${doc.source}\`.`, "");
    parts.push("| field | type | required | default | rules | what it is |");
    parts.push("| --- | --- | --- | --- | --- | --- |");
    for (const row of fieldRows(doc.schema, comments)) {
      parts.push(
        `| \`${row.path}\` | ${row.type} | ${row.required ? "yes" : ""} | ${row.defaultValue} | ${row.rules} | ${row.description} |`,
      );
    }
    parts.push("");
  }
  return parts.join("\n");
}

/** Every command under `program`, depth first, in the order they were declared. */
function commandsOf(program: Command): Command[] {
  return program.commands.flatMap((c) => [c, ...commandsOf(c)]);
}

function fullName(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c !== null; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/** What `--help` prints for a command, at a fixed width so the page does not depend on the terminal. */
function helpText(command: Command, captured: string[]): string {
  command.configureHelp({ helpWidth: 100 });
  captured.length = 0;
  command.outputHelp();
  return captured.join("").trimEnd();
}

function cliReference(): string {
  const captured: string[] = [];
  const program = cairnProgram(
    (text) => captured.push(text),
    () => undefined,
  );
  const commands = commandsOf(program);
  const parts = [
    "# CLI reference",
    "",
    "<!-- Generated by `npm run docs:reference` from bin/cli/command-table.ts; do not edit. -->",
    "",
    "Every command of `cairn`, as `cairn <command> --help` prints it. [cli.md](../cli.md) is the",
    "guide: where the CLI points, the commands at a glance, exit codes.",
    "",
    ...commands.map((c) => `- [\`${fullName(c)}\`](#${anchor(fullName(c))})`),
    "",
    "## cairn",
    "",
    "```text",
    helpText(program, captured),
    "```",
    "",
  ];
  for (const command of commands) {
    parts.push(`## ${fullName(command)}`, "", "```text", helpText(command, captured), "```", "");
  }
  return parts.join("\n");
}

/** GitHub's heading anchor for a plain heading. */
function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, "")
    .replaceAll(" ", "-");
}

/** Project-relative path → the content the generator would write. */
export async function generateReferences(root = PROJECT_ROOT): Promise<Map<string, string>> {
  const pages = new Map<string, string>([
    [SPEC_REFERENCE, specReference(root)],
    [CLI_REFERENCE, cliReference()],
  ]);
  for (const [path, text] of pages) {
    const options = { ...(await prettier.resolveConfig(join(root, path))), parser: "markdown" };
    pages.set(path, await prettier.format(text, options));
  }
  return pages;
}

/** The generated pages whose file on disk differs from what the code generates now (or is missing). */
export function stalePages(
  generated: ReadonlyMap<string, string>,
  read: (path: string) => string | undefined,
): string[] {
  return [...generated].filter(([path, content]) => read(path) !== content).map(([path]) => path);
}

export function readProjectFile(path: string, root = PROJECT_ROOT): string | undefined {
  try {
    return readFileSync(join(root, path), "utf8");
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const pages = await generateReferences();
  for (const path of stalePages(pages, (p) => readProjectFile(p))) {
    const file = join(PROJECT_ROOT, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, pages.get(path)!);
    console.log(`wrote ${path}`);
  }
}

if (import.meta.main) await main();
