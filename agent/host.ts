/**
 * `cairn agent`: one agent process on any host, talking to Cairn only through AWS APIs
 * (docs/agents.md). It registers (an `Agent Registration Requested` event), long-polls its own
 * SQS queue for the answer and for kernel commands, runs kernels as child processes
 * (local-agent.ts), and puts signed reports, heartbeats and the health of the deployment
 * replicas it runs (replica-health.ts) on the bus.
 *
 * - Registration: each start is a new incarnation. The control plane answers on the queue with
 *   the incarnation's signing key; until then the agent acts on nothing. A `registered` answer
 *   for another incarnation after this one registered means another process took this agent's
 *   id: this one stops its kernels and exits.
 * - Commands name the incarnation they are for; others are refused (logged), so a restarted
 *   agent does not act on what was meant for its previous life.
 * - `fenced`: the control plane declared this incarnation lost and gave its kernels up. The agent
 *   stops every kernel and registers again.
 * - Draining (SIGTERM/SIGINT): stop taking commands, say so in a heartbeat (no new placements),
 *   stop every kernel with its grace period (each ends WORKER_FAILED: retried elsewhere under
 *   the preemption budget), report every end, then exit.
 * - Reconciliation: each heartbeat lists the kernel processes the agent runs; the control plane
 *   answers `ended` with those it considers ended, and the agent stops each one still running at
 *   that run and placement (a kernel cannot outlive its session by more than a heartbeat).
 * - At start, kernels an earlier process of this agent left running (it was killed with
 *   SIGKILL; kernels run in their own process groups) are found by their environment and
 *   stopped: the control plane has already given them up.
 */
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { CloudWatchLogsClient } from "@aws-sdk/client-cloudwatch-logs";
import type { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import {
  DeleteMessageBatchCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import {
  AgentMessageType,
  parseAgentMessage,
  type CommandMessage,
  type EndedMessage,
  type KernelCommand,
} from "../functions/core/agent-protocol.ts";
import { DetailType, toPutEventsEntry, type EventDetailInput } from "../functions/core/events.ts";
import { MAX_HEARTBEAT_RUNS, withPassed } from "../functions/core/agent-events.ts";
import { signDetail } from "../functions/topology/agent-signature.ts";
import { EventOutbox } from "./event-outbox.ts";
import { LocalAgent, type LocalAgentOptions } from "./local-agent.ts";
import { LogShipper } from "./log-shipper.ts";
import { ReportHold } from "./report-hold.ts";
import type { RouteHealthReport } from "./replica-health.ts";
import type { AgentCapacity, KernelLaunch, KernelReport } from "./types.ts";

export interface AgentHostOptions {
  readonly id: string;
  readonly capacity: AgentCapacity;
  readonly labels: Readonly<Record<string, string>>;
  readonly workRoot: string;
  readonly busName: string;
  /** The agent's queue: `<prefix><id>`, created by the control plane on registration. */
  readonly queueName: string;
  readonly events: EventBridgeClient;
  readonly sqs: SQSClient;
  /**
   * How often the agent says it is alive. Each heartbeat is a PutEvents, an SQS message, a
   * coordinator invocation (and its trace) and table requests: every 30 s an idle agent costs
   * under a dollar a month, every 5 s six times that (docs/cost.md); three heartbeats fit the
   * default 90 s liveness window. @default 30000
   */
  readonly heartbeatMs?: number;
  /** Long-poll wait of each ReceiveMessage, in seconds (0–20). @default 20 */
  readonly waitSeconds?: number;
  /**
   * How long a PULLING report waits for its kernel's next report (PREPARED, or ERROR), to go
   * with it as a status passed through: one event, one message, one write instead of two.
   * PULLING moves no stage, so nothing waits on it; a pull that lasts longer is reported when
   * this runs out, with the time it began. 0: reported at once. @default 250
   */
  readonly pullingHoldMs?: number;
  /** Grace between SIGTERM and SIGKILL for kernels stopped by a drain. @default 10000 */
  readonly drainGraceMs?: number;
  readonly log: (line: string) => void;
  /** Where kernel output goes (CloudWatch Logs, one stream per run); absent: work files only. */
  readonly kernelLogs?: { readonly client: CloudWatchLogsClient; readonly logGroupName: string };
  /** Run kernels as this unprivileged user (LocalAgentOptions.kernelUser). */
  readonly kernelUser?: LocalAgentOptions["kernelUser"];
  /** The kernel runner; built from the options above when absent. */
  readonly agent?: LocalAgent;
}

type State = "registering" | "ready" | "draining" | "stopped";

/** The first wait for the answer to a registration; each one unanswered doubles it, up to the max. */
const REGISTRATION_RESEND_MS = 5_000;
/** SQS holds a deleted queue's name 60 s: a registration may wait that long for its queue. */
const REGISTRATION_RESEND_MAX_MS = 60_000;
export const DEFAULT_HEARTBEAT_MS = 30_000;

export class AgentHost {
  readonly agent: LocalAgent;
  /** Ships kernel output to CloudWatch Logs, when the options name a log group. */
  readonly shipper: LogShipper | undefined;
  readonly #o: AgentHostOptions;
  #incarnation = newIncarnation();
  #signingKey: string | undefined;
  #state: State = "registering";
  #queueUrl: string | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #poll: Promise<void> | undefined;
  readonly #abort = new AbortController();
  readonly #pending = new Set<Promise<unknown>>();
  /** Every event the agent puts, in order, as few requests as the limits allow. */
  readonly #outbox: EventOutbox;
  /** The detail of the last kernel report put in the outbox per run and placement, until sent. */
  readonly #queuedReports = new Map<string, EventDetailInput<"Kernel Status Changed">>();
  /** PULLING reports waiting for their kernel's next report (pullingHoldMs), per run and placement. */
  readonly #held: ReportHold<EventDetailInput<"Kernel Status Changed">>;
  #registered!: { promise: Promise<void>; resolve: () => void };
  #exitReason: string | undefined;

  constructor(options: AgentHostOptions) {
    this.#o = options;
    this.#held = new ReportHold(options.pullingHoldMs ?? 250, withPassed);
    this.#outbox = new EventOutbox({
      events: options.events,
      log: (line) => options.log(`agent ${options.id}: ${line}`),
    });
    this.agent =
      options.agent ??
      new LocalAgent({
        id: options.id,
        capacity: options.capacity,
        workRoot: options.workRoot,
        ...(options.kernelUser === undefined ? {} : { kernelUser: options.kernelUser }),
        onReport: (report) => this.#track(this.#report(report)),
        onRouteHealth: (report) => this.#reportRouteHealth(report),
        warn: (message, error) => options.log(`agent ${options.id}: ${message}${describeError(error)}`),
        info: (message) => options.log(`agent ${options.id}: ${message}`),
      });
    this.shipper =
      options.kernelLogs &&
      new LogShipper({
        client: options.kernelLogs.client,
        logGroupName: options.kernelLogs.logGroupName,
        clock: () => Date.now(),
        warn: (message, error) =>
          options.log(`agent ${options.id}: kernel logs: ${message}${describeError(error)}`),
      });
    this.shipper?.attach(this.agent);
    this.#resetRegistered();
  }

  get incarnation(): string {
    return this.#incarnation;
  }

  get state(): State {
    return this.#state;
  }

  /** Why the agent stopped on its own (another process took its id), if it did. */
  get exitReason(): string | undefined {
    return this.#exitReason;
  }

  /** Registers and starts acting on commands; resolves once registered. */
  async start(): Promise<void> {
    const reaped = reapOrphans(this.#o.id, this.#o.workRoot);
    if (reaped.length > 0) {
      this.#o.log(
        `agent ${this.#o.id}: stopped ${reaped.length} kernel process(es) an earlier run of this agent left behind (pids ${reaped.join(", ")})`,
      );
    }
    this.#poll = this.#pollLoop();
    await this.#register();
  }

  /** Resolves when the agent has stopped (a drain finished, or another process took its id). */
  async stopped(): Promise<void> {
    await this.#poll;
  }

  /**
   * Drains: no more commands, a draining heartbeat, every kernel stopped with its grace
   * period and its end reported, then the poll loop ends.
   */
  async drain(reason = "agent draining"): Promise<void> {
    if (this.#state === "draining" || this.#state === "stopped") return this.stopped();
    const wasReady = this.#state === "ready";
    this.#state = "draining";
    this.#abort.abort();
    if (wasReady) await this.#sendHeartbeat().catch(() => {});
    await this.agent.shutdown({
      graceMs: this.#o.drainGraceMs ?? 10_000,
      condition: "Evicted",
      reason: `${reason}: agent ${this.#o.id} is shutting down`,
    });
    this.#held.releaseAll();
    await this.#settle();
    await this.shipper?.close();
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#state = "stopped";
    await this.#poll;
  }

  // --- registration ------------------------------------------------------------------------

  #resetRegistered(): void {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.#registered = { promise, resolve };
  }

  async #register(): Promise<void> {
    const { id, capacity, labels } = this.#o;
    this.#o.log(
      `agent ${id}: registering as ${this.#incarnation} (cpu ${capacity.cpu}, memory ${capacity.memoryMiB} MiB)`,
    );
    const request = () =>
      this.#put(
        toPutEventsEntry(this.#o.busName, DetailType.AgentRegistrationRequested, {
          agentId: id,
          incarnation: this.#incarnation,
          capacity: { cpu: capacity.cpu, memoryMiB: capacity.memoryMiB },
          ...(Object.keys(labels).length > 0 ? { labels: { ...labels } } : {}),
          atMs: Date.now(),
        }),
      );
    await request();
    // The answer comes on the queue. A lost request, or a queue the control plane cannot create
    // yet, is asked again, each time after waiting twice as long, up to a minute.
    let waitMs = REGISTRATION_RESEND_MS;
    for (;;) {
      const answered = await Promise.race([
        this.#registered.promise.then(() => true),
        sleep(waitMs, this.#abort.signal).then(() => false),
      ]);
      if (answered || this.#abort.signal.aborted) return;
      const nextMs = Math.min(waitMs * 2, REGISTRATION_RESEND_MAX_MS);
      this.#o.log(
        `agent ${id}: no answer to the registration within ${waitMs / 1000} s; asking again (next wait ${nextMs / 1000} s). ` +
          `The answer comes on queue ${this.#o.queueName}; if it was deleted less than a minute ago, SQS lets no one create it again until then`,
      );
      await request();
      waitMs = nextMs;
    }
  }

  #onRegistered(incarnation: string, signingKey: string): void {
    if (incarnation !== this.#incarnation) {
      if (this.#state === "ready" && this.#signingKey !== undefined) {
        // Someone else registered this agent id after this process did.
        this.#exitReason = `another process registered as agent ${this.#o.id} (incarnation ${incarnation})`;
        this.#o.log(`agent ${this.#o.id}: ${this.#exitReason}; stopping`);
        this.#track(this.drain("agent id taken over"));
      }
      return;
    }
    if (this.#signingKey === signingKey) return; // a redelivered answer
    this.#signingKey = signingKey;
    if (this.#state === "registering") this.#state = "ready";
    this.#o.log(`agent ${this.#o.id}: registered (${incarnation})`);
    this.#registered.resolve();
    this.#track(this.#sendHeartbeat());
    if (!this.#heartbeat) {
      this.#heartbeat = setInterval(
        () => this.#track(this.#sendHeartbeat()),
        this.#o.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
      );
    }
  }

  async #onFenced(incarnation: string, reason: string): Promise<void> {
    if (incarnation !== this.#incarnation || this.#state !== "ready") return;
    this.#o.log(`agent ${this.#o.id}: fenced: ${reason}`);
    this.#state = "registering";
    this.#signingKey = undefined;
    await this.agent.stopAll({ graceMs: 0, condition: "Evicted", reason: `agent ${this.#o.id} was fenced` });
    this.#incarnation = newIncarnation();
    this.#resetRegistered();
    await this.#register();
  }

  // --- commands ----------------------------------------------------------------------------

  async #pollLoop(): Promise<void> {
    const { sqs, queueName, log, id } = this.#o;
    const signal = this.#abort.signal;
    let backoffMs = 250;
    while (!signal.aborted) {
      try {
        this.#queueUrl ??= (
          await sqs.send(new GetQueueUrlCommand({ QueueName: queueName }), { abortSignal: signal })
        ).QueueUrl;
        const out = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: this.#queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: this.#o.waitSeconds ?? 20,
          }),
          { abortSignal: signal },
        );
        backoffMs = 250;
        const handled: { Id: string; ReceiptHandle: string }[] = [];
        for (const m of out.Messages ?? []) {
          if (signal.aborted) break; // left in the queue: it reappears for the next incarnation to judge
          await this.#handle(m.Body ?? "");
          if (m.ReceiptHandle) handled.push({ Id: String(handled.length), ReceiptHandle: m.ReceiptHandle });
        }
        // One request for the messages handled (at most 10, as received).
        if (handled.length > 0) {
          const deleted = await sqs.send(
            new DeleteMessageBatchCommand({ QueueUrl: this.#queueUrl, Entries: handled }),
          );
          for (const failed of deleted.Failed ?? []) {
            // Handled already: it comes back after its visibility timeout and is refused or
            // recognised then, as a redelivery would be.
            log(`agent ${id}: deleting a handled message failed: ${failed.Message ?? failed.Code ?? "?"}`);
          }
        }
      } catch (error) {
        if (signal.aborted) break;
        // The queue does not exist until the control plane handles the registration.
        if ((error as { name?: string }).name !== "QueueDoesNotExist") {
          log(`agent ${id}: receiving commands failed: ${String(error)}`);
        }
        await sleep(backoffMs, signal);
        backoffMs = Math.min(backoffMs * 2, 5_000);
      }
    }
  }

  async #handle(body: string): Promise<void> {
    const parsed = parseAgentMessage(body);
    if (!parsed.ok) {
      this.#o.log(
        `agent ${this.#o.id}: refused a malformed message: ${parsed.issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`,
      );
      return;
    }
    const message = parsed.message;
    switch (message.type) {
      case AgentMessageType.registered:
        return this.#onRegistered(message.incarnation, message.signingKey);
      case AgentMessageType.fenced:
        this.#track(this.#onFenced(message.incarnation, message.reason));
        return;
      case AgentMessageType.command:
        return this.#command(message);
      case AgentMessageType.ended:
        return this.#onEnded(message);
    }
  }

  /**
   * Reconciliation: Cairn considers these runs ended (their session ended, the run was replaced,
   * the kernel was reported ended) while this agent still runs them. Each one still running at
   * that run and placement is stopped, and its end reported as every end is.
   */
  #onEnded(message: EndedMessage): void {
    if (message.incarnation !== this.#incarnation || this.#state !== "ready") return;
    for (const run of message.runs) {
      const what = `${run.sessionId}/${run.kernelIndex} run ${run.runIndex} placement ${run.placement}`;
      this.#track(
        this.agent
          .stopRun(run, {
            graceMs: this.#o.drainGraceMs ?? 10_000,
            reason: `stopped by agent ${this.#o.id}: Cairn considers it ended: ${run.reason}`,
          })
          .then((stopped) => {
            if (stopped)
              this.#o.log(`agent ${this.#o.id}: stopped ${what}: Cairn considers it ended: ${run.reason}`);
          }),
      );
    }
  }

  async #command(message: CommandMessage): Promise<void> {
    const c = message.command as KernelCommand;
    const what = `${c.action} ${c.sessionId}/${c.kernelIndex} run ${c.runIndex}`;
    if (message.incarnation !== this.#incarnation) {
      this.#o.log(
        `agent ${this.#o.id}: refused ${what}: it was meant for incarnation ${message.incarnation}, not ${this.#incarnation}`,
      );
      return;
    }
    if (this.#state !== "ready") {
      this.#o.log(`agent ${this.#o.id}: refused ${what}: the agent is ${this.#state}`);
      return;
    }
    const launch: KernelLaunch = {
      sessionId: c.sessionId,
      kernelIndex: c.kernelIndex,
      numKernels: c.numKernels,
      ...(c.jobId !== undefined ? { jobId: c.jobId } : {}),
      ...(c.taskIndex !== undefined ? { taskIndex: c.taskIndex } : {}),
      ...(c.numTasks !== undefined ? { numTasks: c.numTasks } : {}),
      runIndex: c.runIndex,
      ...(c.placement !== undefined ? { placement: c.placement } : {}),
      ...(c.service !== undefined ? { service: c.service } : {}),
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
        // Not awaited: the queue should not wait out a grace period.
        this.#track(
          this.agent.stop(c.sessionId, c.kernelIndex, {
            ...(c.graceMs !== undefined ? { graceMs: c.graceMs } : {}),
            ...(c.condition !== undefined && c.condition !== "Unschedulable" && c.condition !== "AgentLost"
              ? { condition: c.condition }
              : {}),
            ...(c.reason !== undefined ? { reason: c.reason } : {}),
          }),
        );
        return;
    }
  }

  // --- reports -----------------------------------------------------------------------------

  async #report(report: KernelReport): Promise<void> {
    const ended = report.status === "TERMINATED" || report.status === "ERROR";
    // A run's output is in CloudWatch Logs before anyone hears it has ended, and the report says
    // how many events its stream holds: a reader reads until it has read that many.
    const logEventCount = ended
      ? await this.shipper?.flush(report.sessionId, report.kernelIndex, report.runIndex)
      : undefined;
    const key = this.#signingKey;
    if (key === undefined) {
      this.#o.log(
        `agent ${this.#o.id}: a report for ${report.sessionId}/${report.kernelIndex} while unregistered was not sent`,
      );
      return;
    }
    const { pid: _pid, signal, ...rest } = report;
    const detail: EventDetailInput<"Kernel Status Changed"> = {
      ...rest,
      incarnation: this.#incarnation,
      ...(signal !== undefined && ended ? { signal } : {}),
      ...(logEventCount !== undefined ? { logEventCount } : {}),
      signature: "",
    };
    const run = `${detail.sessionId}/${detail.kernelIndex}/${detail.runIndex}/${detail.placement ?? 0}`;
    // PULLING moves no stage: it may wait for its successor (pullingHoldMs), not while draining.
    const hold = detail.status === "PULLING" && this.#state === "ready";
    return this.#held.report(run, detail, (d) => this.#sendReport(run, d, key), hold);
  }

  async #sendReport(
    run: string,
    detail: EventDetailInput<"Kernel Status Changed">,
    key: string,
  ): Promise<void> {
    const signed = (d: typeof detail) =>
      toPutEventsEntry(this.#o.busName, DetailType.KernelStatusChanged, {
        ...d,
        signature: signDetail(key, DetailType.KernelStatusChanged, d),
      });
    // A report still queued behind another request (a PULLING, a RUNNING) that this one follows
    // goes with it, as a status passed through: one event, one message, one write. The outbox
    // merges only into the last entry queued under the key, whose detail #queuedReports holds.
    const earlier = this.#queuedReports.get(run);
    let queued = detail;
    const sent = this.#outbox.send(signed(detail), {
      key: run,
      merge: () => {
        const merged = earlier && withPassed(earlier, detail);
        if (merged) queued = merged;
        return merged ? signed(merged) : undefined;
      },
    });
    this.#queuedReports.set(run, queued);
    await sent;
    if (this.#queuedReports.get(run) === queued) this.#queuedReports.delete(run);
  }

  /** Rejects when the report was not sent: the agent keeps its probes for the next one. */
  async #reportRouteHealth(report: RouteHealthReport): Promise<void> {
    const key = this.#signingKey;
    if (key === undefined) {
      throw new Error(
        `route ${report.routeId}: health report held while agent ${this.#o.id} is unregistered`,
      );
    }
    const detail: EventDetailInput<"Route Health Reported"> = {
      ...report,
      probes: [...report.probes],
      incarnation: this.#incarnation,
      signature: "",
    };
    const sent = await this.#put(
      toPutEventsEntry(this.#o.busName, DetailType.RouteHealthReported, {
        ...detail,
        signature: signDetail(key, DetailType.RouteHealthReported, detail),
      }),
    );
    if (!sent) throw new Error(`route ${report.routeId}: the health report was not sent`);
  }

  async #sendHeartbeat(): Promise<void> {
    const key = this.#signingKey;
    if (key === undefined) return;
    const running = this.agent.running();
    const runs = running
      .filter((k) => !k.stopping)
      .slice(0, MAX_HEARTBEAT_RUNS)
      .map(({ sessionId, kernelIndex, runIndex, placement }) => ({
        sessionId,
        kernelIndex,
        runIndex,
        placement,
      }));
    const detail: EventDetailInput<"Agent Heartbeat"> = {
      agentId: this.#o.id,
      incarnation: this.#incarnation,
      capacity: { cpu: this.#o.capacity.cpu, memoryMiB: this.#o.capacity.memoryMiB },
      ...(this.#state === "draining" ? { draining: true } : {}),
      running: running.length,
      // Its processes, so the control plane can name the ones it considers ended (reconciliation).
      ...(runs.length > 0 ? { runs } : {}),
      atMs: Date.now(),
      signature: "",
    };
    await this.#put(
      toPutEventsEntry(this.#o.busName, DetailType.AgentHeartbeat, {
        ...detail,
        signature: signDetail(key, DetailType.AgentHeartbeat, detail),
      }),
    );
  }

  /** Reports must not be lost: the outbox retries, then says so loudly. Resolves whether it was sent. */
  #put(entry: ReturnType<typeof toPutEventsEntry>): Promise<boolean> {
    return this.#outbox.send(entry);
  }

  #track(p: Promise<unknown>): void {
    this.#pending.add(p);
    void p
      .catch((error: unknown) => this.#o.log(`agent ${this.#o.id}: ${String(error)}`))
      .finally(() => this.#pending.delete(p));
  }

  async #settle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }
}

function newIncarnation(): string {
  return randomUUID();
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Kernel processes an earlier run of this agent left behind: they carry the agent's id and a
 * termination log under its work root in their environment (agent/environment.ts). Linux only;
 * elsewhere nothing is found. Returns the pids signalled (SIGKILL to each one's process group).
 */
export function reapOrphans(agentId: string, workRoot: string): number[] {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const reaped: number[] = [];
  for (const name of pids) {
    const pid = Number(name);
    if (pid === process.pid) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${name}/environ`, "latin1");
    } catch {
      continue;
    }
    const vars = environ.split("\0");
    if (!vars.includes(`CAIRN_AGENT_ID=${agentId}`)) continue;
    const log = vars
      .find((v) => v.startsWith("CAIRN_TERMINATION_LOG="))
      ?.slice("CAIRN_TERMINATION_LOG=".length);
    if (log === undefined || !log.startsWith(workRoot)) continue;
    try {
      process.kill(pid, "SIGKILL");
      reaped.push(pid);
    } catch {
      // Gone meanwhile.
    }
  }
  return reaped;
}

function describeError(error: unknown): string {
  if (error === undefined) return "";
  return `: ${error instanceof Error ? error.message : JSON.stringify(error)}`;
}
