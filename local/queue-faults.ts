/**
 * The queues' fault switch: batches a queue fails as a failed invocation would (the function
 * threw or timed out before it did anything), so what SQS and Lambda do with them — the batch
 * stays in flight until its visibility timeout, then comes back — is exercised end to end.
 * Given as `RuntimeOptions.queueFaults` or as JSON in `CAIRN_QUEUE_FAULTS`, by queue name:
 *
 *   CAIRN_QUEUE_FAULTS='{"PlacementQueue":[{"bodyContains":"s-gpu-1","times":1}]}'
 */
import { QUEUES, type QueueName } from "../functions/topology/index.ts";
import type { QueueFault } from "./queue.ts";

export type QueueFaults = Readonly<Partial<Record<QueueName, readonly QueueFault[]>>>;

export class QueueFaultConfigError extends Error {
  override readonly name = "QueueFaultConfigError";
  constructor(field: string, reason: string) {
    super(`${field}: ${reason}`);
  }
}

export function queueFaultsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): QueueFaults | undefined {
  const text = env["CAIRN_QUEUE_FAULTS"];
  if (text === undefined || text.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new QueueFaultConfigError("CAIRN_QUEUE_FAULTS", `is not JSON: ${(error as Error).message}`);
  }
  return parseQueueFaults(value, "CAIRN_QUEUE_FAULTS");
}

/** Checks every field, naming the one that is wrong. */
export function parseQueueFaults(value: unknown, field: string): QueueFaults {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new QueueFaultConfigError(field, "must be an object of queue name → list of faults");
  }
  const names = new Set<string>(QUEUES.map((q) => q.name));
  const out: Partial<Record<QueueName, QueueFault[]>> = {};
  for (const [queue, faults] of Object.entries(value)) {
    if (!names.has(queue)) {
      throw new QueueFaultConfigError(
        `${field}.${queue}`,
        `is not a queue (one of ${[...names].join(", ")})`,
      );
    }
    if (!Array.isArray(faults))
      throw new QueueFaultConfigError(`${field}.${queue}`, "must be a list of faults");
    out[queue as QueueName] = faults.map((f: unknown, i) => {
      const at = `${field}.${queue}[${i}]`;
      if (typeof f !== "object" || f === null || Array.isArray(f)) {
        throw new QueueFaultConfigError(at, "must be an object");
      }
      const { bodyContains, times, ...rest } = f as Record<string, unknown>;
      const unknownKey = Object.keys(rest)[0];
      if (unknownKey !== undefined) {
        throw new QueueFaultConfigError(`${at}.${unknownKey}`, "is not a fault field (bodyContains, times)");
      }
      if (bodyContains !== undefined && (typeof bodyContains !== "string" || bodyContains === "")) {
        throw new QueueFaultConfigError(`${at}.bodyContains`, "must be a non-empty string");
      }
      if (times !== undefined && (!Number.isInteger(times) || (times as number) < 1)) {
        throw new QueueFaultConfigError(
          `${at}.times`,
          `must be an integer of 1 or more, got ${JSON.stringify(times)}`,
        );
      }
      return {
        ...(typeof bodyContains === "string" ? { bodyContains } : {}),
        ...(times !== undefined ? { times: times as number } : {}),
      };
    });
  }
  return out;
}
