/**
 * Agents: capacity used and free, liveness (the coordinator's own rule, core/model.ts isLiveAgent,
 * with the configured window) and the kernels placed on each (its allocations).
 */
import { isLiveAgent, type Agent } from "../functions/core/model.ts";
import type { Allocation } from "../functions/core/ports/agents.ts";
import { duration, html, isoTime, type Html } from "./html.ts";

export function liveness(agent: Agent, nowMs: number, timeoutMs: number): string {
  if (agent.lostAtMs !== undefined) return `lost at ${isoTime(agent.lostAtMs)}`;
  if (agent.draining === true) return "draining";
  if (isLiveAgent(agent, nowMs, timeoutMs)) return "live";
  return `silent for ${duration(nowMs - agent.lastHeartbeatAtMs)}`;
}

function percent(used: number, total: number): number {
  return total <= 0 ? 0 : Math.round((used / total) * 100);
}

export function renderAgentsPage(
  agents: readonly { agent: Agent; allocations: readonly Allocation[] }[],
  nowMs: number,
  timeoutMs: number,
): Html {
  const rows = [...agents]
    .sort((a, b) => a.agent.id.localeCompare(b.agent.id))
    .map(({ agent, allocations }) => {
      const usedCpu = agent.capacity.cpu - agent.free.cpu;
      const usedMem = agent.capacity.memoryMiB - agent.free.memoryMiB;
      const state = liveness(agent, nowMs, timeoutMs);
      return html`<tr id="agent-${agent.id}" data-agent="${agent.id}">
        <td>${agent.id}</td>
        <td
          class="${state === "live" ? "status-running" : state === "draining" ? "status-pending" : "status-failed"}"
        >
          <span class="liveness">${state}</span
          ><span class="reason">heartbeat ${isoTime(agent.lastHeartbeatAtMs)}</span>
        </td>
        <td class="num">${usedCpu} / ${agent.capacity.cpu}</td>
        <td class="num">${agent.free.cpu}</td>
        <td>
          <meter min="0" max="100" value="${percent(usedCpu, agent.capacity.cpu)}">
            ${percent(usedCpu, agent.capacity.cpu)}%
          </meter>
        </td>
        <td class="num">${usedMem} / ${agent.capacity.memoryMiB}</td>
        <td class="num">${agent.free.memoryMiB}</td>
        <td>${Object.entries(agent.labels ?? {}).map(([k, v]) => `${k}=${v} `)}</td>
        <td>
          ${allocations.length === 0 ? html`<span class="muted">none</span>` : allocations.map((a) => html`<div><a href="/sessions/${encodeURIComponent(a.sessionId)}">${a.sessionId}</a> <span class="muted">kernel ${a.kernelIndexes.join(", ")} · ${a.resources.cpu} cpu, ${a.resources.memoryMiB} MiB</span></div>`)}
        </td>
      </tr>`;
    });
  return html`<h1>Agents</h1>
    <p class="muted">
      ${agents.length} registered; live means heard from within ${duration(timeoutMs)} and neither lost nor
      draining. Only the control plane declares an agent lost (its kernels are then WORKER_FAILED and
      retried); "silent" is an agent past the window that it has not declared lost yet.
    </p>
    <table class="agents">
      <thead>
        <tr>
          <th>agent</th>
          <th>liveness</th>
          <th class="num">cpu used</th>
          <th class="num">cpu free</th>
          <th>cpu</th>
          <th class="num">MiB used</th>
          <th class="num">MiB free</th>
          <th>labels</th>
          <th>kernels</th>
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>`;
}
