/**
 * Failure categories operators define, against DynamoDB Local: create, read, list in the order
 * they are checked, update, delete, every conflict, and a definition the core would refuse never
 * stored.
 */
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import { FailureCategoryItems } from "../functions/adapters/dynamo/failure-category-items.ts";
import {
  failureCategoryToDocument,
  parseFailureCategory,
  type FailureCategoryDefinition,
} from "../functions/core/retry/category-definitions.ts";
import { caught, freshTable, T0, type TestTable } from "./store-fixtures.ts";

const define = (name: string, spec: Record<string, unknown>): FailureCategoryDefinition =>
  parseFailureCategory({ apiVersion: "cairn.dev/v1", kind: "FailureCategory", metadata: { name }, spec });

const CUDA = define("cuda_error", { rules: [{ onTerminationMessage: { pattern: "(?i)cuda error" } }] });
const INFINIBAND = define("infiniband_error", {
  precedence: 5,
  rules: [{ onTerminationMessage: { pattern: "ibv_" } }, { onExitCodes: { operator: "In", values: [75] } }],
});

describe("failure categories in the store", () => {
  let table: TestTable;
  let categories: FailureCategoryItems;

  beforeAll(async () => {
    table = await freshTable("cairn-store-categories");
    categories = new FailureCategoryItems(new DynamoRequests(table.client, table.tableName, undefined));
  });
  afterAll(() => table.drop());

  test("none stored: none listed, none read", async () => {
    expect(await categories.listFailureCategories()).toEqual([]);
    expect(await categories.getFailureCategory("cuda_error")).toBeUndefined();
  });

  test("a category is created once, read back whole, and listed in the order they are checked", async () => {
    await categories.createFailureCategory(INFINIBAND, T0);
    await categories.createFailureCategory(CUDA, T0);
    expect(await categories.getFailureCategory("infiniband_error")).toEqual(INFINIBAND);
    const again = await caught(() => categories.createFailureCategory(CUDA, T0 + 1));
    expect({ code: again["code"], message: again.message }).toEqual({
      code: "ALREADY_EXISTS",
      message: "failure category cuda_error already exists",
    });
    // Precedence 0 before 5, whatever the names.
    expect((await categories.listFailureCategories()).map((c) => c.name)).toEqual([
      "cuda_error",
      "infiniband_error",
    ]);
  });

  test("an update replaces the definition; an absent one is not found", async () => {
    const first = { ...INFINIBAND, precedence: 0 };
    await categories.updateFailureCategory(first, T0 + 2);
    expect(await categories.getFailureCategory("infiniband_error")).toEqual(first);
    // Same precedence: by name.
    expect((await categories.listFailureCategories()).map((c) => c.name)).toEqual([
      "cuda_error",
      "infiniband_error",
    ]);
    const missing = await caught(() => categories.updateFailureCategory({ ...CUDA, name: "gone" }, T0));
    expect({ code: missing["code"], message: missing.message }).toEqual({
      code: "NOT_FOUND",
      message: "failure category gone not found",
    });
  });

  test("a definition built by hand that the core refuses is not stored, naming the field", async () => {
    const bad: FailureCategoryDefinition = {
      name: "bad",
      precedence: 0,
      rules: [{ matchers: [{ kind: "terminationMessage", pattern: "(" }] }],
    };
    const error = await caught(() => categories.createFailureCategory(bad, T0));
    expect(error["code"]).toBe("INVALID_STORE_REQUEST");
    expect(error.message).toContain("definition.spec.rules[0].onTerminationMessage.pattern");
    expect(await categories.getFailureCategory("bad")).toBeUndefined();
  });

  test("an item edited by hand into something the core refuses is reported when read, by name", async () => {
    const document = failureCategoryToDocument(CUDA);
    await table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: {
          pk: { S: "FAILURE_CATEGORY#broken" },
          sk: { S: "FAILURE_CATEGORY" },
          name: { S: "broken" },
          document: {
            M: {
              apiVersion: { S: String(document.apiVersion) },
              kind: { S: "FailureCategory" },
              metadata: { M: { name: { S: "broken" } } },
              spec: { M: { rules: { L: [] } } },
            },
          },
        },
      }),
    );
    const error = await caught(() => categories.getFailureCategory("broken"));
    expect(error.message).toMatch(
      /^stored failure category broken does not validate: .*spec\.rules: must not be empty/s,
    );
  });

  test("delete removes it; an absent one is not found", async () => {
    await categories.deleteFailureCategory("cuda_error");
    expect(await categories.getFailureCategory("cuda_error")).toBeUndefined();
    const missing = await caught(() => categories.deleteFailureCategory("cuda_error"));
    expect(missing["code"]).toBe("NOT_FOUND");
  });
});
