/**
 * The actions of the agent and client policies (lib/agent-access.ts), as plain data with no CDK
 * import, so that the embedded runtime's access rules (local/access.ts) can grant the same.
 * test/cdk-agents.test.ts proves they are exactly what the agent's and the CLI's code send.
 */

/** An agent finds its queue, long-polls it and deletes what it handled (agent/host.ts). */
export const AGENT_QUEUE_ACTIONS = ["sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage"] as const;
/** An agent ships kernel output, one stream per kernel run (agent/log-shipper.ts). */
export const AGENT_LOG_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents"] as const;
/** `cairn --stack NAME` (any command, `cairn agent` too) reads the stack's outputs first. */
export const STACK_READ_ACTIONS = ["cloudformation:DescribeStacks"] as const;
/**
 * The CLI reads sessions, jobs, history and runs, and manages retry policies, queues and the retry
 * configuration (bin/cli/cairn-api.ts). Its transactions hold Put, Update and Delete items only,
 * authorised as PutItem, UpdateItem and DeleteItem.
 */
export const CLIENT_TABLE_ITEM_ACTIONS = [
  "dynamodb:GetItem",
  "dynamodb:BatchGetItem",
  "dynamodb:PutItem",
  "dynamodb:UpdateItem",
  "dynamodb:DeleteItem",
] as const;
/** Histories and runs on the table; status, listing and recent-session rosters on the indexes. */
export const CLIENT_TABLE_QUERY_ACTIONS = ["dynamodb:Query"] as const;
/**
 * `cairn logs` and `submit --stream-logs` read kernel output (bin/cli/kernel-log-reader.ts): which
 * runs' streams exist, one stream forward, or several at once.
 */
export const CLIENT_LOG_ACTIONS = [
  "logs:DescribeLogStreams",
  "logs:GetLogEvents",
  "logs:FilterLogEvents",
] as const;
