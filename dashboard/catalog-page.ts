/**
 * Queues, retry policies, the failure categories their rules match and the retry configuration,
 * read-only (they are managed with the CLI).
 */
import type { Queue } from "../functions/core/model.ts";
import { retryConfigToDocument, type RetryConfig } from "../functions/core/retry/config.ts";
import { retryPolicyToDocument, type RetryPolicy } from "../functions/core/retry/policy.ts";
import {
  failureCategoryToDocument,
  type FailureCategoryDefinition,
} from "../functions/core/retry/category-definitions.ts";
import { stringify } from "yaml";
import { html, isoTime, type Html } from "./html.ts";

export function renderCatalogPage(
  queues: readonly Queue[],
  policies: readonly RetryPolicy[],
  config: RetryConfig,
  configIsDefault: boolean,
  categories: readonly FailureCategoryDefinition[] = [],
): Html {
  return html`<h1>Queues</h1>
    <p class="muted">Read-only: <code>cairn queue create|update|delete</code> changes them.</p>
    <table class="queues">
      <thead>
        <tr>
          <th>queue</th>
          <th class="num">priority</th>
          <th>retry policies</th>
          <th>sessions</th>
          <th>updated</th>
        </tr>
      </thead>
      <tbody>
        ${queues.map(
          (q) =>
            html`<tr data-queue="${q.name}">
              <td>${q.name}</td>
              <td class="num">${q.priority}</td>
              <td>
                ${q.retryPolicies.length === 0 ? html`<span class="muted">none</span>` : q.retryPolicies.join(", ")}
              </td>
              <td><a href="/?queue=${encodeURIComponent(q.name)}">list</a></td>
              <td>${isoTime(q.updatedAtMs)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    ${queues.length === 0 ? html`<p class="muted">No queue is defined; sessions of the queue <code>default</code> need none.</p>` : ""}
    <h1>Retry policies</h1>
    <p class="muted">Read-only: <code>cairn retry-policy create|update|delete</code> changes them.</p>
    ${policies.length === 0 ? html`<p class="muted">No retry policy is defined.</p>` : ""}
    <table class="policies">
      <tbody>
        ${policies.map(
          (p) =>
            html`<tr data-policy="${p.name}">
              <th>${p.name}</th>
              <td><pre class="doc">${stringify(retryPolicyToDocument(p))}</pre></td>
            </tr>`,
        )}
      </tbody>
    </table>
    <h1>Failure categories</h1>
    <p class="muted">
      Read-only: <code>cairn failure-category create|update|delete</code> changes them. Checked in this order
      where a run ends; a failure none matches keeps the agent's built-in category.
    </p>
    ${categories.length === 0 ? html`<p class="muted">No failure category is defined.</p>` : ""}
    <table class="categories">
      <tbody>
        ${categories.map(
          (c) =>
            html`<tr data-category="${c.name}">
              <th>${c.name}</th>
              <td><pre class="doc">${stringify(failureCategoryToDocument(c))}</pre></td>
            </tr>`,
        )}
      </tbody>
    </table>
    <h1>Retry configuration</h1>
    <p class="muted">
      ${configIsDefault ? "The defaults (none was set)." : "As set with cairn retry-config set."}
    </p>
    <pre class="doc">${stringify(retryConfigToDocument(config))}</pre>`;
}
