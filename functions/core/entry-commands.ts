/**
 * The agents' command a stage's entry sends once its write has landed: the command of the
 * lifecycle handler whose success led into the stage. PrepareSessions' success (SCHEDULED →
 * PREPARING) sends `prepare`; StartSessions' success (PREPARED → CREATING) sends `start`.
 *
 * The handler decides (the seed's table: PrepareSessions targets SCHEDULED, StartSessions
 * PREPARED); the entry that records its success sends. Sent by the handler's own pass, a fast
 * agent's reports (PULLING, PREPARED; RUNNING, the exit) could reach the control plane while the
 * Step Functions hop to the next stage was still under way, and the report's kernel patch and the
 * entry, which mirrors PREPARING or CREATING onto the kernel, then collided on the kernel's item:
 * whichever wrote second read again and wrote again. Sent after the entry, no report of the
 * command can precede the write it would race.
 *
 * A Fargate session has no agent to command: its task definition is ensured and its tasks
 * started by the handlers themselves (ECS), so nothing is sent on entry.
 */
import { executorOf, Executor } from "./fargate.ts";
import { LifecycleHandlerName } from "./handlers.ts";
import type { SessionSpec, StageTransition } from "./model.ts";
import { SchedulingResult } from "./scheduling.ts";
import { SessionStatus } from "./status.ts";
import { KernelAction } from "./agent-protocol.ts";

export type EntryCommand = typeof KernelAction.prepare | typeof KernelAction.start;

const SENT_ON_ENTRY: readonly {
  readonly handler: LifecycleHandlerName;
  readonly to: SessionStatus;
  readonly action: EntryCommand;
}[] = [
  {
    handler: LifecycleHandlerName.PrepareSessions,
    to: SessionStatus.PREPARING,
    action: KernelAction.prepare,
  },
  { handler: LifecycleHandlerName.StartSessions, to: SessionStatus.CREATING, action: KernelAction.start },
];

/** The command the entry of `transition.to` sends to the session's kernels, if any. */
export function entryCommand(
  transition: Pick<StageTransition, "to" | "handler" | "result">,
  spec: Pick<SessionSpec, "executor">,
): EntryCommand | undefined {
  if (transition.result !== SchedulingResult.SUCCESS) return undefined;
  if (executorOf(spec) !== Executor.agent) return undefined;
  return SENT_ON_ENTRY.find((r) => r.handler === transition.handler && r.to === transition.to)?.action;
}
