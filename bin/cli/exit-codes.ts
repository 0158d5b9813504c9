/** The CLI's exit codes: part of its interface (scripts branch on them), listed in `--help`. */
export const ExitCode = {
  Ok: 0,
  /**
   * `submit --wait`: the session (or job) ended without succeeding (failed or cancelled);
   * `deployment create|scale --wait`: the deployment was destroyed before it was READY.
   */
  SessionDidNotSucceed: 1,
  /**
   * Bad arguments, a spec or policy that does not parse or validate (nothing was sent), or a
   * change that clashes with what is stored (a name taken, a policy in use or unknown).
   */
  Usage: 2,
  /** No such session, job, task, deployment, policy or queue; `logs`: the task has not started a run yet. */
  NotFound: 3,
  /** No runtime file, connection refused, no credentials, a missing table, bus or stack. */
  Unreachable: 4,
  /**
   * `submit --wait --timeout`: the session had not ended in time (as coreutils' timeout);
   * `deployment … --wait --timeout`: the deployment was not READY (or DESTROYED) in time.
   */
  WaitTimedOut: 124,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** One line per code, in the order the help shows them. */
export const EXIT_CODE_HELP: readonly (readonly [ExitCode, string])[] = [
  [ExitCode.Ok, "ok"],
  [
    ExitCode.SessionDidNotSucceed,
    "the session or job did not succeed (submit --wait: failed, cancelled, killed, unschedulable; " +
      "deployment --wait: destroyed before it was READY)",
  ],
  [
    ExitCode.Usage,
    "usage error, an invalid spec or policy, or a conflict (exists, in use); nothing was changed",
  ],
  [
    ExitCode.NotFound,
    "session, job, task, deployment, retry policy or queue not found (logs: the task has not started yet)",
  ],
  [ExitCode.Unreachable, "cannot reach Cairn (no runtime, connection refused, missing stack/table/bus)"],
  [
    ExitCode.WaitTimedOut,
    "submit --wait --timeout (or a deployment command's): the wait timed out (what was waited for keeps going)",
  ],
];
