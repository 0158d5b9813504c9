/**
 * The clients' table statements (functions/topology/client-access.ts) against the store's keys
 * and codec, and as the embedded runtime's DynamoDB endpoint evaluates them: every request is
 * checked as IAM checks it (local/dynamodb-gate/requests.ts), each item of a batch or a
 * transaction included.
 */
import { describe, expect, test } from "vitest";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import {
  agentPk,
  configPk,
  dedupPk,
  deploymentHistoryPk,
  deploymentPk,
  jobPk,
  queuePk,
  rejectionPk,
  retryPolicyPk,
  sessionPk,
} from "../functions/adapters/dynamo/keys.ts";
import { templatePk } from "../functions/adapters/dynamo/template-items.ts";
import { failureCategoryPk } from "../functions/adapters/dynamo/failure-category-items.ts";
import { agentFromItem, agentItem } from "../functions/adapters/dynamo/item-codec.ts";
import type { Agent } from "../functions/core/model.ts";
import {
  AGENT_KEY_PREFIX,
  AGENT_READABLE_ATTRIBUTES,
  CLIENT_READ_KEY_PREFIXES,
  CLIENT_TABLE_STATEMENTS,
  OPERATOR_TABLE_STATEMENTS,
  OPERATOR_WRITE_KEY_PREFIXES,
  type TableStatement,
} from "../functions/topology/client-access.ts";
import { TABLE_SCHEMA } from "../functions/topology/table-schema.ts";
import { compilePolicy, type PolicyStatement } from "../local/aws-json/index.ts";
import { checksOf, type TableLayout } from "../local/dynamodb-gate/requests.ts";

const TABLE = "cairn";
const TABLE_ARN = `arn:aws:dynamodb:local:000000000000:table/${TABLE}`;
const LAYOUT: TableLayout = {
  tableArn: () => TABLE_ARN,
  partitionKeyOf: (_t, index) =>
    index === undefined
      ? TABLE_SCHEMA.partitionKey.name
      : TABLE_SCHEMA.globalSecondaryIndexes.find((g) => g.indexName === index)?.partitionKey.name,
};

const asLocal = (principals: string[], st: TableStatement): PolicyStatement => ({
  sid: st.sid,
  principals,
  actions: [...st.actions],
  resources: st.resources.flatMap((kind) =>
    kind === "table"
      ? [TABLE_ARN]
      : TABLE_SCHEMA.globalSecondaryIndexes.map((g) => `${TABLE_ARN}/index/${g.indexName}`),
  ),
  ...(st.condition === undefined ? {} : { condition: st.condition }),
});
const authorize = compilePolicy([
  ...CLIENT_TABLE_STATEMENTS.map((st) => asLocal(["client", "operator"], st)),
  ...OPERATOR_TABLE_STATEMENTS.map((st) => asLocal(["operator"], st)),
]);

/** Undefined when every check of the request passes; else the first denial. */
function decide(
  who: "client" | "operator",
  operation: string,
  input: Record<string, unknown>,
): string | undefined {
  for (const c of checksOf(operation, input, LAYOUT)) {
    const denial = authorize(who, {
      operation,
      action: c.action,
      resources: [c.resource],
      conditionValues: c.conditionValues,
      input,
    });
    if (denial !== undefined) return denial;
  }
  return undefined;
}

const key = (pk: string, sk = "X"): Record<string, AttributeValue> => ({ pk: { S: pk }, sk: { S: sk } });
const agentKey = key(agentPk("agent-1"), "AGENT");
const projection = (attributes: readonly string[]) => ({
  ProjectionExpression: attributes.map((_, i) => `#a${i}`).join(", "),
  ExpressionAttributeNames: Object.fromEntries(attributes.map((a, i) => [`#a${i}`, a])),
});

describe("the prefixes are the store's", () => {
  test("every partition the store writes is readable by clients, readable through a projection (agents) or hidden (de-duplication)", () => {
    const partitions = [
      sessionPk("s"),
      jobPk("j"),
      rejectionPk("r"),
      queuePk("q"),
      retryPolicyPk("p"),
      configPk("retry"),
      templatePk("t"),
      failureCategoryPk("c"),
      deploymentPk("d"),
      deploymentHistoryPk("d"),
    ];
    for (const pk of partitions) {
      expect(
        CLIENT_READ_KEY_PREFIXES.filter((p) => pk.startsWith(p)),
        pk,
      ).toHaveLength(1);
    }
    expect(agentPk("a").startsWith(AGENT_KEY_PREFIX)).toBe(true);
    for (const hidden of [agentPk("a"), dedupPk("k")]) {
      expect(
        CLIENT_READ_KEY_PREFIXES.some((p) => hidden.startsWith(p)),
        hidden,
      ).toBe(false);
    }
    // What operators write, clients read (the CLI shows it back).
    for (const p of OPERATOR_WRITE_KEY_PREFIXES) expect(CLIENT_READ_KEY_PREFIXES).toContain(p);
  });

  test("an agent read through the projection decodes to the whole agent but its signing key", () => {
    // Required<Agent>: a field added to Agent must be filled in here, and so checked.
    const agent: Required<Agent> = {
      id: "agent-1",
      capacity: { cpu: 4, memoryMiB: 4096 },
      free: { cpu: 3, memoryMiB: 3072 },
      lastHeartbeatAtMs: 1_700_000_000_000,
      version: 7,
      labels: { zone: "a" },
      incarnation: "i-1",
      signingKey: "k".repeat(43),
      registeredAtMs: 1_699_999_000_000,
      lostAtMs: 1_700_000_100_000,
      draining: true,
    };
    const item = agentItem(agent);
    const projected = Object.fromEntries(
      Object.entries(item).filter(([name]) =>
        (AGENT_READABLE_ATTRIBUTES as readonly string[]).includes(name),
      ),
    );
    const { signingKey: _key, ...shown } = agent;
    expect(agentFromItem(projected)).toEqual(shown);
    expect(AGENT_READABLE_ATTRIBUTES).not.toContain("signingKey");
  });
});

describe("the statements, as the runtime's DynamoDB endpoint evaluates them", () => {
  test("given a client, when it reads an agent whole, asks for its key, or queries its partition, then each is denied; the shown attributes pass", () => {
    expect(decide("client", "GetItem", { TableName: TABLE, Key: agentKey })).toMatch(
      /not authorized to perform: dynamodb:GetItem on resource: .*table\/cairn because .*statement ReadAgentsWithoutTheirKeys allows dynamodb:GetItem only when StringEqualsIfExists dynamodb:Select \[SPECIFIC_ATTRIBUTES\] holds, and the request has \[ALL_ATTRIBUTES\]/,
    );
    expect(
      decide("client", "GetItem", {
        TableName: TABLE,
        Key: agentKey,
        ...projection(["pk", "sk", "signingKey"]),
      }),
    ).toContain("dynamodb:Attributes");
    expect(
      decide("client", "GetItem", {
        TableName: TABLE,
        Key: agentKey,
        ...projection(AGENT_READABLE_ATTRIBUTES),
      }),
    ).toBeUndefined();
    expect(
      decide("client", "BatchGetItem", {
        RequestItems: {
          [TABLE]: { Keys: [agentKey, key(agentPk("agent-2"), "AGENT")], ...projection(["pk", "sk", "id"]) },
        },
      }),
    ).toBeUndefined();
    expect(
      decide("operator", "Query", {
        TableName: TABLE,
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": { S: agentPk("agent-1") } },
      }),
    ).toContain("dynamodb:Query");
    expect(decide("client", "Scan", { TableName: TABLE })).toContain("dynamodb:Scan");
  });

  test("given one batch with a session and an agent, then it is denied whole: every key must be allowed by one statement", () => {
    expect(
      decide("client", "BatchGetItem", {
        RequestItems: {
          [TABLE]: { Keys: [key(sessionPk("s"), "SESSION"), agentKey], ...projection(["pk", "sk", "id"]) },
        },
      }),
    ).toContain("dynamodb:BatchGetItem");
    expect(
      decide("client", "BatchGetItem", {
        RequestItems: { [TABLE]: { Keys: [key(sessionPk("s"), "SESSION"), key(jobPk("j"), "JOB")] } },
      }),
    ).toBeUndefined();
  });

  test("given writes, then a client writes nothing, an operator only its own partitions, each item of a transaction checked", () => {
    const putQueue = { TableName: TABLE, Item: { ...key(queuePk("gpu"), "QUEUE"), priority: { N: "1" } } };
    expect(decide("client", "PutItem", putQueue)).toContain(
      "no identity-based policy allows the dynamodb:PutItem",
    );
    expect(decide("operator", "PutItem", putQueue)).toBeUndefined();
    // A failure category decides which runs are retried: an operator defines it, a client may not.
    const putCategory = {
      TableName: TABLE,
      Item: { ...key(failureCategoryPk("cuda_error"), "FAILURE_CATEGORY"), document: { M: {} } },
    };
    expect(decide("client", "PutItem", putCategory)).toContain(
      "no identity-based policy allows the dynamodb:PutItem",
    );
    expect(
      decide("client", "DeleteItem", {
        TableName: TABLE,
        Key: key(failureCategoryPk("cuda_error"), "FAILURE_CATEGORY"),
      }),
    ).toContain("dynamodb:DeleteItem");
    expect(decide("operator", "PutItem", putCategory)).toBeUndefined();
    expect(
      decide("client", "GetItem", {
        TableName: TABLE,
        Key: key(failureCategoryPk("cuda_error"), "FAILURE_CATEGORY"),
      }),
    ).toBeUndefined();
    for (const pk of [sessionPk("s"), agentPk("a"), dedupPk("k"), jobPk("j")]) {
      expect(decide("operator", "PutItem", { TableName: TABLE, Item: key(pk) }), pk).toContain(
        "dynamodb:PutItem",
      );
      expect(
        decide("operator", "UpdateItem", { TableName: TABLE, Key: key(pk), UpdateExpression: "SET #v = :v" }),
        pk,
      ).toContain("dynamodb:UpdateItem");
    }
    // Its own partitions, but the status index's keys: a queue item read as a waiting session.
    const intoStatusIndex = {
      TableName: TABLE,
      Item: { ...key(queuePk("poison"), "SESSION"), gsi1pk: { S: "STATUS#PENDING#0" }, gsi1sk: { S: "0" } },
    };
    expect(decide("operator", "PutItem", intoStatusIndex)).toMatch(/dynamodb:PutItem .*dynamodb:Attributes/);
    expect(
      decide("operator", "UpdateItem", {
        TableName: TABLE,
        Key: key(queuePk("gpu"), "QUEUE"),
        UpdateExpression: "SET gsi2pk = :t",
      }),
    ).toMatch(/dynamodb:Attributes/);
    expect(
      decide("operator", "DeleteItem", { TableName: TABLE, Key: key(queuePk("gpu"), "QUEUE") }),
    ).toBeUndefined();
    const transaction = (extra: Record<string, unknown>[]) => ({
      TransactItems: [
        { Put: putQueue },
        {
          Update: {
            TableName: TABLE,
            Key: key(retryPolicyPk("infra"), "RETRY_POLICY"),
            UpdateExpression: "ADD usedBy :q",
          },
        },
        ...extra,
      ],
    });
    expect(decide("operator", "TransactWriteItems", transaction([]))).toBeUndefined();
    expect(
      decide(
        "operator",
        "TransactWriteItems",
        transaction([
          {
            Update: {
              TableName: TABLE,
              Key: key(sessionPk("s"), "SESSION"),
              UpdateExpression: "SET #s = :s",
            },
          },
        ]),
      ),
    ).toMatch(/dynamodb:UpdateItem .*LeadingKeys.*SESSION#s/);
  });

  test("given the indexes, then queries pass (keys only), the census's COUNT included", () => {
    for (const g of TABLE_SCHEMA.globalSecondaryIndexes) {
      expect(
        decide("client", "Query", {
          TableName: TABLE,
          IndexName: g.indexName,
          KeyConditionExpression: "#pk = :pk",
          ExpressionAttributeNames: { "#pk": g.partitionKey.name },
          ExpressionAttributeValues: { ":pk": { S: "AGENTS" } },
          Select: "COUNT",
        }),
        g.indexName,
      ).toBeUndefined();
    }
  });
});
