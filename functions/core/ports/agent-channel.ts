/** The agents' channel: implemented by functions/adapters/sqs/agent-channel.ts. */
import type { AgentMessage } from "../agent-protocol.ts";

/** One message for one agent's queue. */
export interface AgentDelivery {
  readonly agentId: string;
  readonly message: AgentMessage;
}

/**
 * The agents' channel (docs/agents.md): one durable queue per agent, created when the agent
 * registers. Only the agent reads its queue.
 */
export interface AgentChannelPort {
  /** Creates the agent's queue if it does not exist yet. Idempotent. */
  open(agentId: string): Promise<void>;
  /** Delivers every message to its agent's queue; throws when any could not be delivered. */
  send(deliveries: readonly AgentDelivery[]): Promise<void>;
}
