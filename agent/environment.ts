/**
 * A kernel's environment: a minimal inherited base, then the user's spec env, then Cairn's
 * identity variables (last, so a spec cannot impersonate another task nor move a replica's port).
 */
import { taskIdentityEnv } from "../functions/core/task-env.ts";
import type { KernelLaunch } from "./types.ts";

/** Inherited from the agent's environment when set; everything else is left behind. */
export const INHERITED_ENV_NAMES = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "LC_ALL",
  "LC_CTYPE",
  "TZ",
  "TMPDIR",
  "TERM",
] as const;

export const DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";

export interface KernelIdentity {
  readonly agentId: string;
  readonly terminationLogPath: string;
  /** A deployment replica's port (CAIRN_PORT): where it listens and is probed. */
  readonly port?: number | undefined;
}

export function buildKernelEnv(
  launch: KernelLaunch,
  identity: KernelIdentity,
  baseEnv: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV_NAMES) {
    const value = baseEnv[name];
    if (value !== undefined) env[name] = value;
  }
  env.PATH ??= DEFAULT_PATH;
  Object.assign(env, launch.env);
  env.CAIRN_SESSION_ID = launch.sessionId;
  const place = {
    jobId: launch.jobId ?? launch.sessionId,
    taskIndex: launch.taskIndex ?? launch.kernelIndex,
    numTasks: launch.numTasks ?? launch.numKernels,
  };
  // CAIRN_JOB_ID, CAIRN_TASK_*, and Iris's IRIS_TASK_ID, IRIS_TASK_INDEX, IRIS_NUM_TASKS.
  for (const [name, value] of taskIdentityEnv(place)) env[name] = value;
  env.CAIRN_RUN_INDEX = String(launch.runIndex);
  env.CAIRN_AGENT_ID = identity.agentId;
  env.CAIRN_TERMINATION_LOG = identity.terminationLogPath;
  if (identity.port !== undefined) env.CAIRN_PORT = String(identity.port);
  return env;
}
