/**
 * Iris's TaskState proto enum (Iris's table: State | Proto Value), and what in Cairn maps to
 * each value: the task state table in code, shown in docs/jobs.md (test/core/task-state-proto.test.ts
 * compares them row for row) and carried beside the state's name in the CLI's JSON.
 *
 * TASK_STATE_UNSPECIFIED (0) is proto3's default zero value — Iris: "Default zero value;
 * never used in practice". Nothing in Cairn maps to it: every task's state is read off its
 * session and kernel (jobs.ts), and a task whose session is not stored yet is PENDING; so it is
 * in this table but never in TaskState, an event or an output.
 */
import { TaskState } from "./status.ts";

/** The proto enum's zero value, which no Cairn task is ever in. */
export const TASK_STATE_UNSPECIFIED = "UNSPECIFIED";

/** A value of Iris's TaskState proto enum, by its name without the `TASK_STATE_` prefix. */
export type ProtoTaskState = typeof TASK_STATE_UNSPECIFIED | TaskState;

export interface TaskStateProtoRow {
  readonly state: ProtoTaskState;
  /** The proto enum's constant: `TASK_STATE_<state>`. */
  readonly protoName: `TASK_STATE_${ProtoTaskState}`;
  readonly proto: number;
  /** What in Cairn puts a task in this state (jobs.ts), or why nothing does. */
  readonly cairn: string;
}

const row = (state: ProtoTaskState, proto: number, cairn: string): TaskStateProtoRow => ({
  state,
  protoName: `TASK_STATE_${state}`,
  proto,
  cairn,
});

/** In Iris's order. Keyed by state, so a TaskState without a row is a compile error. */
export const TASK_STATE_PROTO: Readonly<Record<ProtoTaskState, TaskStateProtoRow>> = {
  UNSPECIFIED: row(
    TASK_STATE_UNSPECIFIED,
    0,
    "nothing: a task's state is always read off its session and kernel (one not stored yet is PENDING)",
  ),
  PENDING: row(
    TaskState.PENDING,
    1,
    "the session is PENDING (or not stored yet): waiting to be placed, or requeued",
  ),
  ASSIGNED: row(TaskState.ASSIGNED, 9, "the kernel is SCHEDULED: placed on an agent, not yet preparing"),
  BUILDING: row(TaskState.BUILDING, 2, "the kernel is PREPARING, PULLING, PREPARED or CREATING"),
  RUNNING: row(TaskState.RUNNING, 3, "the kernel is RUNNING or TERMINATING"),
  SUCCEEDED: row(TaskState.SUCCEEDED, 4, "the kernel's run ended with exit code 0"),
  FAILED: row(TaskState.FAILED, 5, "the kernel's run failed: a non-zero exit code, or it could not start"),
  KILLED: row(
    TaskState.KILLED,
    6,
    "the session was cancelled (a user, the job's failure, a parent's end), or its run-time limit hit",
  ),
  WORKER_FAILED: row(
    TaskState.WORKER_FAILED,
    7,
    "the kernel's agent was lost or evicted it, or a co-scheduled sibling's failure stopped it",
  ),
  UNSCHEDULABLE: row(
    TaskState.UNSCHEDULABLE,
    8,
    "the session's PENDING stage expired or gave up: never placed",
  ),
  PREEMPTED: row(TaskState.PREEMPTED, 10, "a higher-priority session preempted the kernel's run"),
};

export const TASK_STATE_PROTO_TABLE: readonly TaskStateProtoRow[] = Object.values(TASK_STATE_PROTO);

/** The proto value of a task state, as the JSON outputs carry it beside the name. */
export function taskStateProto(state: TaskState): number {
  return TASK_STATE_PROTO[state].proto;
}
