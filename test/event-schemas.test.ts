/**
 * The published event schemas (docs/events/*.json, docs/events.md) are current and true:
 * - regenerating them in memory gives the files on disk, byte for byte (else: run npm run schemas);
 * - every example passes its JSON Schema (ajv, draft 04, strict) and its zod contract;
 * - on hundreds of broken variants of the examples the JSON Schema and zod give the same verdict;
 * - each inbound `aws events put-events` snippet in docs/events.md, run verbatim by the real AWS
 *   CLI against the embedded EventBridge endpoint, puts the example on the bus and Cairn accepts it.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import AjvModule from "ajv-draft-04";
import formatsModule from "ajv-formats";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseInboundEvent, toPutEventsEntry, type DetailType } from "../functions/core/events.ts";
import {
  EVENT_SCHEMAS_DIR,
  SCHEMA_LIMITS,
  eventSchemaFileName,
  registrySchemaName,
} from "../lib/event-schemas.ts";
import { LocalEventBus, startEventBridgeServer, type EventBridgeEvent } from "../local/eventbridge/index.ts";
import { schemaComments } from "../scripts/event-schema-comments.ts";
import { BEGIN_MARKER, END_MARKER, EVENTS_DOC, type EventExamples } from "../scripts/event-schema-docs.ts";
import {
  EXAMPLES_FILE,
  contractRows,
  generateEventSchemas,
  orphanSchemaFiles,
  type ContractRow,
  type GeneratedSchemas,
  type JsonSchema,
} from "../scripts/event-schemas.ts";

// CommonJS packages whose `default` export is the module itself: the same expression works under
// tsc (nodenext) and Node's ESM loader.
const Ajv = AjvModule.default;
const addFormats = formatsModule.default;

const rows = contractRows();
const examples = JSON.parse(readFileSync(EXAMPLES_FILE, "utf8")) as EventExamples;
let generated: GeneratedSchemas;
/** Verdicts on the broken variants of every example, tallied across events. */
const verdicts = { accepted: 0, rejected: 0 };

beforeAll(async () => {
  generated = await generateEventSchemas();
});

function validatorFor(schema: JsonSchema) {
  // strict: an unknown keyword or format in a generated schema is an error, not silently ignored.
  const ajv = new Ajv({ strict: true, allErrors: true });
  ajv.addKeyword("x-amazon-events-source").addKeyword("x-amazon-events-detail-type");
  addFormats(ajv);
  return ajv.compile(schema);
}

function exampleOf(row: ContractRow): Record<string, unknown> {
  const example = examples[row.detailType];
  if (example === undefined) throw new Error(`${EXAMPLES_FILE} has no example of "${row.detailType}"`);
  return structuredClone(example);
}

describe("the files on disk are what `npm run schemas` writes", () => {
  test("no generated file is stale, missing or orphaned", () => {
    const stale = [...generated.files]
      .filter(([path, content]) => readOrUndefined(path) !== content)
      .map(([path]) => path);
    const problems = [...stale, ...orphanSchemaFiles(generated.files).map((path) => `${path} (orphaned)`)];
    expect(problems, `event schemas are stale: run npm run schemas (${problems.join(", ")})`).toEqual([]);
  });

  test("generating is deterministic: a second run gives the same bytes", async () => {
    const again = await generateEventSchemas();
    expect([...again.files]).toEqual([...generated.files]);
  });

  test("one schema file per contract, and the doc has a section per contract", () => {
    const doc = generated.files.get(EVENTS_DOC)!;
    for (const row of rows) {
      expect(generated.files.has(`${EVENT_SCHEMAS_DIR}/${eventSchemaFileName(row.detailType)}`)).toBe(true);
      expect(doc).toContain(`### ${row.detailType}\n`);
    }
    expect(doc.indexOf(BEGIN_MARKER)).toBeGreaterThan(0);
    expect(doc.indexOf(END_MARKER)).toBeGreaterThan(doc.indexOf(BEGIN_MARKER));
  });

  test("schemas fit the registry: content and description within CreateSchema's limits, names unique", () => {
    const names = new Set<string>();
    for (const row of rows) {
      const content = generated.files.get(`${EVENT_SCHEMAS_DIR}/${eventSchemaFileName(row.detailType)}`)!;
      expect(content.length).toBeLessThanOrEqual(SCHEMA_LIMITS.contentChars);
      expect(content.endsWith("}\n")).toBe(true);
      expect(content).not.toContain('"readOnly"');
      names.add(registrySchemaName(row.source, row.detailType));
    }
    expect(names.size).toBe(rows.length);
  });
});

describe.each(rows.map((row) => [row.detailType, row] as const))("%s", (_type, row) => {
  const schema = () => generated.schemas.get(row.detailType)!;

  test("its JSON Schema is valid draft 04 with source and detail-type pinned", () => {
    const ajv = new Ajv({ strict: true });
    ajv.addKeyword("x-amazon-events-source").addKeyword("x-amazon-events-detail-type");
    addFormats(ajv);
    expect(ajv.validateSchema(schema()), JSON.stringify(ajv.errors)).toBe(true);
    const validate = validatorFor(schema());
    const example = exampleOf(row);
    expect(validate({ ...example, source: "cairn.other" })).toBe(false);
    expect(validate({ ...example, "detail-type": `${row.detailType} Again` })).toBe(false);
    expect(validate({ ...example, time: "yesterday" })).toBe(false);
  });

  test("its example passes the JSON Schema and the zod contract", () => {
    const example = exampleOf(row);
    const validate = validatorFor(schema());
    expect(validate(example), JSON.stringify(validate.errors)).toBe(true);
    const parsed = row.detail.safeParse(example["detail"]);
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    if (row.direction === "inbound") {
      // The edge parser Cairn runs on everything that reaches it, envelope included.
      const result = parseInboundEvent(example);
      expect(result.ok, result.ok ? "" : result.error.message).toBe(true);
      expect(() => toPutEventsEntry("cairn", row.detailType, example["detail"] as never)).not.toThrow();
    } else {
      // What Cairn sends is its contract's output: an outbound example must be a fixed point.
      expect(parsed.data).toEqual(example["detail"]);
    }
  });

  test("on broken variants of its example, the JSON Schema and zod agree", () => {
    const example = exampleOf(row);
    const validate = validatorFor(schema());
    const disagreements: string[] = [];
    for (const { label, detail } of mutations(example["detail"])) {
      const byJsonSchema = validate({ ...example, detail });
      const byZod = row.detail.safeParse(detail).success;
      if (byJsonSchema !== byZod) disagreements.push(`${label}: JSON Schema ${byJsonSchema}, zod ${byZod}`);
      verdicts[byZod ? "accepted" : "rejected"]++;
    }
    expect(disagreements).toEqual([]);
  });
});

describe("examples and variants", () => {
  test("both verdicts occur among the variants, so agreement is not on always-yes or always-no", () => {
    expect(verdicts.accepted).toBeGreaterThan(10);
    expect(verdicts.rejected).toBeGreaterThan(100);
  });

  test("there is exactly one example per contract", () => {
    expect(Object.keys(examples).sort()).toEqual(rows.map((row) => row.detailType).sort());
  });
});

describe("descriptions come from the doc comments of the source", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "cairn-comments-"));
    mkdirSync(join(dir, "core"));
    writeFileSync(
      join(dir, "core", "fields.ts"),
      [
        'import { z } from "zod";',
        "/** When it happened, epoch ms. */",
        "export const epochMsSchema = z.number().int().min(0);",
        "export const aliasSchema = epochMsSchema;",
        "/** Capacity offered. */",
        "export const capacitySchema = z",
        "  .object({",
        "    /** Cores. */",
        "    cpu: z.number(),",
        "  })",
        "  .strict();",
      ].join("\n"),
    );
    writeFileSync(
      join(dir, "core", "events.ts"),
      [
        'import { z } from "zod";',
        'import { aliasSchema, capacitySchema, epochMsSchema as atSchema } from "./fields.ts";',
        "const shape = {",
        "  /** From the shape. */",
        "  shaped: z.string(),",
        "};",
        "/** The event. */",
        "export const EventDetailSchema = strictObject({",
        "  ...shape,",
        "  /** Its own words win. */",
        "  atMs: atSchema.optional(),",
        "  sinceMs: aliasSchema,",
        "  capacity: capacitySchema.readonly(),",
        "  plain: z.boolean(),",
        "})",
        "  .superRefine(() => undefined)",
        "  .readonly();",
      ].join("\n"),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("the schema's, a property's own, an imported declaration's (through aliases), nested and spread", () => {
    const tree = schemaComments(join(dir, "core", "events.ts"), "EventDetailSchema");
    expect(tree.description).toBe("The event.");
    expect(tree.fields.get("atMs")?.description).toBe("Its own words win.");
    expect(tree.fields.get("sinceMs")?.description).toBe("When it happened, epoch ms.");
    expect(tree.fields.get("capacity")?.description).toBe("Capacity offered.");
    expect(tree.fields.get("capacity")?.fields.get("cpu")?.description).toBe("Cores.");
    expect(tree.fields.get("shaped")?.description).toBe("From the shape.");
    expect(tree.fields.get("plain")?.description).toBeUndefined();
  });

  test("an unknown export is an error naming it", () => {
    expect(() => schemaComments(join(dir, "core", "events.ts"), "NoSuchSchema")).toThrow(
      `${join(dir, "core", "events.ts")} declares no NoSuchSchema`,
    );
  });
});

describe("the inbound snippets of docs/events.md, run verbatim with the AWS CLI", () => {
  const inbound = rows.filter((row) => row.direction === "inbound");
  const bus = new LocalEventBus({ name: "cairn-docs", account: "123456789012", region: "eu-west-1" });
  const received: EventBridgeEvent[] = [];
  bus.onEvent((event) => received.push(event));
  let server: Awaited<ReturnType<typeof startEventBridgeServer>>;
  let cwd: string;

  beforeAll(async () => {
    server = await startEventBridgeServer(bus, {
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined } as never,
    });
    cwd = mkdtempSync(join(tmpdir(), "cairn-put-events-"));
  });
  afterAll(async () => {
    await server.close();
    bus.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  test.each(inbound.map((row) => [row.detailType, row] as const))("%s", async (_type, row) => {
    const snippet = shellSnippet(generated.files.get(EVENTS_DOC)!, row.detailType);
    const before = received.length;
    const { stdout } = await promisify(execFile)("bash", ["-euo", "pipefail", "-c", snippet], {
      cwd,
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: cwd,
        BUS: bus.name,
        AWS_ENDPOINT_URL: server.endpoint,
        AWS_DEFAULT_REGION: "eu-west-1",
        AWS_ACCESS_KEY_ID: "local",
        AWS_SECRET_ACCESS_KEY: "local",
      },
    });
    expect(JSON.parse(stdout)).toMatchObject({ FailedEntryCount: 0 });
    expect(received.length).toBe(before + 1);
    const delivered = received[before]!;
    const example = exampleOf(row);
    expect(delivered.source).toBe(row.source);
    expect(delivered["detail-type"]).toBe(row.detailType);
    expect(delivered.detail).toEqual(example["detail"]);
    // What the bus delivers passes the published schema and Cairn's edge parser.
    const validate = validatorFor(generated.schemas.get(row.detailType)!);
    expect(validate(delivered), JSON.stringify(validate.errors)).toBe(true);
    const parsed = parseInboundEvent(delivered);
    expect(parsed.ok, parsed.ok ? "" : parsed.error.message).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** The ```sh block of one event's section in the generated doc. */
function shellSnippet(doc: string, detailType: DetailType): string {
  const start = doc.indexOf(`### ${detailType}\n`);
  const end = doc.indexOf("\n### ", start + 1);
  const section = doc.slice(start, end < 0 ? doc.indexOf(END_MARKER) : end);
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (block === null) throw new Error(`docs/events.md: no sh block in the "${detailType}" section`);
  return block[1]!;
}

interface Variant {
  readonly label: string;
  readonly detail: unknown;
}

/**
 * Broken (and some harmless) variants of a detail, at every depth: each field removed, retyped,
 * emptied, made negative or fractional; an unknown field or a key no pattern allows added.
 */
function mutations(detail: unknown): Variant[] {
  const out: Variant[] = [];
  const visit = (value: unknown, path: (string | number)[]): void => {
    const at = path.join(".") || "(root)";
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      out.push({
        label: `${at}: unknown field added`,
        detail: setAt(detail, [...path, "unexpectedField"], 1),
      });
      out.push({ label: `${at}: bad key added`, detail: setAt(detail, [...path, "not a key!"], "x") });
      for (const [key, child] of Object.entries(value)) {
        out.push({ label: `${at}.${key}: removed`, detail: removeAt(detail, [...path, key]) });
        visit(child, [...path, key]);
      }
    } else if (Array.isArray(value)) {
      out.push({ label: `${at}: emptied`, detail: setAt(detail, path, []) });
      value.forEach((child, i) => visit(child, [...path, i]));
    }
    if (path.length === 0) return;
    const replace = (label: string, next: unknown) =>
      out.push({ label: `${at}: ${label}`, detail: setAt(detail, path, next) });
    if (typeof value === "string") {
      replace("a number", 12345);
      replace("empty", "");
      replace("very long", "x".repeat(5000));
    } else if (typeof value === "number") {
      replace("a string", String(value));
      replace("negative", -1);
      replace("fractional", value + 0.5);
      replace("huge", 2 ** 60);
    } else if (typeof value === "boolean") {
      replace("a string", String(value));
    } else {
      replace("a string", "x");
      replace("null", null);
    }
  };
  visit(detail, []);
  return out;
}

function setAt(root: unknown, path: readonly (string | number)[], value: unknown): unknown {
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path.at(-1)!] = value;
  return copy;
}

function removeAt(root: unknown, path: readonly (string | number)[]): unknown {
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  delete node[path.at(-1)!];
  return copy;
}
