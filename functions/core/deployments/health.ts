/**
 * A route's health, from the probes its agent reports: what HealthCheckRoute judges
 * each route, pure. Probes count in a row, as load balancers and Kubernetes count them; a route
 * not reported on in time is STALE, which BEP-1030's table turns into DEGRADED.
 */
import type { HealthCheck } from "./spec.ts";
import { RouteResult } from "./tables.ts";

/** One probe of a replica: an HTTP GET of the health check's path, by the agent that hosts it. */
export interface ProbeReport {
  /** A 2xx or 3xx answer within the timeout. */
  readonly ok: boolean;
  readonly atMs: number;
  /** The HTTP status, when there was an answer. */
  readonly httpStatus?: number;
  /** Why it failed: the status, a refused connection, a timeout. */
  readonly message?: string;
}

/** What the route keeps of its probes. */
export interface RouteHealth {
  readonly consecutiveSuccesses: number;
  readonly consecutiveFailures: number;
  /** The latest probe counted; undefined before the first. */
  readonly lastProbeAtMs?: number;
  readonly lastMessage?: string;
  /** Since when the route is checked (it became DEGRADED): staleness counts from here until a probe comes. */
  readonly checkedSinceMs: number;
}

export function initialHealth(checkedSinceMs: number): RouteHealth {
  return { consecutiveSuccesses: 0, consecutiveFailures: 0, checkedSinceMs };
}

/**
 * The route's health after `probes`, taken in time order. A probe older than the latest one
 * counted is a late delivery and changes nothing (reports arrive at least once, in any order).
 */
export function applyProbes(health: RouteHealth, probes: readonly ProbeReport[]): RouteHealth {
  let h = health;
  for (const probe of [...probes].sort((a, b) => a.atMs - b.atMs)) {
    if (h.lastProbeAtMs !== undefined && probe.atMs <= h.lastProbeAtMs) continue;
    h = {
      consecutiveSuccesses: probe.ok ? h.consecutiveSuccesses + 1 : 0,
      consecutiveFailures: probe.ok ? 0 : h.consecutiveFailures + 1,
      lastProbeAtMs: probe.atMs,
      ...(probe.message !== undefined ? { lastMessage: probe.message } : {}),
      checkedSinceMs: h.checkedSinceMs,
    };
  }
  return h;
}

/**
 * How long a route may go without a probe before it is STALE: two intervals and a timeout, so
 * one late or lost report (the agent busy, a redelivery) does not flip a healthy route.
 */
export function staleAfterMs(check: HealthCheck): number {
  return (2 * check.intervalSeconds + check.timeoutSeconds) * 1000;
}

export interface HealthVerdict {
  readonly result: RouteResult;
  readonly message: string;
}

/**
 * HealthCheckRoute's outcome for one route, or undefined while the probes decide nothing yet (a
 * failure or two short of the threshold). Staleness comes first: old probes say nothing of now.
 */
export function healthVerdict(
  health: RouteHealth,
  check: HealthCheck,
  nowMs: number,
): HealthVerdict | undefined {
  const since = health.lastProbeAtMs ?? health.checkedSinceMs;
  if (nowMs - since > staleAfterMs(check)) {
    const seconds = Math.round((nowMs - since) / 1000);
    return {
      result: RouteResult.STALE,
      message:
        health.lastProbeAtMs === undefined
          ? `no health report in ${seconds} s (expected every ${check.intervalSeconds} s)`
          : `last health report ${seconds} s ago (expected every ${check.intervalSeconds} s)`,
    };
  }
  if (health.consecutiveSuccesses >= check.healthyThreshold) {
    return {
      result: RouteResult.SUCCESS,
      message: `GET ${check.path} passed ${health.consecutiveSuccesses} time(s) in a row`,
    };
  }
  if (health.consecutiveFailures >= check.unhealthyThreshold) {
    return {
      result: RouteResult.FAILURE,
      message:
        `GET ${check.path} failed ${health.consecutiveFailures} time(s) in a row` +
        (health.lastMessage !== undefined ? `: ${health.lastMessage}` : ""),
    };
  }
  return undefined;
}
