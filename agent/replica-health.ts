/**
 * The deployment replicas an agent runs: each gets a port (CAIRN_PORT) and, while
 * its kernel runs, a HealthProber whose probes go out as route health reports. A report that
 * could not be sent is not lost: its probes go with the next one, up to the 20 a report holds
 * (the oldest dropped first). Transport-free, like the rest of the agent: the caller signs and
 * publishes (host.ts).
 */
import type { ProbeReport } from "../functions/core/deployments/health.ts";
import type { ServiceBinding } from "../functions/core/service-binding.ts";
import { freePort, HealthProber } from "./health-probe.ts";

/** What one report may carry (RouteHealthReportedDetailSchema). */
export const MAX_PROBES_PER_REPORT = 20;

/** Replicas listen on, and are probed at, the agent's loopback address. */
export const REPLICA_HOST = "127.0.0.1";

/** The probes of one replica since its last report that was sent, oldest first. */
export interface RouteHealthReport {
  readonly agentId: string;
  readonly deploymentId: string;
  readonly routeId: string;
  readonly sessionId: string;
  readonly runIndex: number;
  readonly port: number;
  readonly probes: readonly ProbeReport[];
  readonly atMs: number;
}

/** Publishes a report; a throw or a rejection means it was not sent, and its probes are kept. */
export type RouteHealthSink = (report: RouteHealthReport) => void | Promise<void>;

/** The replica's port: the one its deployment pins, or one free now. */
export async function replicaPort(service: ServiceBinding): Promise<number> {
  return service.port ?? freePort(REPLICA_HOST);
}

/** Unsent probes, then newer ones: the newest `MAX_PROBES_PER_REPORT` of them. */
export function keepNewest(unsent: readonly ProbeReport[], newer: readonly ProbeReport[]): ProbeReport[] {
  return [...unsent, ...newer].slice(-MAX_PROBES_PER_REPORT);
}

export interface Replica {
  readonly sessionId: string;
  readonly runIndex: number;
  readonly port: number;
  readonly service: ServiceBinding;
}

export interface ReplicaProbesOptions {
  readonly agentId: string;
  readonly onReport: RouteHealthSink;
  readonly clock: () => number;
  readonly warn: (message: string, error?: unknown) => void;
}

/** The probers of the replicas running now, by run. */
export class ReplicaProbes {
  readonly #options: ReplicaProbesOptions;
  readonly #watches = new Map<string, ReplicaWatch>();

  constructor(options: ReplicaProbesOptions) {
    this.#options = options;
  }

  /** Starts probing the replica of run `key` (its first probe one interval from now). */
  watch(key: string, replica: Replica): void {
    this.forget(key);
    const watch = new ReplicaWatch(replica, this.#options);
    this.#watches.set(key, watch);
    watch.start();
  }

  /** Stops probing run `key`; probes not sent yet are dropped with it. */
  forget(key: string): void {
    this.#watches.get(key)?.stop();
    this.#watches.delete(key);
  }

  forgetAll(): void {
    for (const key of [...this.#watches.keys()]) this.forget(key);
  }

  /** Runs being probed. */
  get size(): number {
    return this.#watches.size;
  }
}

class ReplicaWatch {
  readonly #replica: Replica;
  readonly #options: ReplicaProbesOptions;
  readonly #prober: HealthProber;
  /** Probes not sent yet, oldest first. */
  #unsent: ProbeReport[] = [];
  #sending = false;
  #stopped = false;

  constructor(replica: Replica, options: ReplicaProbesOptions) {
    this.#replica = replica;
    this.#options = options;
    const { probe } = replica.service;
    this.#prober = new HealthProber({
      target: {
        host: REPLICA_HOST,
        port: replica.port,
        path: probe.path,
        timeoutMs: probe.timeoutSeconds * 1000,
      },
      intervalMs: probe.intervalSeconds * 1000,
      onReport: (report) => this.#onProbe(report),
      nowMs: options.clock,
    });
  }

  start(): void {
    this.#prober.start();
  }

  stop(): void {
    this.#stopped = true;
    this.#prober.stop();
  }

  #onProbe(report: ProbeReport): void {
    this.#unsent = keepNewest(this.#unsent, [report]);
    void this.#send();
  }

  /**
   * Sends every unsent probe in one report. One report at a time: probes taken while one is
   * under way go with the next, as do those of a report that failed.
   */
  async #send(): Promise<void> {
    if (this.#sending || this.#stopped || this.#unsent.length === 0) return;
    this.#sending = true;
    const probes = this.#unsent;
    this.#unsent = [];
    const { sessionId, runIndex, port, service } = this.#replica;
    let sent = false;
    try {
      await this.#options.onReport({
        agentId: this.#options.agentId,
        deploymentId: service.deploymentId,
        routeId: service.routeId,
        sessionId,
        runIndex,
        port,
        probes,
        atMs: this.#options.clock(),
      });
      sent = true;
    } catch (error) {
      this.#unsent = keepNewest(probes, this.#unsent);
      this.#options.warn(
        `route ${service.routeId}: a health report (${probes.length} probe(s)) was not sent; ` +
          `its probes go with the next`,
        error,
      );
    } finally {
      this.#sending = false;
    }
    // What came in meanwhile goes now; after a failure, with the next probe.
    if (sent) await this.#send();
  }
}
