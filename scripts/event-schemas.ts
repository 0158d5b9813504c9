/**
 * Generates Cairn's published event schemas from the contracts in functions/core/events.ts (the
 * detail schemas they name live in session-events.ts, agent-events.ts, deployment-events.ts): one
 * JSON Schema (draft 4, the registry's JSONSchemaDraft4) per detail-type in docs/events/, each the
 * whole EventBridge envelope with `source` and `detail-type` pinned, and the generated part of
 * docs/events.md. `npm run schemas` writes them; test/event-schemas.test.ts regenerates them in
 * memory and fails when the files on disk differ, and lib/event-schemas.ts deploys them.
 *
 * Inbound schemas describe what a producer may send (zod's input side: defaulted fields optional,
 * with their defaults), outbound ones what Cairn sends (the output side). What JSON Schema cannot
 * say (zod refinements: cross-field rules, no NUL characters) Cairn still checks at the edge.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as prettier from "prettier";
import { z } from "zod";
import * as agentEvents from "../functions/core/agent-events.ts";
import * as deploymentEvents from "../functions/core/deployment-events.ts";
import { EVENT_CONTRACTS, type DetailType } from "../functions/core/events.ts";
import * as sessionEvents from "../functions/core/session-events.ts";
import { EVENT_SCHEMAS_DIR, eventSchemaFileName, pascalCase } from "../lib/event-schemas.ts";
import { PROJECT_ROOT } from "../lib/functions.ts";
import { schemaComments, type CommentTree } from "./event-schema-comments.ts";
import { renderEventsDoc, EVENTS_DOC, type EventExamples } from "./event-schema-docs.ts";

export type JsonSchema = { [keyword: string]: unknown };

/** The modules that declare the detail schemas, with their files (for the doc comments). */
const DETAIL_MODULES: readonly { readonly file: string; readonly exports: object }[] = [
  { file: "functions/core/session-events.ts", exports: sessionEvents },
  { file: "functions/core/agent-events.ts", exports: agentEvents },
  { file: "functions/core/deployment-events.ts", exports: deploymentEvents },
];
export const EXAMPLES_FILE = `${EVENT_SCHEMAS_DIR}/examples.json`;
const DRAFT_04 = "http://json-schema.org/draft-04/schema#";

/** The envelope EventBridge delivers to a rule's target, as the registry writes it for AWS events. */
const ENVELOPE_FIELDS: Record<string, JsonSchema> = {
  version: { type: "string", description: 'Envelope version, "0".' },
  id: {
    type: "string",
    description: "Set by EventBridge: unique per event, the key for idempotent consumers.",
  },
  "detail-type": { type: "string" },
  source: { type: "string" },
  account: { type: "string", pattern: "^[0-9]{12}$", description: "The account of the bus." },
  time: {
    type: "string",
    format: "date-time",
    description: "When the event happened: PutEvents' Time, or when EventBridge received it.",
  },
  region: { type: "string" },
  resources: { type: "array", items: { type: "string" } },
  detail: {},
};

export interface ContractRow {
  readonly detailType: DetailType;
  readonly source: string;
  readonly direction: "inbound" | "outbound";
  readonly detail: z.ZodType;
}

/** Every contract, in the table's order: a new row in events.ts is picked up here. */
export function contractRows(): ContractRow[] {
  return (Object.keys(EVENT_CONTRACTS) as DetailType[]).map((detailType) => {
    const { source, direction, detail } = EVENT_CONTRACTS[detailType] as {
      source: string;
      direction: "inbound" | "outbound";
      detail: z.ZodType;
    };
    return { detailType, source, direction, detail };
  });
}

/** The JSON Schema of one event's envelope. Throws naming the event when zod cannot express it. */
export function eventJsonSchema(row: ContractRow, comments: CommentTree): JsonSchema {
  const name = pascalCase(row.detailType);
  let detail: JsonSchema;
  try {
    detail = z.toJSONSchema(row.detail, {
      target: "draft-04",
      io: row.direction === "inbound" ? "input" : "output",
      unrepresentable: "throw",
      override: ({ zodSchema, jsonSchema }) => adaptForDraft04(zodSchema, jsonSchema),
    });
  } catch (error) {
    throw new Error(
      `${row.detailType}: zod cannot express its detail as JSON Schema: ${(error as Error).message}`,
    );
  }
  delete detail["$schema"];
  applyComments(detail, comments);
  const description = detail["description"];
  if (typeof description !== "string") {
    throw new Error(
      `${row.detailType}: no description: add a /** … */ comment (or .describe()) on its detail schema (functions/core/*-events.ts)`,
    );
  }
  return sortKeywords({
    $schema: DRAFT_04,
    id: `urn:cairn:events:${eventSchemaFileName(row.detailType).replace(/\.json$/, "")}`,
    title: name,
    description,
    "x-amazon-events-source": row.source,
    "x-amazon-events-detail-type": row.detailType,
    type: "object",
    required: Object.keys(ENVELOPE_FIELDS),
    properties: {
      ...ENVELOPE_FIELDS,
      "detail-type": { type: "string", enum: [row.detailType] },
      source: { type: "string", enum: [row.source] },
      detail: { $ref: `#/definitions/${name}` },
    },
    definitions: { [name]: detail },
  });
}

/**
 * zod's draft-04 output, adapted: `.readonly()` becomes `readOnly`, which is no draft-04 keyword
 * (and in later drafts means "the producer must not send this"), so it goes; a record's key schema
 * (zod would write `propertyNames`, draft 6) becomes `patternProperties` or fixed `properties`.
 */
function adaptForDraft04(zodSchema: unknown, json: JsonSchema): void {
  delete json["readOnly"];
  const def = (zodSchema as { _zod: { def: { type: string; keyType?: z.ZodType; mode?: string } } })._zod.def;
  if (def.type !== "record" || def.keyType === undefined) return;
  const key = z.toJSONSchema(def.keyType, { target: "draft-04", unrepresentable: "any" }) as JsonSchema;
  const value = json["additionalProperties"];
  // A loose record passes other keys through unchecked.
  const others = def.mode === "loose" ? {} : false;
  if (Array.isArray(key["enum"])) {
    // zod already lists the keys in `required` unless the record is partial.
    json["properties"] = Object.fromEntries((key["enum"] as string[]).map((k) => [k, value]));
    json["additionalProperties"] = others;
  } else if (typeof key["pattern"] === "string") {
    json["patternProperties"] = { [key["pattern"]]: value };
    json["additionalProperties"] = others;
  }
}

/** Descriptions from the source's doc comments where zod carries none; a property's own comment wins. */
function applyComments(schema: JsonSchema, comments: CommentTree, own = true): void {
  if (comments.description !== undefined && (own || schema["description"] === undefined)) {
    schema["description"] = comments.description;
  }
  const properties = schema["properties"] as Record<string, JsonSchema> | undefined;
  if (properties === undefined) return;
  for (const [field, tree] of comments.fields) {
    const property = properties[field];
    if (property !== undefined) applyComments(property, tree);
  }
}

/** Keywords in a fixed reading order, then alphabetical; maps of names keep declaration order. */
const KEYWORD_ORDER = [
  "$schema",
  "id",
  "title",
  "description",
  "x-amazon-events-source",
  "x-amazon-events-detail-type",
  "type",
  "enum",
  "format",
  "pattern",
  "minLength",
  "maxLength",
  "minimum",
  "exclusiveMinimum",
  "maximum",
  "exclusiveMaximum",
  "minItems",
  "maxItems",
  "default",
  "required",
  "properties",
  "patternProperties",
  "additionalProperties",
  "items",
  "definitions",
];
const NAME_MAPS = new Set(["properties", "patternProperties", "definitions"]);

function sortKeywords(schema: JsonSchema): JsonSchema {
  const rank = (k: string) => (KEYWORD_ORDER.includes(k) ? KEYWORD_ORDER.indexOf(k) : KEYWORD_ORDER.length);
  const keys = Object.keys(schema).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(
    keys.map((k) => {
      const value = schema[k];
      if (NAME_MAPS.has(k) && isObject(value)) {
        return [k, Object.fromEntries(Object.entries(value).map(([n, s]) => [n, sortDeep(s)]))];
      }
      return [k, sortDeep(value)];
    }),
  );
}

function sortDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortDeep);
  return isObject(value) ? sortKeywords(value) : value;
}

function isObject(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Where a contract's detail schema is declared: its file and export name (so its comments can be found). */
function declarationOf(detail: z.ZodType, detailType: string): { file: string; exportName: string } {
  for (const { file, exports } of DETAIL_MODULES) {
    const found = Object.entries(exports).find(([, value]) => value === detail);
    if (found !== undefined) return { file, exportName: found[0] };
  }
  throw new Error(
    `${detailType}: its detail schema is not exported from ${DETAIL_MODULES.map((m) => m.file).join(", ")}; export it there (or add its module to DETAIL_MODULES)`,
  );
}

export interface GeneratedSchemas {
  /** Project-relative path → content, every file the generator owns. */
  readonly files: ReadonlyMap<string, string>;
  /** The parsed schemas, by detail-type. */
  readonly schemas: ReadonlyMap<DetailType, JsonSchema>;
}

/** Everything `npm run schemas` writes, in memory. */
export async function generateEventSchemas(root = PROJECT_ROOT): Promise<GeneratedSchemas> {
  const files = new Map<string, string>();
  const schemas = new Map<DetailType, JsonSchema>();
  const rows = contractRows();
  for (const row of rows) {
    const { file, exportName } = declarationOf(row.detail, row.detailType);
    const comments = schemaComments(join(root, file), exportName);
    const schema = eventJsonSchema(row, comments);
    schemas.set(row.detailType, schema);
    files.set(`${EVENT_SCHEMAS_DIR}/${eventSchemaFileName(row.detailType)}`, await formatJson(schema));
  }
  const examples = JSON.parse(readFileSync(join(root, EXAMPLES_FILE), "utf8")) as EventExamples;
  const doc = readFileSync(join(root, EVENTS_DOC), "utf8");
  const rendered = renderEventsDoc(doc, rows, schemas, examples);
  files.set(
    EVENTS_DOC,
    await prettier.format(rendered, await prettierOptions(join(root, EVENTS_DOC), "markdown")),
  );
  return { files, schemas };
}

async function formatJson(value: unknown): Promise<string> {
  return prettier.format(
    JSON.stringify(value),
    await prettierOptions(join(PROJECT_ROOT, EXAMPLES_FILE), "json"),
  );
}

async function prettierOptions(file: string, parser: string): Promise<prettier.Options> {
  return { ...(await prettier.resolveConfig(file)), parser };
}

/** Generated schema files on disk that no contract produces any more (a removed detail-type). */
export function orphanSchemaFiles(generated: ReadonlyMap<string, string>, root = PROJECT_ROOT): string[] {
  return readdirSync(join(root, EVENT_SCHEMAS_DIR))
    .map((name) => `${EVENT_SCHEMAS_DIR}/${name}`)
    .filter((path) => path.endsWith(".json") && path !== EXAMPLES_FILE && !generated.has(path));
}

async function main(): Promise<void> {
  const { files } = await generateEventSchemas();
  let changed = 0;
  for (const [path, content] of files) {
    const file = join(PROJECT_ROOT, path);
    let current: string | undefined;
    try {
      current = readFileSync(file, "utf8");
    } catch {
      current = undefined;
    }
    if (current === content) continue;
    writeFileSync(file, content);
    changed++;
    console.log(`wrote ${path}`);
  }
  for (const orphan of orphanSchemaFiles(files)) {
    rmSync(join(PROJECT_ROOT, orphan));
    changed++;
    console.log(`removed ${orphan} (no contract has its detail-type)`);
  }
  console.log(
    changed === 0 ? `${files.size} files, all current` : `${changed} of ${files.size} files changed`,
  );
}

if (import.meta.main) {
  try {
    await main();
  } catch (error) {
    console.error(`npm run schemas: ${(error as Error).message}`);
    process.exitCode = 1;
  }
}
