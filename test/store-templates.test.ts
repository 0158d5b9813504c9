/**
 * Job templates against DynamoDB Local: create, read, list, update, delete,
 * every conflict, and Default — built in until updated, never deleted.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import { TemplateItems } from "../functions/adapters/dynamo/template-items.ts";
import { BUILT_IN_DEFAULT_TEMPLATE, type JobTemplate } from "../functions/core/templates.ts";
import { caught, freshTable, T0, type TestTable } from "./store-fixtures.ts";

const SMALL: JobTemplate = {
  name: "small",
  defaults: { resources: { cpu: 1 }, timeouts: { running: 600 } },
  constraints: {
    "resources.cpu": { max: 2 },
    "timeouts.running": { max: 3600 },
    queue: { allowed: ["default", "batch"] },
  },
};

describe("job templates in the store", () => {
  let table: TestTable;
  let templates: TemplateItems;

  beforeAll(async () => {
    table = await freshTable("cairn-store-templates");
    templates = new TemplateItems(new DynamoRequests(table.client, table.tableName, undefined));
  });
  afterAll(() => table.drop());

  test("given no template stored, Default is the built-in one, listed and readable", async () => {
    expect(await templates.getTemplate("Default")).toEqual(BUILT_IN_DEFAULT_TEMPLATE);
    expect(await templates.listTemplates()).toEqual([BUILT_IN_DEFAULT_TEMPLATE]);
    expect(await templates.getTemplate("small")).toBeUndefined();
  });

  test("a template is created once, read back whole, and listed by name", async () => {
    await templates.createTemplate(SMALL, T0);
    expect(await templates.getTemplate("small")).toEqual(SMALL);
    const again = await caught(() => templates.createTemplate(SMALL, T0 + 1));
    expect({ code: again["code"], message: again.message }).toEqual({
      code: "ALREADY_EXISTS",
      message: "job template small already exists",
    });
    expect((await templates.listTemplates()).map((t) => t.name)).toEqual(["Default", "small"]);
  });

  test("creating Default is refused: it always exists", async () => {
    const error = await caught(() => templates.createTemplate({ ...SMALL, name: "Default" }, T0));
    expect(error["code"]).toBe("ALREADY_EXISTS");
  });

  test("an update replaces the document; an absent template is not found", async () => {
    const bigger: JobTemplate = { ...SMALL, constraints: { "resources.cpu": { max: 8 } } };
    await templates.updateTemplate(bigger, T0 + 2);
    expect(await templates.getTemplate("small")).toEqual(bigger);
    const missing = await caught(() => templates.updateTemplate({ ...SMALL, name: "gone" }, T0));
    expect({ code: missing["code"], message: missing.message }).toEqual({
      code: "NOT_FOUND",
      message: "job template gone not found",
    });
  });

  test("Default can be updated (its first update stores it) and is then read as stored", async () => {
    const mine: JobTemplate = {
      name: "Default",
      defaults: { priority: 5 },
      constraints: { replicas: { max: 4 } },
    };
    await templates.updateTemplate(mine, T0);
    expect(await templates.getTemplate("Default")).toEqual(mine);
    expect((await templates.listTemplates()).filter((t) => t.name === "Default")).toEqual([mine]);
  });

  test("a document the core refuses is not written", async () => {
    const error = await caught(() =>
      templates.createTemplate({ name: "bad", defaults: {}, constraints: { queue: { max: 1 } } }, T0),
    );
    expect({ code: error["code"], message: error.message }).toEqual({
      code: "INVALID_STORE_REQUEST",
      message: "template.constraints.queue.max: applies only to numeric fields (queue is a string)",
    });
    expect(await templates.getTemplate("bad")).toBeUndefined();
  });

  test("delete removes a template; Default cannot be deleted; an absent one is not found", async () => {
    await templates.deleteTemplate("small");
    expect(await templates.getTemplate("small")).toBeUndefined();
    const again = await caught(() => templates.deleteTemplate("small"));
    expect(again["code"]).toBe("NOT_FOUND");
    const dflt = await caught(() => templates.deleteTemplate("Default"));
    expect({ code: dflt["code"], message: dflt.message }).toEqual({
      code: "DEFAULT_TEMPLATE",
      message:
        "job template Default cannot be deleted: it always exists (change it with `cairn template update`)",
    });
  });
});
