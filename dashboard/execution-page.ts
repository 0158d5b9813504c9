/**
 * A local lifecycle execution's history (the embedded engine's GetExecutionHistory), read-only:
 * a session's, a deployment's or a route's (`of` names it and links back to its page).
 */
import type { ExecutionEvent } from "./deps.ts";
import { html, isoTime, type Html } from "./html.ts";

export interface ExecutionOwner {
  /** "session s-1", "route web-r0" */
  readonly label: string;
  /** Its page. */
  readonly href: string;
}

export function renderExecutionPage(
  of: ExecutionOwner,
  arn: string,
  events: readonly ExecutionEvent[] | undefined,
): Html {
  return html`<h1>Execution of <a href="${of.href}">${of.label}</a></h1>
    <p class="muted">${arn}</p>
    ${
      events === undefined
        ? html`<p class="error">
            The local Step Functions engine has no execution ${arn} (an execution is in memory: a restarted
            runtime has none of the earlier ones).
          </p>`
        : html`<table class="execution-history">
            <thead>
              <tr>
                <th class="num">id</th>
                <th>at</th>
                <th>event</th>
                <th>state</th>
                <th>detail</th>
              </tr>
            </thead>
            <tbody>
              ${events.map(
                (e) =>
                  html`<tr>
                    <td class="num">${e.id}</td>
                    <td>${isoTime(e.timestamp)}</td>
                    <td>${e.type}</td>
                    <td>${e.state ?? ""}</td>
                    <td>${e.detail ?? ""}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }`;
}
