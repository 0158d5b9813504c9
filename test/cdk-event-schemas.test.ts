/**
 * The stack publishes Cairn's event contracts in an EventBridge schema registry: one registry
 * named after the stack, one JSONSchemaDraft4 schema per contract whose content is the generated
 * file byte for byte, named `<source>@<Name>`; cdk-nag has nothing to say about them; the prop
 * turns them off; a missing or stale file fails synth instead of deploying.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { EVENT_CONTRACTS, type DetailType } from "../functions/core/events.ts";
import { Cairn } from "../lib/cairn.ts";
import { CairnStack } from "../lib/cairn-stack.ts";
import { CairnPropsError } from "../lib/errors.ts";
import {
  CairnEventSchemas,
  EVENT_SCHEMAS_DIR,
  EventSchemaFileError,
  SCHEMA_LIMITS,
  eventSchemaFileName,
  registrySchemaName,
} from "../lib/event-schemas.ts";
import { resourcesOf, synthesize, type Synthesized } from "./cdk-synth.ts";

const contracts = Object.entries(EVENT_CONTRACTS) as [DetailType, (typeof EVENT_CONTRACTS)[DetailType]][];

describe("the deployed stack (full synth with cdk-nag)", () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synthesize({}, { stackName: "CairnProd", bundle: false });
  });
  afterAll(() => s.cleanup());

  test("one registry, named after the stack", () => {
    const registries = resourcesOf(s.json, "AWS::EventSchemas::Registry");
    expect(registries).toHaveLength(1);
    expect(registries[0]![1].Properties?.["RegistryName"]).toBe("CairnProd");
  });

  test("one JSONSchemaDraft4 schema per contract, its content the generated file", () => {
    const [registryId] = resourcesOf(s.json, "AWS::EventSchemas::Registry")[0]!;
    const schemas = resourcesOf(s.json, "AWS::EventSchemas::Schema").map(([, r]) => r.Properties ?? {});
    expect(schemas).toHaveLength(contracts.length);
    for (const [detailType, contract] of contracts) {
      const name = registrySchemaName(contract.source, detailType);
      const found = schemas.filter((p) => p["SchemaName"] === name);
      expect(found, name).toHaveLength(1);
      const props = found[0]!;
      expect(props["Type"]).toBe("JSONSchemaDraft4");
      expect(props["Content"]).toBe(
        readFileSync(join(EVENT_SCHEMAS_DIR, eventSchemaFileName(detailType)), "utf8"),
      );
      // A reference, so CloudFormation creates the registry first.
      expect(props["RegistryName"]).toEqual({ "Fn::GetAtt": [registryId, "RegistryName"] });
      const description = props["Description"] as string;
      expect(description.startsWith(contract.direction === "inbound" ? "Inbound: " : "Outbound: ")).toBe(
        true,
      );
      expect(description.length).toBeLessThanOrEqual(SCHEMA_LIMITS.descriptionChars);
    }
  });

  test("cdk-nag finds nothing on the registry or its schemas", () => {
    const onSchemas = s.violations.filter((v) =>
      v.violatingConstructs.some((c) => c.constructPath.includes("/EventSchemas/")),
    );
    expect(onSchemas).toEqual([]);
  });
});

describe("the prop and synth-time checks (no bundling)", () => {
  const app = () => new App({ context: { "aws:cdk:bundling-stacks": [] } });

  test("eventSchemas: false leaves the registry out", () => {
    const stack = new CairnStack(app(), "NoSchemas", { cairn: { eventSchemas: false } });
    const template = Template.fromStack(stack);
    template.resourceCountIs("AWS::EventSchemas::Registry", 0);
    template.resourceCountIs("AWS::EventSchemas::Schema", 0);
  });

  test("a second Cairn in the stack must turn it off, and the error says so", () => {
    const stack = new Stack(app(), "Twice");
    new Cairn(stack, "First");
    let thrown: unknown;
    try {
      new Cairn(stack, "Second");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(CairnPropsError);
    expect((thrown as Error).message).toBe(
      "eventSchemas: only one Cairn per stack can publish the event schemas (the registry is named after the stack, and Twice/First/EventSchemas already does): set eventSchemas: false on the others",
    );
    new Cairn(stack, "Third", { eventSchemas: false });
  });

  describe("a missing, stale or oversized file fails synth, naming the file", () => {
    let dir: string;
    const [firstType, first] = contracts[0]!;
    const file = () => join(dir, eventSchemaFileName(firstType));
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), "cairn-event-schemas-"));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const build = () =>
      new CairnEventSchemas(new Stack(app(), "S"), "Schemas", { registryName: "S", directory: dir });
    const failure = () => {
      try {
        build();
      } catch (error) {
        return error;
      }
      return undefined;
    };

    test("missing", () => {
      const error = failure();
      expect(error).toBeInstanceOf(EventSchemaFileError);
      expect((error as Error).message).toBe(`event schema ${file()} is missing: run npm run schemas`);
    });

    test("describing another event", () => {
      writeFileSync(
        file(),
        JSON.stringify({ "x-amazon-events-source": first.source, "x-amazon-events-detail-type": "Other" }),
      );
      expect((failure() as Error).message).toBe(
        `event schema ${file()} does not describe ${first.source} / ${firstType}: run npm run schemas`,
      );
    });

    test("larger than the registry accepts", () => {
      writeFileSync(file(), " ".repeat(SCHEMA_LIMITS.contentChars + 1));
      expect((failure() as Error).message).toBe(
        `event schema ${file()} is ${SCHEMA_LIMITS.contentChars + 1} characters; the schema registry accepts at most ${SCHEMA_LIMITS.contentChars}`,
      );
    });
  });
});
