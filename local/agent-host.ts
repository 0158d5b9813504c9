/**
 * Runs local agents the way a real agent host would: commands arrive as "Kernel Command" events
 * on the bus (a rule per agent), reports and heartbeats leave through PutEvents on the AWS SDK
 * client. The control plane cannot tell these agents from remote ones.
 */
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import {
  DetailType,
  KernelCommandDetailSchema,
  toPutEventsEntry,
  EventSource,
} from "../functions/core/events.ts";
import { LocalAgent, type KernelReport } from "../agent/index.ts";
import type { LocalEventBus } from "./eventbridge/index.ts";

export interface AgentHostOptions {
  readonly id: string;
  readonly capacity: { readonly cpu: number; readonly memoryMiB: number };
  readonly workRoot: string;
  readonly bus: LocalEventBus;
  /** The bus's AWS endpoint: reports go through the SDK, as from a remote host. */
  readonly eventBridgeEndpoint: string;
  readonly heartbeatMs: number;
  readonly log: (message: string) => void;
}

export class AgentHost {
  readonly agent: LocalAgent;
  readonly #o: AgentHostOptions;
  readonly #client: EventBridgeClient;
  #heartbeat: NodeJS.Timeout | undefined;
  readonly #pending = new Set<Promise<void>>();

  constructor(options: AgentHostOptions) {
    this.#o = options;
    this.#client = new EventBridgeClient({
      endpoint: options.eventBridgeEndpoint,
      region: "local",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    this.agent = new LocalAgent({
      id: options.id,
      capacity: options.capacity,
      workRoot: options.workRoot,
      onReport: (report) => this.#track(this.#report(report)),
    });
    options.bus.putRule({
      name: `agent-${options.id}`,
      description: `Kernel commands for agent ${options.id}`,
      eventPattern: {
        source: [EventSource.ControlPlane],
        "detail-type": [DetailType.KernelCommand],
        detail: { agentId: [options.id] },
      },
      targets: [{ id: "agent", invoke: (event) => this.#command(event.detail), deadLetter: true }],
    });
  }

  async start(): Promise<void> {
    await this.#sendHeartbeat();
    this.#heartbeat = setInterval(() => this.#track(this.#sendHeartbeat()), this.#o.heartbeatMs);
  }

  async stop(): Promise<void> {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    await this.agent.shutdown({ graceMs: 2_000 });
    await Promise.allSettled([...this.#pending]);
    this.#client.destroy();
  }

  #track(p: Promise<void>): void {
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }

  async #command(detail: unknown): Promise<void> {
    const parsed = KernelCommandDetailSchema.safeParse(detail);
    if (!parsed.success) {
      this.#o.log(`agent ${this.#o.id}: rejected a malformed command: ${parsed.error.message}`);
      return;
    }
    const c = parsed.data;
    const launch = {
      sessionId: c.sessionId,
      kernelIndex: c.kernelIndex,
      numKernels: c.numKernels,
      ...(c.jobId !== undefined ? { jobId: c.jobId } : {}),
      ...(c.taskIndex !== undefined ? { taskIndex: c.taskIndex } : {}),
      ...(c.numTasks !== undefined ? { numTasks: c.numTasks } : {}),
      runIndex: c.runIndex,
      command: c.command,
      env: c.env,
      cpu: c.cpu,
      memoryMiB: c.memoryMiB,
    };
    switch (c.action) {
      case "prepare":
        return this.agent.prepare(launch);
      case "start":
        return this.agent.start(launch);
      case "stop":
        // Not awaited: the bus delivery should not wait out a grace period.
        this.#track(
          this.agent.stop(c.sessionId, c.kernelIndex, {
            ...(c.graceMs !== undefined ? { graceMs: c.graceMs } : {}),
            ...(c.condition !== undefined && c.condition !== "Unschedulable"
              ? { condition: c.condition }
              : {}),
            ...(c.reason !== undefined ? { reason: c.reason } : {}),
          }),
        );
        return;
    }
  }

  async #report(report: KernelReport): Promise<void> {
    const { pid: _pid, signal, ...rest } = report;
    await this.#put(
      toPutEventsEntry(this.#o.bus.name, DetailType.KernelStatusChanged, {
        ...rest,
        ...(signal !== undefined && (report.status === "TERMINATED" || report.status === "ERROR")
          ? { signal }
          : {}),
      }),
    );
  }

  async #sendHeartbeat(): Promise<void> {
    await this.#put(
      toPutEventsEntry(this.#o.bus.name, DetailType.AgentHeartbeat, {
        agentId: this.#o.id,
        capacity: this.#o.capacity,
        atMs: Date.now(),
      }),
    );
  }

  /** Reports must not be lost: retry a few times, then say so loudly. */
  async #put(entry: ReturnType<typeof toPutEventsEntry>): Promise<void> {
    for (let attempt = 1; attempt <= 5; attempt++) {
      try {
        const out = await this.#client.send(new PutEventsCommand({ Entries: [entry] }));
        if (!out.FailedEntryCount) return;
        this.#o.log(`agent ${this.#o.id}: report rejected: ${out.Entries?.[0]?.ErrorMessage ?? "unknown"}`);
      } catch (error) {
        if (attempt === 5) {
          this.#o.log(`agent ${this.#o.id}: could not send ${entry.DetailType}: ${String(error)}`);
          return;
        }
      }
      await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
    }
  }
}
