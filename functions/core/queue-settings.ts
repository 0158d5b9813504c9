/**
 * A queue's Fargate settings (the executor that runs its kernels as ECS tasks), validated once where an operator writes them (the CLI,
 * the store's write) and again when a stored queue is read back, with the same messages.
 */
import * as z from "zod";
import type { QueueFargateSettings } from "./model.ts";
import { safeParseWithIssues, strictObject } from "./spec.ts";
import type { ValidationIssue } from "./validation-issue.ts";

/** ECS's two Fargate capacity providers; FARGATE_SPOT's interruptions are Cairn preemptions. */
export const CapacityProvider = { FARGATE: "FARGATE", FARGATE_SPOT: "FARGATE_SPOT" } as const;
export type CapacityProvider = (typeof CapacityProvider)[keyof typeof CapacityProvider];

export const QueueFargateSettingsSchema = strictObject({
  capacityProvider: z.enum(CapacityProvider),
  /**
   * vCPUs the queue's Fargate kernels may hold at once; placement waits (with a pending reason)
   * rather than let RunTask fail on the account's Fargate vCPU quota.
   */
  vcpuQuota: z.number().gt(0),
}).readonly();

export type { QueueFargateSettings };

// The schema and the model's type must agree exactly (as spec.ts checks for the spec).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
type _SettingsSchemaMatchesModel = Assert<
  Same<z.output<typeof QueueFargateSettingsSchema>, QueueFargateSettings>
>;

export type QueueFargateSettingsResult =
  | { readonly ok: true; readonly settings: QueueFargateSettings }
  | { readonly ok: false; readonly issues: readonly ValidationIssue[] };

/** Every problem in `input`, each path under `fargate.` as the queue names the field. */
export function parseQueueFargateSettings(input: unknown): QueueFargateSettingsResult {
  const result = safeParseWithIssues(QueueFargateSettingsSchema, input);
  if (result.success) return { ok: true, settings: result.data };
  return {
    ok: false,
    issues: result.issues.map((issue) => ({
      path: issue.path === "(root)" ? "fargate" : `fargate.${issue.path}`,
      message: issue.message,
    })),
  };
}

/** What an operator changes: any of the fields; on a queue without settings, FARGATE is assumed. */
export interface QueueFargateChanges {
  readonly capacityProvider?: string;
  readonly vcpuQuota?: number;
}

/**
 * The settings after `changes` (from `cairn queue create|update`): the changes over the current
 * settings, or over on-demand FARGATE for a queue that has none; `null` removes them. The vCPU
 * quota has no default: a Fargate queue must say how much it may run.
 */
export function changeQueueFargateSettings(
  current: QueueFargateSettings | undefined,
  changes: QueueFargateChanges | null | undefined,
): QueueFargateSettingsResult | { readonly ok: true; readonly settings: undefined } {
  if (changes === null) return { ok: true, settings: undefined };
  if (changes === undefined) return { ok: true, settings: current };
  return parseQueueFargateSettings({
    capacityProvider: CapacityProvider.FARGATE,
    ...current,
    ...Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)),
  });
}
