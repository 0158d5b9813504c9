/** A draft as `cairn job get` shows it: HPC Pack's Configuring. */
import type { JobDraft } from "../../functions/core/drafts.ts";
import { HpcState } from "../../functions/core/hpc-view.ts";
import type { SessionSpec } from "../../functions/core/model.ts";
import { ago } from "./render.ts";
import { iso } from "./views.ts";
import { renderBlockRows } from "./table.ts";

export interface DraftView {
  readonly jobId: string;
  readonly name: string;
  readonly draft: true;
  readonly hpcState: HpcState;
  readonly version: number;
  /** A submission of it has begun: it can no longer change. */
  readonly submitting: boolean;
  readonly replicas: number;
  readonly queue: string;
  readonly priority: number;
  readonly spec: SessionSpec;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export function draftView(draft: JobDraft): DraftView {
  return {
    jobId: draft.id,
    name: draft.spec.name,
    draft: true,
    hpcState: HpcState.Configuring,
    version: draft.version,
    submitting: draft.submitting !== undefined,
    replicas: draft.spec.replicas,
    queue: draft.spec.queue,
    priority: draft.spec.priority,
    spec: draft.spec,
    createdAt: iso(draft.createdAtMs),
    updatedAt: iso(draft.updatedAtMs),
  };
}

export function renderDraft(view: DraftView, nowMs: number): string {
  const rows: [string, string][] = [
    [
      "state",
      view.submitting
        ? "DRAFT, being submitted"
        : `DRAFT: not submitted (\`cairn job submit ${view.jobId}\` queues it)`,
    ],
    ["hpc", `${view.hpcState} (HPC Pack's state)`],
    ["version", String(view.version)],
    ["replicas", String(view.replicas)],
    // The draft's own: its sessions run at it plus the queue's priority, added at submission.
    [
      "queue",
      `${view.queue}, priority ${view.priority} (the queue's priority is added when it is submitted)`,
    ],
    ["command", view.spec.command.join(" ")],
    ["created", `${view.createdAt} (${ago(view.createdAt, nowMs)})`],
    ["updated", `${view.updatedAt} (${ago(view.updatedAt, nowMs)})`],
  ];
  return [`draft ${view.jobId} (${view.name})`, ...renderBlockRows(rows)].join("\n");
}
