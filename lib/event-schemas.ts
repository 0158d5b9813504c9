/**
 * Cairn's event contracts in the account's EventBridge schema registry: one registry named after
 * the stack, one JSON Schema (draft 4) per detail-type, read at synth from the files that
 * `npm run schemas` generates from functions/core/events.ts (docs/events/<kebab-name>.json). The
 * console then lists every event Cairn receives or emits and offers code bindings for it.
 *
 * Schema names follow the registry's own convention for discovered and AWS events,
 * `<source>@<DetailTypeInPascalCase>` (as in `aws.ec2@EC2InstanceStateChangeNotification`).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Stack } from "aws-cdk-lib";
import * as eventschemas from "aws-cdk-lib/aws-eventschemas";
import { Construct } from "constructs";
import { EVENT_CONTRACTS, type DetailType } from "../functions/core/events.ts";
import { CairnDeploymentError, CairnPropsError } from "./errors.ts";
import { PROJECT_ROOT } from "./functions.ts";

/** Where the generated schemas live, relative to the project root. */
export const EVENT_SCHEMAS_DIR = "docs/events";
/** The registry's name for JSON Schema draft 4 content (the other is OpenApi3). */
export const EVENT_SCHEMA_TYPE = "JSONSchemaDraft4";
/** CreateSchema's limits (EventBridge Schemas API: Content 1–100,000 characters, Description ≤ 256). */
export const SCHEMA_LIMITS = { contentChars: 100_000, descriptionChars: 256 } as const;

/** "Session Submitted" → "SessionSubmitted" (also the schema's title and the code-binding class). */
export function pascalCase(detailType: string): string {
  return words(detailType)
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join("");
}

/** "Session Submitted" → "session-submitted.json". */
export function eventSchemaFileName(detailType: string): string {
  return `${words(detailType)
    .map((word) => word.toLowerCase())
    .join("-")}.json`;
}

/** "cairn.client", "Session Submitted" → "cairn.client@SessionSubmitted". */
export function registrySchemaName(source: string, detailType: string): string {
  return `${source}@${pascalCase(detailType)}`;
}

function words(detailType: string): string[] {
  const found = detailType.split(/[^A-Za-z0-9]+/).filter((word) => word.length > 0);
  if (found.length === 0)
    throw new Error(`detail-type ${JSON.stringify(detailType)} has no letters or digits`);
  return found;
}

export interface CairnEventSchemasProps {
  /** Name of the registry (one per stack: the name is unique in the account and region). */
  readonly registryName: string;
  /**
   * Directory holding the generated schema files.
   *
   * @default - docs/events under the project root
   */
  readonly directory?: string;
}

export class CairnEventSchemas extends Construct {
  readonly registry: eventschemas.CfnRegistry;
  /** By detail-type. */
  readonly schemas: ReadonlyMap<DetailType, eventschemas.CfnSchema>;

  constructor(scope: Construct, id: string, props: CairnEventSchemasProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const other = stack.node.findAll().find((c) => c instanceof CairnEventSchemas && c !== this);
    if (other !== undefined) {
      throw new CairnPropsError(
        "eventSchemas",
        `only one Cairn per stack can publish the event schemas (the registry is named after the stack, and ${other.node.path} already does): set eventSchemas: false on the others`,
      );
    }
    const directory = props.directory ?? join(PROJECT_ROOT, EVENT_SCHEMAS_DIR);

    this.registry = new eventschemas.CfnRegistry(this, "Registry", {
      registryName: props.registryName,
      description: `Cairn's event contracts: every event its bus accepts or carries (stack ${stack.stackName})`,
    });

    const schemas = new Map<DetailType, eventschemas.CfnSchema>();
    for (const [detailType, contract] of Object.entries(EVENT_CONTRACTS) as [
      DetailType,
      (typeof EVENT_CONTRACTS)[DetailType],
    ][]) {
      const content = readSchemaFile(directory, detailType, contract.source);
      schemas.set(
        detailType,
        new eventschemas.CfnSchema(this, pascalCase(detailType), {
          registryName: this.registry.attrRegistryName,
          schemaName: registrySchemaName(contract.source, detailType),
          type: EVENT_SCHEMA_TYPE,
          content,
          description: schemaDescription(contract.direction, content),
        }),
      );
    }
    this.schemas = schemas;
  }
}

/** A generated schema file is missing, stale or too large for the registry. */
export class EventSchemaFileError extends CairnDeploymentError {
  override readonly name = "EventSchemaFileError";
  readonly code = "CAIRN_EVENT_SCHEMA";
  readonly file: string;
  constructor(file: string, reason: string) {
    super(`event schema ${file} ${reason}`);
    this.file = file;
  }
}

/** The file's text, checked against the contract so a stale file fails synth instead of deploying. */
function readSchemaFile(directory: string, detailType: string, source: string): string {
  const file = join(directory, eventSchemaFileName(detailType));
  const stale = (reason: string) => new EventSchemaFileError(file, `${reason}: run npm run schemas`);
  if (!existsSync(file)) throw stale("is missing");
  const content = readFileSync(file, "utf8");
  if (content.length > SCHEMA_LIMITS.contentChars) {
    throw new EventSchemaFileError(
      file,
      `is ${content.length} characters; the schema registry accepts at most ${SCHEMA_LIMITS.contentChars}`,
    );
  }
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(content) as Record<string, unknown>;
  } catch (error) {
    throw stale(`is not JSON (${(error as Error).message})`);
  }
  if (parsed["x-amazon-events-detail-type"] !== detailType || parsed["x-amazon-events-source"] !== source) {
    throw stale(`does not describe ${source} / ${detailType}`);
  }
  return content;
}

/** "Inbound: <first sentence of the event's description>", within the registry's 256 characters. */
function schemaDescription(direction: string, content: string): string {
  const described = (JSON.parse(content) as { description?: unknown }).description;
  const first = typeof described === "string" ? (described.split(/(?<=\.)\s/)[0] ?? "") : "";
  const text = `${direction === "inbound" ? "Inbound" : "Outbound"}${first ? `: ${first}` : ""}`;
  return text.length <= SCHEMA_LIMITS.descriptionChars
    ? text
    : `${text.slice(0, SCHEMA_LIMITS.descriptionChars - 1)}…`;
}
