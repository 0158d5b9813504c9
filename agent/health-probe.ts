/**
 * Health checks of the replicas an agent hosts (Backend.AI's BEP-1030 routes): an HTTP GET of the deployment's
 * health path on the replica's port, every interval, by the agent that runs it (so the check
 * needs no network path from the control plane to the hosts). The results go back as reports;
 * the control plane judges them (core/deployments/health.ts).
 */
import { request } from "node:http";
import { createServer } from "node:net";
import type { ProbeReport } from "../functions/core/deployments/health.ts";

export interface ProbeTarget {
  readonly host: string;
  readonly port: number;
  /** The health check's path, starting with '/'. */
  readonly path: string;
  readonly timeoutMs: number;
}

/** Answers this long are kept in a failure's message, not more. */
const MAX_MESSAGE_CHARS = 200;

/**
 * One probe: ok on a 2xx or 3xx answer within the timeout (as load balancers and Kubernetes
 * count them); otherwise the status or the error says why. Never throws.
 */
export function probe(target: ProbeTarget, nowMs: () => number = Date.now): Promise<ProbeReport> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (report: Omit<ProbeReport, "atMs">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve({ ...report, atMs: nowMs() });
    };
    const req = request(
      { host: target.host, port: target.port, path: target.path, method: "GET", agent: false },
      (res) => {
        const status = res.statusCode ?? 0;
        res.resume();
        done(
          status >= 200 && status < 400
            ? { ok: true, httpStatus: status }
            : { ok: false, httpStatus: status, message: `HTTP ${status}` },
        );
      },
    );
    const timer = setTimeout(
      () => done({ ok: false, message: `no answer within ${target.timeoutMs} ms` }),
      target.timeoutMs,
    );
    req.on("error", (error: NodeJS.ErrnoException) =>
      done({ ok: false, message: (error.code ?? error.message).slice(0, MAX_MESSAGE_CHARS) }),
    );
    req.end();
  });
}

export interface HealthProberOptions {
  readonly target: ProbeTarget;
  readonly intervalMs: number;
  /** Called with each probe's report, in order. */
  readonly onReport: (report: ProbeReport) => void;
  readonly nowMs?: () => number;
}

/**
 * Probes one replica every interval until stopped. The first probe waits one interval: a
 * service needs a moment to listen, and until then the route is DEGRADED anyway.
 */
export class HealthProber {
  readonly #options: HealthProberOptions;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: HealthProberOptions) {
    this.#options = options;
  }

  start(): void {
    if (this.#timer || this.#stopped) return;
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    this.#timer = setTimeout(() => {
      void probe(this.#options.target, this.#options.nowMs).then((report) => {
        if (this.#stopped) return;
        this.#options.onReport(report);
        this.#schedule();
      });
    }, this.#options.intervalMs);
    this.#timer.unref();
  }
}

/**
 * A port nothing listens on now, for a replica that pins none (CAIRN_PORT). Another process
 * may take it before the replica binds it; the replica then fails its health checks and is
 * replaced, as any replica that cannot serve.
 */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("no port was assigned"))));
    });
  });
}
