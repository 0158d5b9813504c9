/**
 * The dashboard's one write: a cancel request for a session or a job, put on the bus as
 * `cairn cancel` puts it. The control is a form inside a `<details>`: opening it is the
 * confirmation step, in the page and without script; the POST is checked for same origin by the
 * server before it gets here.
 */
import { SESSION_ID_PATTERN } from "../functions/core/events.ts";
import { TERMINAL_SESSION_STATUSES } from "../functions/core/status.ts";
import type { DashboardDeps } from "./deps.ts";
import { html, type Html } from "./html.ts";

export type CancelKind = "session" | "job";

export function cancelControl(kind: CancelKind, id: string, what: string): Html {
  return html`<details class="cancel" data-cancel="${id}">
    <summary>Cancel this ${kind}…</summary>
    <form method="post" action="/cancel">
      <input type="hidden" name="kind" value="${kind}" />
      <input type="hidden" name="id" value="${id}" />
      <p>
        Cancel ${what}?
        ${kind === "job" ? "Every task that has not ended is cancelled." : "A session that has started ends TERMINATED with result cancelled; one that has not ends CANCELLED."}
        This cannot be undone.
      </p>
      <label
        >reason <input name="reason" maxlength="512" size="40" value="cancelled from the dashboard"
      /></label>
      <label title="HPC Pack's Force Cancel: for a run stuck ending on an agent that stopped answering"
        ><input type="checkbox" name="force" value="yes" /> force: do not wait for the run to end (kill
        without a grace period, end it at once)</label
      >
      <button type="submit" class="danger" name="confirm" value="yes">Yes, cancel ${kind} ${id}</button>
    </form>
  </details>`;
}

export type CancelOutcome =
  | { readonly done: true; readonly message: string; readonly location: string }
  | { readonly done: false; readonly status: 400 | 404 | 409; readonly message: string };

/** Checks what is asked (it exists, has not ended) and puts the request; never throws for a bad form. */
export async function requestCancel(deps: DashboardDeps, form: URLSearchParams): Promise<CancelOutcome> {
  const kind = form.get("kind");
  const id = form.get("id") ?? "";
  const reason = (form.get("reason") ?? "").trim();
  if (form.get("confirm") !== "yes") {
    return { done: false, status: 400, message: "confirm: the cancel was not confirmed (confirm=yes)" };
  }
  if (kind !== "session" && kind !== "job") {
    return { done: false, status: 400, message: `kind: must be session or job, got "${kind ?? ""}"` };
  }
  if (!SESSION_ID_PATTERN.test(id)) {
    return { done: false, status: 400, message: "id: not a session or job id" };
  }
  if (reason.length > 512) return { done: false, status: 400, message: "reason: at most 512 characters" };
  const forceField = form.get("force");
  if (forceField !== null && forceField !== "yes") {
    return { done: false, status: 400, message: `force: must be yes when given, got "${forceField}"` };
  }
  const force = forceField === "yes";
  if (kind === "session") {
    const found = await deps.store.getSession(id);
    if (found === undefined) return { done: false, status: 404, message: `session ${id} not found` };
    if (TERMINAL_SESSION_STATUSES.has(found.session.status)) {
      return {
        done: false,
        status: 409,
        message: `session ${id} has already ended (${found.session.status}); nothing to cancel`,
      };
    }
  } else {
    const job = await deps.store.getJob(id);
    if (job === undefined) return { done: false, status: 404, message: `job ${id} not found` };
    const sessions = await deps.store.getSessions(job.sessionIds);
    const live =
      job.sessionIds.length - sessions.filter((s) => TERMINAL_SESSION_STATUSES.has(s.session.status)).length;
    if (live === 0) {
      return { done: false, status: 409, message: `job ${id} has already ended; nothing to cancel` };
    }
  }
  await deps.cancel(id, reason === "" ? "cancelled from the dashboard" : reason, force);
  const location = `/${kind === "job" ? "jobs" : "sessions"}/${encodeURIComponent(id)}?cancel=requested`;
  return {
    done: true,
    message: `${force ? "force cancel" : "cancel"} requested for ${kind} ${id}`,
    location,
  };
}
