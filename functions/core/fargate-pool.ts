/**
 * A queue's Fargate capacity as a pool agent: an Agent item whose capacity is the
 * queue's vCPU quota. Placing a Fargate session on its queue's pool reserves from that quota
 * with the same reservations, releases and pending reasons as an agent's capacity, so
 * placement waits (saying why) instead of letting RunTask fail on the account's quota.
 *
 * A pool has no process behind it: it never registers or heartbeats (the coordinator upserts it
 * from the queue's settings), is never declared lost, and its kernels' reports come from ECS's
 * task events.
 */
import { fnv1a32 } from "./hash.ts";

// model.ts reads pools (isLiveAgent), so this module imports nothing of the model's: a cycle.

/** Every pool's id starts with this; agents may not register under it. */
export const FARGATE_POOL_PREFIX = "fargate_";

/**
 * Fargate's densest task size has 8 GiB per vCPU (FARGATE_TASK_SIZES): a pool with this much
 * memory per vCPU of quota runs out of vCPU first, so only the vCPU quota binds.
 */
export const FARGATE_POOL_MEMORY_MIB_PER_VCPU = 8192;

/**
 * event-fields.ts's AGENT_ID_PATTERN, repeated so that model.ts (isLiveAgent) can read pools
 * without importing the event schemas (which import the model); test/core/fargate-pool.test.ts
 * holds the two equal.
 */
export const POOL_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/;

/** Hex digits of the name's hash in a shortened pool id. */
const HASH_LENGTH = 8;

/**
 * The pool of `queue`: `fargate_<queue>` when that is a valid agent id (1 to 40 of letters,
 * digits, '-', '_'); otherwise the prefix, the name's valid characters cut to fit, and a hash of
 * the whole name, so two queues never share a pool.
 */
export function fargatePoolId(queue: string): string {
  const plain = `${FARGATE_POOL_PREFIX}${queue}`;
  if (POOL_ID_PATTERN.test(plain)) return plain;
  const room = 40 - FARGATE_POOL_PREFIX.length - HASH_LENGTH - 1;
  const kept = queue.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, room);
  const hash = fnv1a32(queue).toString(16).padStart(HASH_LENGTH, "0");
  return `${FARGATE_POOL_PREFIX}${kept}-${hash}`;
}

/** Whether the agent id is a queue's Fargate pool rather than an agent process. */
export function isFargatePool(agentId: string): boolean {
  return agentId.startsWith(FARGATE_POOL_PREFIX);
}

/** What a pool offers: the queue's vCPU quota, and memory that never binds before it. */
export function fargatePoolCapacity(settings: { readonly vcpuQuota: number }): {
  readonly cpu: number;
  readonly memoryMiB: number;
} {
  return {
    cpu: settings.vcpuQuota,
    memoryMiB: settings.vcpuQuota * FARGATE_POOL_MEMORY_MIB_PER_VCPU,
  };
}

/** Why an agent registration or heartbeat naming a pool's id is refused. */
export function poolIdRefusal(agentId: string): string | undefined {
  if (!isFargatePool(agentId)) return undefined;
  return (
    `detail.agentId: ${agentId} starts with "${FARGATE_POOL_PREFIX}", which is reserved for ` +
    `queues' Fargate capacity: an agent must take another id`
  );
}
