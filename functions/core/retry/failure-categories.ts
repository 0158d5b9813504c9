/**
 * How an agent classifies a kernel's failure into a category, for retry rules'
 * `onFailureCategory` and for telling at a glance why runs end.
 *
 * Armada's proposal leaves the categories to the executor: "The executor classifies failures into named categories; retry policies can match on them." Its only names,
 * `cuda_error` and `infiniband_error`, are a GPU cluster's own, read from termination messages,
 * which no exit code reveals. What an agent can always classify is what Armada's rules match
 * on besides: the conditions ("OOMKilled | Container exceeded memory limit", "Evicted", "Preempted",
 * "DeadlineExceeded | Pod exceeded activeDeadlineSeconds") and the exit code, where a process
 * killed by signal N exits 128 + N (Armada's own example retries `values: [137]`, SIGKILL).
 * This table is that classification, first row that matches wins; `oom` and `user_error` are the
 * names Armada's categorizer gives an OOM kill and an `exit 1`.
 *
 * Only a failed run gets a category. Armada's proposal: "Exit code 0 is the proto3 default ("not set") and
 * never matches any exit code rule"; so an exit 0 without a condition has none, and neither has
 * a run the control plane asked the agent to stop without a condition (a cancel, a gang
 * sibling's failure): that end is the control plane's decision, named by the run's outcome
 * (KILLED, WORKER_FAILED), not a failure of the kernel.
 *
 * Pure: the agent (agent/local-agent.ts) calls it on each TERMINATED or run-ending ERROR report.
 */
import type { TerminationCondition } from "../status.ts";
import { PermanentFailureCategory } from "./permanent-failures.ts";

export const FailureCategory = {
  /** The agent killed the run above its memory request, or the kernel's OOM killer did. */
  Oom: "oom",
  /** Stopped at its run-time limit (RUNNING's timeout). */
  DeadlineExceeded: "deadline_exceeded",
  /** Stopped because its agent drained or was fenced. */
  Evicted: "evicted",
  /** Stopped for a higher-priority session. */
  Preempted: "preempted",
  /** SIGKILL from outside the agent's own stops (exit 137): an OOM killer of the host, `kill -9`. */
  Killed: "killed",
  /** SIGTERM, SIGINT or SIGHUP (exit 143, 130, 129) that no stop of the agent sent. */
  Terminated: "terminated",
  /** A fault signal with a core dump: SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGQUIT, SIGSYS. */
  Crashed: "crashed",
  /** Any other signal (SIGUSR1, SIGPIPE, SIGALRM…). */
  Signaled: "signaled",
  /** Exit 126: a command the program ran (a shell's) could not be executed. */
  CommandNotExecutable: "command_not_executable",
  /** Exit 127: a command the program ran (a shell's) was not found. */
  CommandNotFound: "command_not_found",
  /** Any other non-zero exit: the program said it failed. */
  UserError: "user_error",
  /** ERROR: the run could not start (no capacity left, the agent shutting down, spawn failed). */
  StartFailed: "start_failed",
} as const;
export type FailureCategory = (typeof FailureCategory)[keyof typeof FailureCategory];

/** Conditions an agent reports (Unschedulable is the scheduler's, AgentLost the control plane's). */
export type ReportedCondition = Exclude<TerminationCondition, "Unschedulable" | "AgentLost">;

/** What the agent knows of how a run ended. */
export interface FailureEvidence {
  /** TERMINATED: the process exited; ERROR: the run could not start. */
  readonly status: "TERMINATED" | "ERROR";
  /** As a container runtime reports it: killed by signal N → 128 + N. */
  readonly exitCode?: number;
  /** The signal's name, e.g. "SIGKILL", when one ended the process. */
  readonly signal?: string;
  readonly condition?: ReportedCondition;
  /** The agent was told to stop the run (a stop command), whatever condition it carried. */
  readonly stopRequested?: boolean;
  /** ERROR: a category no retry can clear, already known (retry/permanent-failures.ts). */
  readonly permanent?: PermanentFailureCategory;
}

/** Signal numbers as Linux has them, for the signals the table names. */
const SIGNAL_NUMBERS = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGSEGV: 11,
  SIGTERM: 15,
  SIGSYS: 31,
} as const;
type NamedSignal = keyof typeof SIGNAL_NUMBERS;
/** The highest signal number Linux has (SIGRTMAX): exit codes above 128 + it are plain exits. */
const MAX_SIGNAL = 64;

/** The permanent row's category: the one the ERROR carries (retry/permanent-failures.ts). */
const AS_REPORTED = "(as reported)";

/** One row of the table, as docs/retries.md shows it. */
export interface FailureCategoryRow {
  /** What the row matches, in words. */
  readonly when: string;
  /** undefined: the run did not fail, or its failure is not the kernel's: no category. */
  readonly category: FailureCategory | typeof AS_REPORTED | undefined;
}

const signalRow = (signals: readonly NamedSignal[], category: FailureCategory): FailureCategoryRow => ({
  when: `signal ${signals.join(", ")} (exit ${signals.map((s) => 128 + SIGNAL_NUMBERS[s]).join(", ")})`,
  category,
});

const KILLED: readonly NamedSignal[] = ["SIGKILL"];
const TERMINATED: readonly NamedSignal[] = ["SIGTERM", "SIGINT", "SIGHUP"];
const CRASHED: readonly NamedSignal[] = [
  "SIGSEGV",
  "SIGBUS",
  "SIGILL",
  "SIGFPE",
  "SIGABRT",
  "SIGTRAP",
  "SIGQUIT",
  "SIGSYS",
];

/** The table, in the order it is read: the first row that matches decides. */
export const FAILURE_CATEGORY_TABLE = {
  permanent: {
    when: "ERROR with a category no retry can clear (executable_not_found, arguments_too_large)",
    category: AS_REPORTED,
  },
  error: { when: "ERROR: the run could not start", category: FailureCategory.StartFailed },
  oomKilled: { when: "condition OOMKilled", category: FailureCategory.Oom },
  deadlineExceeded: { when: "condition DeadlineExceeded", category: FailureCategory.DeadlineExceeded },
  evicted: { when: "condition Evicted", category: FailureCategory.Evicted },
  preempted: { when: "condition Preempted", category: FailureCategory.Preempted },
  stopRequested: {
    when: "stopped on request, no condition (a cancel, a sibling's failure)",
    category: undefined,
  },
  exitZero: { when: "exit code 0, no signal", category: undefined },
  killed: signalRow(KILLED, FailureCategory.Killed),
  terminated: signalRow(TERMINATED, FailureCategory.Terminated),
  crashed: signalRow(CRASHED, FailureCategory.Crashed),
  otherSignal: {
    when: `any other signal (or an exit code 129 to ${128 + MAX_SIGNAL} without one: 128 + N)`,
    category: FailureCategory.Signaled,
  },
  notExecutable: { when: "exit code 126", category: FailureCategory.CommandNotExecutable },
  notFound: { when: "exit code 127", category: FailureCategory.CommandNotFound },
  otherExit: { when: "any other non-zero exit code", category: FailureCategory.UserError },
} as const satisfies Record<string, FailureCategoryRow>;
export type FailureCategoryRowName = keyof typeof FAILURE_CATEGORY_TABLE;

/** A condition the agent set decides alone, whatever the exit code (a condition added is a compile error here). */
const CONDITION_ROW: Readonly<Record<ReportedCondition, FailureCategoryRowName>> = {
  OOMKilled: "oomKilled",
  DeadlineExceeded: "deadlineExceeded",
  Evicted: "evicted",
  Preempted: "preempted",
};

/** The row that decides `evidence`'s category. */
export function failureCategoryRow(evidence: FailureEvidence): FailureCategoryRowName {
  if (evidence.status === "ERROR") return evidence.permanent !== undefined ? "permanent" : "error";
  if (evidence.condition !== undefined) return CONDITION_ROW[evidence.condition];
  if (evidence.stopRequested === true) return "stopRequested";
  const signal = signalOf(evidence);
  if (signal === undefined) {
    const code = evidence.exitCode ?? 0;
    if (code === 0) return "exitZero";
    if (code === 126) return "notExecutable";
    if (code === 127) return "notFound";
    return "otherExit";
  }
  if (signalIn(signal, KILLED)) return "killed";
  if (signalIn(signal, TERMINATED)) return "terminated";
  if (signalIn(signal, CRASHED)) return "crashed";
  return "otherSignal";
}

/** The category of a failed run, or undefined when it did not fail (see the table). */
export function classifyFailure(
  evidence: FailureEvidence,
): FailureCategory | PermanentFailureCategory | undefined {
  const { category } = FAILURE_CATEGORY_TABLE[failureCategoryRow(evidence)];
  return category === AS_REPORTED ? evidence.permanent : category;
}

/** The signal that ended the process: its name, or its number read off an exit code 129…192. */
function signalOf(evidence: FailureEvidence): string | number | undefined {
  if (evidence.signal !== undefined) return evidence.signal;
  const code = evidence.exitCode;
  if (code !== undefined && code > 128 && code <= 128 + MAX_SIGNAL) return code - 128;
  return undefined;
}

function signalIn(signal: string | number, names: readonly NamedSignal[]): boolean {
  return names.some((name) => name === signal || SIGNAL_NUMBERS[name] === signal);
}

// Re-exported so callers need one import for every category an agent sets.
export { PermanentFailureCategory };
