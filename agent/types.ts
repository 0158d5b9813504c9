/**
 * The local agent's vocabulary: what the control plane asks it to run (`KernelLaunch`) and what
 * it reports back (`KernelReport`). Transport-free: whoever wires the agent to EventBridge maps
 * these to and from events.
 */
import type { ServiceBinding } from "../functions/core/service-binding.ts";
import type { TerminationCondition } from "../functions/core/status.ts";

/** One run of one kernel, as the control plane asks for it. */
export interface KernelLaunch {
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly numKernels: number;
  readonly runIndex: number;
  /** argv; the first element is the executable (absolute, relative to the agent's cwd, or on PATH). No shell. */
  readonly command: readonly string[];
  /** The user's environment from the spec. */
  readonly env: Readonly<Record<string, string>>;
  readonly cpu: number;
  readonly memoryMiB: number;
  /** Job id for `CAIRN_JOB_ID` and `CAIRN_TASK_ID`; the session id when absent. */
  readonly jobId?: string;
  /** The task's index and count in its job; the kernel's in its session when absent. */
  readonly taskIndex?: number;
  readonly numTasks?: number;
  /**
   * Which placement of the run this is: a session sent back to PENDING within one run (a stage
   * expiry, a give-up) is placed again with a higher number, and must not be mistaken for a
   * late duplicate of the placement that ended. @default 0
   */
  readonly placement?: number;
  /**
   * start only, for a deployment's replica: the kernel gets a port as CAIRN_PORT (the pinned
   * one, or a free one) and is probed there while it runs (replica-health.ts).
   */
  readonly service?: ServiceBinding;
}

export const KernelReportStatus = {
  /** Preparation has begun (work directory, executable check): Iris's BUILDING. */
  PULLING: "PULLING",
  PREPARED: "PREPARED",
  RUNNING: "RUNNING",
  TERMINATED: "TERMINATED",
  ERROR: "ERROR",
} as const;
export type KernelReportStatus = (typeof KernelReportStatus)[keyof typeof KernelReportStatus];

/** Conditions the agent itself can cause (never Unschedulable, the scheduler's, nor AgentLost, the control plane's). */
export type AgentCondition = Exclude<TerminationCondition, "Unschedulable" | "AgentLost">;

export interface KernelReport {
  readonly agentId: string;
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly runIndex: number;
  /**
   * The placement of the launch that started the kernel, echoed so the control plane can refuse
   * a late report of a placement that is over. Absent when the launch carried none.
   */
  readonly placement?: number;
  readonly status: KernelReportStatus;
  /** Exit status as a container runtime reports it: killed by signal N → 128 + N. */
  readonly exitCode?: number;
  /** Name of the signal that ended the process, e.g. "SIGKILL". */
  readonly signal?: string;
  /** Set when the agent ended the kernel (memory, stop request). */
  readonly condition?: AgentCondition;
  /** Termination message, the agent's reason, or error text. */
  readonly message?: string;
  /**
   * TERMINATED or ERROR of a failed run: how the agent classified the failure
   * (core/retry/failure-categories.ts), or an error no retry can clear (permanent-failures.ts).
   */
  readonly failureCategory?: string;
  readonly atMs: number;
  readonly pid?: number;
}

export type LogStream = "stdout" | "stderr";

export interface LogLine {
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly runIndex: number;
  readonly stream: LogStream;
  readonly text: string;
  readonly atMs: number;
}

export interface AgentCapacity {
  readonly cpu: number;
  readonly memoryMiB: number;
}

export interface StopOptions {
  /** Time between SIGTERM and SIGKILL. @default 5000 */
  readonly graceMs?: number;
  /** Carried on the TERMINATED report. */
  readonly condition?: AgentCondition;
  /** Carried on the TERMINATED report as its message. */
  readonly reason?: string;
}

/** A kernel this agent holds resources for. */
export interface RunningKernel {
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly runIndex: number;
  /** Which placement of the run (0 for the first). */
  readonly placement: number;
  readonly pid: number;
  readonly cpu: number;
  readonly memoryMiB: number;
  readonly startedAtMs: number;
  /** A deployment replica's port (CAIRN_PORT). */
  readonly port?: number;
  /**
   * The run's memory at the last poll, as containment.ts measures it (the cgroup's memory, or
   * its processes' summed resident sets, or their proportional set size once those sum above
   * the request); absent before the first poll.
   */
  readonly rssMiB?: number;
  /** A stop (or memory kill) is under way. */
  readonly stopping: boolean;
  readonly workDir: string;
}

export interface AgentUsage {
  readonly capacity: AgentCapacity;
  readonly allocated: AgentCapacity;
  readonly free: AgentCapacity;
  readonly runningKernels: number;
}

export interface LogPaths {
  readonly workDir: string;
  readonly stdout: string;
  readonly stderr: string;
  /** Both streams interleaved, one JSON object per line: `{"atMs","stream","text"}`. */
  readonly combined: string;
  readonly terminationLog: string;
}

/** Cost of the memory poll, for operators and benchmarks. */
export interface MemoryPollStats {
  readonly ticks: number;
  readonly totalMs: number;
  readonly lastMs: number;
  readonly maxMs: number;
  /** Processes listed in /proc at the last tick. */
  readonly lastProcessCount: number;
  /** Of those, how many were read (new pids and kernel processes; known outsiders are skipped). */
  readonly lastStatReads: number;
}
