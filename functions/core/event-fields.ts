/**
 * Field schemas shared by the bus's event contracts (events.ts) and the agent channel's
 * messages (agent-protocol.ts).
 */
import * as z from "zod";
import { ID_PATTERN, ID_PATTERN_MESSAGE, SPEC_LIMITS, memoryMiBSchema, strictObject } from "./spec.ts";

export { LABEL_KEY_PATTERN, labelsSchema } from "./spec.ts";
import { TerminationCondition } from "./status.ts";

/** Longest free-text message carried in an event (kernel messages, cancel reasons). */
export const MAX_MESSAGE_LENGTH = 4096;

/** The session (or job) the event is about; also the name of its lifecycle execution. */
export const sessionIdSchema = z.string().regex(ID_PATTERN, { error: ID_PATTERN_MESSAGE });
/** Agent ids name the agent's queue (`<prefix><agentId>`), so SQS's alphabet: letters, digits, '-', '_'. */
export const AGENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/;
/** The agent: 1 to 40 letters, digits, '-', '_' (it names the agent's queue). */
export const agentIdSchema = z.string().regex(AGENT_ID_PATTERN, {
  error: "must be 1 to 40 letters, digits, '-' or '_', starting with a letter or digit",
});
/** When, in milliseconds since the Unix epoch, by the sender's clock. */
export const epochMsSchema = z.number().int().min(0);
/** The kernel's index in its session (a task's index in a co-scheduled job), from 0. */
export const kernelIndexSchema = z
  .number()
  .int()
  .min(0)
  .max(SPEC_LIMITS.replicas.max - 1);
/** The run (attempt) of the session, from 0: a retried session runs again as the next index. */
export const runIndexSchema = z.number().int().min(0);
/**
 * Which placement of the run, from 0: a session sent back to PENDING within a run (a stage
 * expiry, a give-up, an agent lost before RUNNING) is placed again with a higher number.
 */
export const placementSchema = z.number().int().min(0);
/** Free text for people: at most 4,096 characters. */
export const messageSchema = z.string().max(MAX_MESSAGE_LENGTH);
/** Why a kernel ended, when something ended it (Armada's termination conditions). */
export const conditionSchema = z.enum(TerminationCondition);
/** Conditions an agent may report: AgentLost is the control plane's verdict, Unschedulable the scheduler's. */
export const reportedConditionSchema = z.enum(TerminationCondition).exclude(["AgentLost", "Unschedulable"]);

/** A fresh id per agent process start: lowercase letters, digits and '-', 8 to 64. */
export const incarnationSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{7,63}$/, { error: "must be 8 to 64 lowercase letters, digits or '-'" });

/** HMAC-SHA256 of the signing payload (agent-protocol.ts), lowercase hex. */
export const signatureSchema = z
  .string()
  .regex(/^[0-9a-f]{64}$/, { error: "must be 64 lowercase hex digits (HMAC-SHA256)" });

/** What an agent offers: cpu (fractions allowed) and memory in MiB. */
export const capacitySchema = strictObject({ cpu: z.number().gt(0), memoryMiB: memoryMiBSchema });
