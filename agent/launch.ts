/**
 * Validation of what the agent is asked to do. The session id becomes a directory name, so it
 * is checked against path traversal here, once.
 */
import { ServiceBindingSchema } from "../functions/core/service-binding.ts";
import { InvalidAgentInputError } from "./errors.ts";
import type { AgentCapacity, KernelLaunch } from "./types.ts";

const MAX_ID_LENGTH = 200;

/** A value that is safe as one path component. */
export function checkPathComponent(field: string, value: unknown): string {
  if (typeof value !== "string" || value.length === 0) {
    throw new InvalidAgentInputError(field, "must be a non-empty string");
  }
  if (value.length > MAX_ID_LENGTH) {
    throw new InvalidAgentInputError(field, `must be at most ${MAX_ID_LENGTH} characters`);
  }
  if (value === "." || value === ".." || /[/\\\0]/.test(value)) {
    throw new InvalidAgentInputError(field, `must not be "." or ".." nor contain "/", "\\" or NUL`);
  }
  return value;
}

export function checkIndex(field: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidAgentInputError(field, "must be an integer >= 0");
  }
  return value;
}

export function checkPositive(field: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new InvalidAgentInputError(field, "must be a finite number > 0");
  }
  return value;
}

export function checkCapacity(field: string, value: AgentCapacity): AgentCapacity {
  if (typeof value !== "object" || value === null) {
    throw new InvalidAgentInputError(field, "must be an object { cpu, memoryMiB }");
  }
  return {
    cpu: checkPositive(`${field}.cpu`, value.cpu),
    memoryMiB: checkPositive(`${field}.memoryMiB`, value.memoryMiB),
  };
}

export function validateLaunch(launch: KernelLaunch): KernelLaunch {
  if (typeof launch !== "object" || launch === null) {
    throw new InvalidAgentInputError("launch", "must be an object");
  }
  checkPathComponent("launch.sessionId", launch.sessionId);
  const kernelIndex = checkIndex("launch.kernelIndex", launch.kernelIndex);
  const numKernels = checkIndex("launch.numKernels", launch.numKernels);
  if (kernelIndex >= numKernels) {
    throw new InvalidAgentInputError(
      "launch.kernelIndex",
      `must be below launch.numKernels (${numKernels}), got ${kernelIndex}`,
    );
  }
  checkIndex("launch.runIndex", launch.runIndex);
  checkPositive("launch.cpu", launch.cpu);
  checkPositive("launch.memoryMiB", launch.memoryMiB);
  if (!Array.isArray(launch.command) || launch.command.length === 0) {
    throw new InvalidAgentInputError("launch.command", "must be a non-empty array of strings");
  }
  launch.command.forEach((arg, i) => {
    if (typeof arg !== "string" || arg.includes("\0")) {
      throw new InvalidAgentInputError(`launch.command[${i}]`, "must be a string without NUL");
    }
  });
  if (launch.command[0] === "") {
    throw new InvalidAgentInputError("launch.command[0]", "must name an executable");
  }
  if (typeof launch.env !== "object" || launch.env === null || Array.isArray(launch.env)) {
    throw new InvalidAgentInputError("launch.env", "must be an object of strings");
  }
  for (const [key, value] of Object.entries(launch.env)) {
    if (key === "" || key.includes("=") || key.includes("\0")) {
      throw new InvalidAgentInputError(
        `launch.env[${JSON.stringify(key)}]`,
        'name must be non-empty, without "=" or NUL',
      );
    }
    if (typeof value !== "string" || value.includes("\0")) {
      throw new InvalidAgentInputError(`launch.env.${key}`, "must be a string without NUL");
    }
  }
  if (launch.jobId !== undefined && (typeof launch.jobId !== "string" || launch.jobId === "")) {
    throw new InvalidAgentInputError("launch.jobId", "must be a non-empty string when given");
  }
  if (launch.taskIndex !== undefined) checkIndex("launch.taskIndex", launch.taskIndex);
  if (launch.numTasks !== undefined) checkPositive("launch.numTasks", launch.numTasks);
  if (launch.taskIndex !== undefined && launch.taskIndex >= (launch.numTasks ?? launch.numKernels)) {
    throw new InvalidAgentInputError("launch.taskIndex", "must be less than numTasks");
  }
  if (launch.service !== undefined) {
    const parsed = ServiceBindingSchema.safeParse(launch.service);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new InvalidAgentInputError(
        ["launch.service", ...(issue?.path ?? []).map(String)].join("."),
        issue?.message ?? "must be a service binding",
      );
    }
  }
  return launch;
}

/** Identifies a kernel slot: at most one run of it is live at a time. */
export function kernelKey(sessionId: string, kernelIndex: number): string {
  return `${sessionId}/${kernelIndex}`;
}

/** Identifies one run of one kernel. */
export function runKey(sessionId: string, kernelIndex: number, runIndex: number): string {
  return `${sessionId}/${kernelIndex}/${runIndex}`;
}

/** Identifies one placement of one run: what the finished-runs memo remembers. */
export function placementKey(launch: {
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly runIndex: number;
  readonly placement?: number;
}): string {
  return `${runKey(launch.sessionId, launch.kernelIndex, launch.runIndex)}#${launch.placement ?? 0}`;
}
