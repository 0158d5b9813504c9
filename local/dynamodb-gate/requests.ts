/**
 * What one DynamoDB request asks to do, in IAM terms: the checks IAM makes before DynamoDB runs
 * it (the Service Authorization Reference for Amazon DynamoDB, and the developer guide's "Using IAM
 * policy conditions for fine-grained access control"):
 *
 * - One check per request, on the table (or index) it names; a transaction is checked item by
 *   item as the single-item action each one is (TransactWriteItems' Put as dynamodb:PutItem, a
 *   TransactGetItems Get as dynamodb:GetItem), a batch once per table with all its keys.
 * - `dynamodb:LeadingKeys`: the partition key value of every item the request names (GetItem's
 *   Key, PutItem's Item, every key of a BatchGetItem), or for a Query the partition key value of
 *   its key condition (the index's partition key on an index). Absent for a Scan.
 * - `dynamodb:Attributes`: the top-level attribute names the request reads or writes: a read's
 *   projection (ProjectionExpression or AttributesToGet; absent without one), a PutItem's item,
 *   the attributes an update or condition expression names.
 * - `dynamodb:Select`: a Query's or Scan's Select; for every read, SPECIFIC_ATTRIBUTES when it
 *   has a projection, else what it returns (ALL_ATTRIBUTES, an index's ALL_PROJECTED_ATTRIBUTES).
 * - `dynamodb:ReturnValues`: a write's ReturnValues, NONE when not given.
 */
import { isPlainObject } from "../aws-json/index.ts";

export interface TableLayout {
  /** The partition key attribute of the table, or of one of its indexes. */
  partitionKeyOf(tableName: string, indexName: string | undefined): string | undefined;
  tableArn(tableName: string): string;
}

export interface DynamoCheck {
  /** e.g. `dynamodb:PutItem`. */
  readonly action: string;
  readonly resource: string;
  readonly conditionValues: Readonly<Record<string, readonly string[]>>;
}

type Input = Readonly<Record<string, unknown>>;

/** The checks `operation` with `input` must pass, every one of them. */
export function checksOf(operation: string, input: Input, layout: TableLayout): DynamoCheck[] {
  switch (operation) {
    case "GetItem":
      return [itemCheck("GetItem", input, layout, keyOf(input["Key"]))];
    case "PutItem":
      return [itemCheck("PutItem", input, layout, keyOf(input["Item"]))];
    case "UpdateItem":
    case "DeleteItem":
      return [itemCheck(operation, input, layout, keyOf(input["Key"]))];
    case "Query":
    case "Scan":
      return [readCheck(operation, input, layout)];
    case "BatchGetItem":
      return Object.entries(objectOf(input["RequestItems"])).map(([table, request]) => {
        const r = objectOf(request);
        return itemCheck(
          "BatchGetItem",
          { ...r, TableName: table },
          layout,
          ...arrayOf(r["Keys"]).map(keyOf),
        );
      });
    case "BatchWriteItem":
      return Object.entries(objectOf(input["RequestItems"])).map(([table, requests]) => {
        const keys = arrayOf(requests).map((w) => {
          const r = objectOf(w);
          return keyOf(objectOf(r["PutRequest"])["Item"] ?? objectOf(r["DeleteRequest"])["Key"]);
        });
        return itemCheck("BatchWriteItem", { TableName: table }, layout, ...keys);
      });
    case "TransactWriteItems":
      return arrayOf(input["TransactItems"]).flatMap((entry) =>
        Object.entries(objectOf(entry)).map(([kind, item]) => {
          const i = objectOf(item);
          const action = TRANSACT_WRITE_ACTIONS[kind] ?? kind;
          return itemCheck(action, i, layout, keyOf(kind === "Put" ? i["Item"] : i["Key"]));
        }),
      );
    case "TransactGetItems":
      return arrayOf(input["TransactItems"]).map((entry) => {
        const get = objectOf(objectOf(entry)["Get"]);
        return itemCheck("GetItem", get, layout, keyOf(get["Key"]));
      });
    default: {
      const table = typeof input["TableName"] === "string" ? input["TableName"] : undefined;
      return [
        {
          action: `dynamodb:${operation}`,
          resource: table === undefined ? "*" : layout.tableArn(table),
          conditionValues: {},
        },
      ];
    }
  }
}

const TRANSACT_WRITE_ACTIONS: Readonly<Record<string, string>> = {
  Put: "PutItem",
  Update: "UpdateItem",
  Delete: "DeleteItem",
  ConditionCheck: "ConditionCheckItem",
};

const READS = new Set(["GetItem", "BatchGetItem"]);

function itemCheck(
  action: string,
  input: Input,
  layout: TableLayout,
  ...keys: (Input | undefined)[]
): DynamoCheck {
  const table = typeof input["TableName"] === "string" ? input["TableName"] : "";
  const pk = layout.partitionKeyOf(table, undefined);
  const leading = pk === undefined ? [] : keys.flatMap((k) => scalarOf(k?.[pk]) ?? []);
  const values: Record<string, readonly string[]> = {};
  if (leading.length > 0) values["dynamodb:LeadingKeys"] = leading;
  const names = objectOf(input["ExpressionAttributeNames"]) as Record<string, string>;
  if (READS.has(action)) {
    const projected = projectionOf(input, names);
    if (projected !== undefined) values["dynamodb:Attributes"] = projected;
    values["dynamodb:Select"] = [projected === undefined ? "ALL_ATTRIBUTES" : "SPECIFIC_ATTRIBUTES"];
  } else if (action !== "BatchWriteItem") {
    const written = new Set<string>();
    if (action === "PutItem") for (const name of Object.keys(objectOf(input["Item"]))) written.add(name);
    for (const expression of ["UpdateExpression", "ConditionExpression"]) {
      for (const name of expressionAttributes(input[expression], names)) written.add(name);
    }
    if (written.size > 0) values["dynamodb:Attributes"] = [...written];
    values["dynamodb:ReturnValues"] = [
      typeof input["ReturnValues"] === "string" ? input["ReturnValues"] : "NONE",
    ];
  }
  return { action: `dynamodb:${action}`, resource: layout.tableArn(table), conditionValues: values };
}

function readCheck(operation: "Query" | "Scan", input: Input, layout: TableLayout): DynamoCheck {
  const table = typeof input["TableName"] === "string" ? input["TableName"] : "";
  const index = typeof input["IndexName"] === "string" ? input["IndexName"] : undefined;
  const values: Record<string, readonly string[]> = {};
  const names = objectOf(input["ExpressionAttributeNames"]) as Record<string, string>;
  if (operation === "Query") {
    const pk = layout.partitionKeyOf(table, index);
    const leading = pk === undefined ? undefined : keyConditionValue(input, pk, names);
    if (leading !== undefined) values["dynamodb:LeadingKeys"] = [leading];
  }
  const projected = projectionOf(input, names);
  if (projected !== undefined) values["dynamodb:Attributes"] = projected;
  const select =
    typeof input["Select"] === "string"
      ? input["Select"]
      : projected !== undefined
        ? "SPECIFIC_ATTRIBUTES"
        : index === undefined
          ? "ALL_ATTRIBUTES"
          : "ALL_PROJECTED_ATTRIBUTES";
  values["dynamodb:Select"] = [select];
  const tableArn = layout.tableArn(table);
  return {
    action: `dynamodb:${operation}`,
    resource: index === undefined ? tableArn : `${tableArn}/index/${index}`,
    conditionValues: values,
  };
}

/** A Query's partition key value: `#pk = :v` in its key condition, or the legacy KeyConditions. */
function keyConditionValue(input: Input, pk: string, names: Record<string, string>): string | undefined {
  const expression = input["KeyConditionExpression"];
  if (typeof expression === "string") {
    const values = objectOf(input["ExpressionAttributeValues"]);
    for (const m of expression.matchAll(/(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)/g)) {
      const name = m[1]!.startsWith("#") ? names[m[1]!] : m[1];
      if (name === pk) return scalarOf(values[m[2]!]);
    }
    return undefined;
  }
  const legacy = objectOf(objectOf(input["KeyConditions"])[pk]);
  return scalarOf(arrayOf(legacy["AttributeValueList"])[0]);
}

/** The top-level attributes a read projects, or undefined when it reads whole items. */
function projectionOf(input: Input, names: Record<string, string>): string[] | undefined {
  const expression = input["ProjectionExpression"];
  if (typeof expression === "string") {
    return unique(
      expression.split(",").map((path) => {
        const first = path.trim().split(/[.[]/)[0]!;
        return first.startsWith("#") ? (names[first] ?? first) : first;
      }),
    );
  }
  const legacy = input["AttributesToGet"];
  return Array.isArray(legacy) ? unique(legacy.map(String)) : undefined;
}

/** Words of the expression grammar, which are not attribute names. */
const GRAMMAR = new Set(
  [
    "SET",
    "REMOVE",
    "ADD",
    "DELETE",
    "AND",
    "OR",
    "NOT",
    "BETWEEN",
    "IN",
    "attribute_exists",
    "attribute_not_exists",
    "attribute_type",
    "begins_with",
    "contains",
    "size",
    "if_not_exists",
    "list_append",
  ].map((w) => w.toLowerCase()),
);

/** The top-level attributes an update or condition expression names. */
function expressionAttributes(expression: unknown, names: Record<string, string>): string[] {
  if (typeof expression !== "string") return [];
  const found: string[] = [];
  // A path starts at a name not preceded by `.` (a nested member) or `:` (a value).
  for (const m of expression.matchAll(/(?<![.:#\w])(#?[A-Za-z_][A-Za-z0-9_]*)/g)) {
    const token = m[1]!;
    if (token.startsWith("#")) found.push(names[token] ?? token);
    else if (!GRAMMAR.has(token.toLowerCase())) found.push(token);
  }
  return unique(found);
}

function keyOf(value: unknown): Input | undefined {
  return isPlainObject(value) ? value : undefined;
}

/** A key attribute's value as IAM sees it: the string (or number) itself. */
function scalarOf(value: unknown): string | undefined {
  if (!isPlainObject(value)) return undefined;
  const scalar = value["S"] ?? value["N"] ?? value["B"];
  return typeof scalar === "string" ? scalar : undefined;
}

function objectOf(value: unknown): Record<string, unknown> {
  return isPlainObject(value) ? value : {};
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
