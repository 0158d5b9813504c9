/**
 * How states look. Task states are Iris's task states: the display name is the state in lower case
 * (`stateToName`: TASK_STATE_WORKER_FAILED → worker_failed) and its CSS class is
 * `status-<name>`, coloured exactly as Iris's table (dashboard/static/dashboard.css). Job
 * states use the same classes (killed and the rest share their task state's name). Session
 * statuses (Sokovan's) have classes of their own, `session-<status>`, and so do deployments'
 * and routes' (`deployment-<status>`, `route-<status>`), in the same palette.
 */
import type { DeploymentStatus, RouteStatus } from "../functions/core/deployments/tables.ts";
import type { JobState, SessionStatus, TaskState } from "../functions/core/status.ts";
import { html, type Html } from "./html.ts";

/** Iris: display name = the state without its prefix, lower case. */
export function stateName(state: TaskState | JobState): string {
  return state.toLowerCase();
}

/** Iris's CSS class of a task (or job) state. */
export function stateClass(state: TaskState | JobState): string {
  return `status-${stateName(state)}`;
}

export function stateBadge(state: TaskState | JobState): Html {
  return html`<span class="badge ${stateClass(state)}" data-state="${state}">${stateName(state)}</span>`;
}

export function sessionClass(status: SessionStatus): string {
  return `session-${status.toLowerCase()}`;
}

export function sessionBadge(status: SessionStatus): Html {
  return html`<span class="badge ${sessionClass(status)}" data-status="${status}">${status}</span>`;
}

export function deploymentBadge(status: DeploymentStatus): Html {
  return html`<span class="badge deployment-${status.toLowerCase()}" data-status="${status}"
    >${status}</span
  >`;
}

export function routeBadge(status: RouteStatus): Html {
  return html`<span class="badge route-${status.toLowerCase()}" data-status="${status}">${status}</span>`;
}
