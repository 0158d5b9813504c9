/**
 * What people outside the control plane may do to the table, as plain data: the statements of
 * the stack's ClientPolicy and OperatorPolicy (lib/agent-access.ts) and of the embedded runtime's
 * DynamoDB endpoint (local/access.ts), so both enforce one text. Resources are named by kind
 * (`table`, `indexes`); conditions are IAM JSON condition blocks, written as IAM reads them.
 *
 * The table is single-table (docs/data-model.md), so rights follow partition key prefixes
 * (`dynamodb:LeadingKeys`, the partition key of every item a request names):
 *
 * - A submitter (ClientPolicy) reads what the CLI shows — sessions with their kernels, history
 *   and runs, jobs and drafts, rejected submissions, queues, retry policies, failure categories,
 *   the retry configuration, templates, deployments — and writes nothing: submission, cancel, drafts and
 *   deployments are events the functions validate.
 * - Agents are readable for `cairn dashboard`, but only the attributes it shows
 *   (`dynamodb:Attributes`, with a projection required): an agent item also holds the key its
 *   agent signs reports with, which only the functions and that agent may know.
 * - An operator (OperatorPolicy, attached beside ClientPolicy) also writes what operators own:
 *   templates, retry policies, failure categories, queues and the retry configuration.
 * - Nobody outside writes sessions, kernels, agents, allocations or de-duplication records.
 *
 * test/client-access.test.ts holds these prefixes to the store's keys and the agent attributes to
 * its codec; test/cdk-agents.test.ts holds the policies to what the CLI sends.
 */

/** Where a statement applies: the table's items, or its (keys-only) indexes. */
export type TableResourceKind = "table" | "indexes";

/** An IAM condition block: operator → condition key → value(s), all of which must hold. */
export type IamConditionBlock = Readonly<
  Record<string, Readonly<Record<string, string | readonly string[]>>>
>;

export interface TableStatement {
  readonly sid: string;
  readonly actions: readonly string[];
  readonly resources: readonly TableResourceKind[];
  readonly condition?: IamConditionBlock;
}

/** Partitions a client reads whole items of: every item the CLI shows but agents. */
export const CLIENT_READ_KEY_PREFIXES = [
  "SESSION#",
  "JOB#",
  "REJECTION#",
  "QUEUE#",
  "RETRY_POLICY#",
  "CONFIG#",
  "TEMPLATE#",
  "FAILURE_CATEGORY#",
  "DEPLOYMENT#",
  "DEPLOYMENT_HISTORY#",
] as const;

/** Agent partitions: readable only through a projection of AGENT_READABLE_ATTRIBUTES. */
export const AGENT_KEY_PREFIX = "AGENT#";

/**
 * What an agent item shows: everything the store decodes (item-codec.ts agentFromItem) but its
 * signing key, and the table's keys (IAM requires them named where dynamodb:Attributes is used).
 * The store lists agents with exactly this projection, for every reader.
 */
export const AGENT_READABLE_ATTRIBUTES = [
  "pk",
  "sk",
  "id",
  "capacity",
  "free",
  "lastHeartbeatAtMs",
  "version",
  "labels",
  "incarnation",
  "registeredAtMs",
  "lostAtMs",
  "draining",
] as const;

/**
 * Partitions an operator writes: templates, retry policies, failure categories, queues, the retry
 * configuration.
 */
export const OPERATOR_WRITE_KEY_PREFIXES = [
  "TEMPLATE#",
  "RETRY_POLICY#",
  "FAILURE_CATEGORY#",
  "QUEUE#",
  "CONFIG#",
] as const;

const LEADING_KEYS = "dynamodb:LeadingKeys";
const prefixed = (prefixes: readonly string[]): string[] => prefixes.map((p) => `${p}*`);

/**
 * ClientPolicy's table statements. Every one names the partitions it allows, and requires the
 * request to name some (`Null: false`): `ForAllValues` alone also holds for an empty set.
 */
export const CLIENT_TABLE_STATEMENTS: readonly TableStatement[] = [
  {
    sid: "ReadWhatTheCliShows",
    actions: ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"],
    resources: ["table"],
    condition: {
      "ForAllValues:StringLike": { [LEADING_KEYS]: prefixed(CLIENT_READ_KEY_PREFIXES) },
      Null: { [LEADING_KEYS]: "false" },
    },
  },
  {
    // AWS's pattern for reading some attributes only: the projection must be given (Select, when
    // the request has one, is SPECIFIC_ATTRIBUTES) and name allowed attributes only.
    sid: "ReadAgentsWithoutTheirKeys",
    actions: ["dynamodb:GetItem", "dynamodb:BatchGetItem"],
    resources: ["table"],
    condition: {
      "ForAllValues:StringLike": { [LEADING_KEYS]: [`${AGENT_KEY_PREFIX}*`] },
      "ForAllValues:StringEquals": { "dynamodb:Attributes": [...AGENT_READABLE_ATTRIBUTES] },
      StringEqualsIfExists: { "dynamodb:Select": "SPECIFIC_ATTRIBUTES" },
      Null: { [LEADING_KEYS]: "false", "dynamodb:Attributes": "false" },
    },
  },
  {
    // Every index projects keys only (table-schema.ts), so an index query returns keys and no
    // attribute: the items themselves are then read under the statements above.
    sid: "QueryTheKeysOnlyIndexes",
    actions: ["dynamodb:Query"],
    resources: ["indexes"],
  },
];

/**
 * The attributes of what operators own (resource-items.ts, template-items.ts,
 * failure-category-items.ts): all an operator's write may name. The status and target indexes'
 * keys (`gsi1pk`, `gsi1sk`, `gsi2pk`) are not among them: every scheduling pass reads those
 * indexes as the sessions waiting in a stage, so an operator's item there would be read as a
 * session (and stall every pass). The listings index's key (`gsi3pk`) is, since operators' items
 * are listed there: its readers keep only the items of the partitions each roster lists.
 */
export const OPERATOR_WRITABLE_ATTRIBUTES = [
  "pk",
  "sk",
  "type",
  "name",
  "document",
  "version",
  "createdAtMs",
  "updatedAtMs",
  "priority",
  "retryPolicies",
  "fargate",
  "usedBy",
  "gsi3pk",
  "gsi3sk",
] as const;

/**
 * OperatorPolicy's table statement: writes to what operators own, naming only their attributes
 * (a delete names none, and `ForAllValues` holds for an empty set), nothing else.
 */
export const OPERATOR_TABLE_STATEMENTS: readonly TableStatement[] = [
  {
    sid: "WriteWhatOperatorsOwn",
    actions: ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"],
    resources: ["table"],
    condition: {
      "ForAllValues:StringLike": { [LEADING_KEYS]: prefixed(OPERATOR_WRITE_KEY_PREFIXES) },
      "ForAllValues:StringEquals": { "dynamodb:Attributes": [...OPERATOR_WRITABLE_ATTRIBUTES] },
      Null: { [LEADING_KEYS]: "false" },
    },
  },
];

/**
 * What the docs tell CLI users to run on a session's execution (`aws stepfunctions
 * describe-execution`, `get-execution-history`, docs/deploy.md), granted on this stack's
 * executions only: every execution of its three state machines.
 */
export const CLIENT_EXECUTION_ACTIONS = ["states:DescribeExecution", "states:GetExecutionHistory"] as const;
