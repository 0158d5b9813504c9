/**
 * Replays of the session lifecycle, in the style of Iris's controller tests:
 * a scenario is a script of steps (a submission, an agent's report, the clock moving on) driven
 * through the real Coordinator and the real EnterStage against DynamoDB Local, with a simulated
 * clock. The Step Functions execution is the small ASL interpreter in driver.ts; agents are
 * scripted (ScriptedAgent) and speak the real protocol: registration, signed heartbeats and
 * kernel reports on the bus, commands on their channel.
 *
 * After every step the whole system settles: the driver carries executions forward, the bus
 * delivers what was published (status changes, reports) to the coordinator, until nothing moves.
 * After every coordinator run the state is read back from DynamoDB and the invariants
 * (invariants.ts) are checked; a broken one fails with the step log and the state.
 */
import { createHmac } from "node:crypto";
import type { SFNClient } from "@aws-sdk/client-sfn";
import { LifecycleExecutions } from "../../functions/adapters/sfn/lifecycle-executions.ts";
import { Coordinator, type CoordinatorDeps } from "../../functions/app/coordinator.ts";
import { enterStage, type EnterStageDeps } from "../../functions/app/enter-stage.ts";
import { isExpiryJudgement } from "../../functions/app/expiry-judge.ts";
import { KernelCommands } from "../../functions/app/kernel-commands.ts";
import type { AgentChannelPort } from "../../functions/core/ports/agent-channel.ts";
import type { EventsPort } from "../../functions/core/ports/event-bus.ts";
import type { SessionStatusChangedDetailInput } from "../../functions/core/ports/event-bus.ts";
import type { LifecycleExecutionsPort } from "../../functions/core/ports/lifecycle-executions.ts";
import { loadConfig } from "../../functions/config.ts";
import {
  signingPayload,
  type AgentMessage,
  type KernelCommandInput,
} from "../../functions/core/agent-protocol.ts";
import { DetailType, EventSource } from "../../functions/core/events.ts";
import type { HistoryRecord, SessionWithKernels } from "../../functions/core/model.ts";
import type { SessionSpecInput } from "../../functions/core/spec.ts";
import type { DynamoSessionStore } from "../../functions/adapters/dynamo/dynamo-session-store.ts";
import { freshTable, type TestTable } from "../store-fixtures.ts";
import { DynamoRequests } from "../../functions/adapters/dynamo/dynamo-requests.ts";
import { LeaseItems } from "../../functions/adapters/dynamo/lease-items.ts";
import { LifecycleDriver } from "./driver.ts";
import { checkAll, type Dump } from "./invariants.ts";
import { afterEach } from "vitest";
import { parseBatch } from "../../functions/handlers/coordinator-envelopes.ts";
import { EMPTY_BATCH } from "../../functions/app/coordinator.ts";

/** The replay's epoch: every time is a literal offset from it. */
export const T0 = 1_800_000_000_000;
/** The scripted agents' usual size. */
export const CAP = { cpu: 4, memoryMiB: 4096 } as const;
export const AGENT_TIMEOUT_MS = 30_000;
export const HEARTBEAT_MS = 10_000;
/** How long a claimer may live (the coordinator function's timeout): older claims are the sweep's. */
export const CLAIM_LIFETIME_MS = 60_000;
/** `summary()` writes these records the same way: none of them is ever merged (no "xN"). */
export { HISTORY_TO_RUNNING } from "../support/histories.ts";
const TERMINATION_GRACE_MS = 1_000;

type Envelope = Record<string, unknown> & { "detail-type": string; detail: Record<string, unknown> };
interface Resources {
  readonly cpu: number;
  readonly memoryMiB: number;
}

/** How a scripted agent answers a `prepare` command. */
export type PrepareScript = "ok" | "hold" | { readonly error: string };

interface KernelSlot {
  phase: "prepared" | "running" | "ended";
  readonly command: KernelCommandInput;
}

/**
 * An agent that does, instantly, what the real one reports: PREPARED for a prepare (or an
 * ERROR, or nothing, as scripted), RUNNING for a start, and TERMINATED 143 (SIGTERM) for a stop
 * of a running kernel. A kernel's exit is a step of the scenario (Replay.exit). A silent agent
 * sends nothing and reads nothing, as a dead host would.
 */
export class ScriptedAgent {
  readonly id: string;
  readonly capacity: Resources;
  incarnation: string;
  signingKey: string | undefined;
  silent = false;
  prepare: PrepareScript = "ok";
  nextHeartbeatAtMs: number;
  /** Reports held back instead of sent (a slow network): Replay.release sends them later. */
  deferReports = false;
  /** Report PULLING as a prepare begins, as the real agent does (off: most scenarios predate it). */
  reportsPulling = false;
  /**
   * A started kernel exits at once with this code: one TERMINATED report that passed through
   * RUNNING, as the real agent's outbox merges a `true` kernel's two reports.
   */
  exitsOnStart: number | undefined = undefined;
  /**
   * A start fails before the command runs (spawn failed, no capacity left): an ERROR report
   * with this message and the agent's `start_failed` category, as the real agent's failRun sends.
   */
  startError: string | undefined = undefined;
  readonly held: { readonly command: KernelCommandInput; readonly detail: Record<string, unknown> }[] = [];
  readonly slots = new Map<string, KernelSlot>();
  readonly received: AgentMessage[] = [];
  readonly #replay: Replay;

  constructor(replay: Replay, id: string, capacity: Resources, generation: number) {
    this.#replay = replay;
    this.id = id;
    this.capacity = capacity;
    this.incarnation = `inc-${id}-${generation}`;
    this.signingKey = undefined;
    this.nextHeartbeatAtMs = replay.nowMs + HEARTBEAT_MS;
  }

  receive(message: AgentMessage): void {
    if (this.silent) return;
    this.received.push(message);
    if (message.type === "registered") {
      if (message.incarnation === this.incarnation) this.signingKey = message.signingKey;
      return;
    }
    // This harness's heartbeats list no runs, so no `ended` answer is for it.
    if (message.type === "fenced" || message.type === "ended") return;
    if (message.incarnation !== this.incarnation) return;
    const c = message.command;
    const key = `${c.sessionId}/${c.kernelIndex}/${c.runIndex}`;
    const slot = this.slots.get(key);
    this.#replay.note(`  ${this.id} ← ${c.action} ${c.sessionId}/${c.kernelIndex} run ${c.runIndex}`);
    switch (c.action) {
      case "prepare": {
        if (this.prepare === "hold") return;
        if (this.reportsPulling) this.report(c, "PULLING");
        if (this.prepare !== "ok") {
          this.report(c, "ERROR", { message: this.prepare.error });
          return;
        }
        this.slots.set(key, { phase: "prepared", command: c });
        this.report(c, "PREPARED");
        return;
      }
      case "start":
        if (this.startError !== undefined) {
          this.slots.set(key, { phase: "ended", command: c });
          this.report(c, "ERROR", { message: this.startError, failureCategory: "start_failed" });
          return;
        }
        if (this.exitsOnStart !== undefined) {
          this.slots.set(key, { phase: "ended", command: c });
          this.report(c, "TERMINATED", {
            exitCode: this.exitsOnStart,
            passed: [{ status: "RUNNING", atMs: this.#replay.nowMs }],
          });
          return;
        }
        this.slots.set(key, { phase: "running", command: c });
        this.report(c, "RUNNING");
        return;
      case "stop": {
        if (!slot || slot.phase === "ended") return;
        const was = slot.phase;
        slot.phase = "ended";
        const cause = {
          ...(c.condition !== undefined ? { condition: c.condition } : {}),
          ...(c.reason !== undefined ? { message: c.reason } : {}),
        };
        if (was === "prepared") {
          this.report(c, "TERMINATED", { ...cause, message: c.reason ?? "stopped before it started" });
        } else {
          this.report(c, "TERMINATED", { exitCode: 143, signal: "SIGTERM", ...cause });
        }
        return;
      }
    }
  }

  /** The kernel's process exits with `exitCode`. */
  exit(sessionId: string, kernelIndex: number, exitCode: number): void {
    const entry = [...this.slots.entries()].find(
      ([, s]) =>
        s.phase === "running" && s.command.sessionId === sessionId && s.command.kernelIndex === kernelIndex,
    );
    if (!entry) throw new Error(`${this.id} runs no kernel ${sessionId}/${kernelIndex}`);
    entry[1].phase = "ended";
    this.report(entry[1].command, "TERMINATED", { exitCode });
  }

  runs(sessionId: string, kernelIndex: number): boolean {
    return [...this.slots.values()].some(
      (s) =>
        s.phase === "running" && s.command.sessionId === sessionId && s.command.kernelIndex === kernelIndex,
    );
  }

  report(
    c: KernelCommandInput,
    status: "PULLING" | "PREPARED" | "RUNNING" | "TERMINATED" | "ERROR",
    extra: Record<string, unknown> = {},
  ): void {
    const detail = this.sign(DetailType.KernelStatusChanged, {
      agentId: this.id,
      incarnation: this.incarnation,
      sessionId: c.sessionId,
      kernelIndex: c.kernelIndex,
      runIndex: c.runIndex,
      ...(c.placement !== undefined ? { placement: c.placement } : {}),
      status,
      ...extra,
      atMs: this.#replay.nowMs,
    });
    if (this.deferReports) this.held.push({ command: c, detail });
    else this.#replay.publish(EventSource.Agent, DetailType.KernelStatusChanged, detail);
  }

  heartbeat(): void {
    if (this.silent) return;
    this.#replay.publish(
      EventSource.Agent,
      DetailType.AgentHeartbeat,
      this.sign(DetailType.AgentHeartbeat, {
        agentId: this.id,
        incarnation: this.incarnation,
        capacity: { ...this.capacity },
        atMs: this.#replay.nowMs,
      }),
    );
  }

  /** HMAC-SHA256 over the protocol's signing payload, as docs/agents.md describes it. */
  sign(detailType: string, detail: Record<string, unknown>): Record<string, unknown> {
    if (this.signingKey === undefined) throw new Error(`${this.id} is not registered`);
    const signature = createHmac("sha256", this.signingKey)
      .update(signingPayload(detailType, detail))
      .digest("hex");
    return { ...detail, signature };
  }
}

export interface ReplayOptions {
  /** Coordinator runs per step before the replay gives up (a loop that never settles). */
  readonly maxRunsPerStep?: number;
  /**
   * At-least-once delivery: every batch the bus delivers is delivered again, whole, in the next
   * coordinator run (EventBridge and SQS may do so at any time).
   */
  readonly redeliver?: boolean;
  /** The administrator's submission filter, as the coordinator is given it. */
  readonly submissionFilter?: CoordinatorDeps["submissionFilter"];
  /** How many sessions a pass reads at most (the coordinator's batch limit; default the config's). */
  readonly batchLimit?: number;
  /** Placement serialized per scheduling queue by leases in the table, as deployed. */
  readonly placementLeases?: boolean;
}

export class Replay {
  nowMs = T0;
  readonly store: DynamoSessionStore;
  readonly driver: LifecycleDriver;
  readonly coordinator: Coordinator;
  readonly agents = new Map<string, ScriptedAgent>();
  /** Events on the bus not yet delivered to the coordinator. */
  readonly bus: Envelope[] = [];
  /** Every status change published, in order. */
  readonly statusChanges: SessionStatusChangedDetailInput[] = [];
  readonly rejections: string[] = [];
  readonly requeues: string[] = [];
  /** The coordinator's and EnterStage's error log lines. */
  readonly errors: string[] = [];
  /** Fault switch: this many of the next sends to agents' queues fail (SQS unreachable). */
  failSends = 0;
  /**
   * Fault switch: Step Functions is slow to carry a completed callback on. Each execution moves
   * one state at a time, and the bus (an agent's report of the command the completing pass sent)
   * reaches the coordinator before the next stage's entry is written.
   */
  slowTransitions = false;
  /**
   * Fault switch: the next coordinator invocation that completes a stage's callback dies right
   * before the completion goes out (its process killed: nothing after it runs, no `finally`), and
   * its batch is delivered again, as SQS does once the message's visibility timeout passes.
   */
  killBeforeComplete = 0;
  /** Resolves when the coordinator invocation under way is killed (killBeforeComplete). */
  #kill: ((k: "killed") => void) | undefined;
  /**
   * Every call the control plane made to the store, in order, with the session it names (the
   * replay's own reads of the state it checks go through a store of their own).
   */
  readonly storeCalls: StoreCall[] = [];
  /** The most calls of each store method that were in flight at once. */
  readonly mostAtOnce = new Map<string, number>();
  /**
   * Fault switch: a competing writer's write, made through a store of its own just before the
   * next call of the method (once), so that call meets a real conflict in DynamoDB Local.
   */
  readonly #interposed = new Map<string, (store: DynamoSessionStore) => Promise<unknown>>();
  /** The sessions EnterStage read (getSession), in order: an entry given a copy reads none. */
  readonly entryReads: string[] = [];
  /** The placement leases, when placement is serialized by them (ReplayOptions.placementLeases). */
  readonly leases: LeaseItems | undefined;
  readonly lines: string[] = [];
  readonly #table: TestTable;
  /** The store the replay reads the state through: its reads are not the control plane's. */
  readonly #observer: DynamoSessionStore;
  readonly #ids = new Set<string>();
  /** Process starts per agent id. */
  readonly #starts = new Map<string, number>();
  readonly #maxRuns: number;
  readonly #redeliver: boolean;
  #events = 0;
  #steps = 0;
  #last: Dump | undefined;

  private constructor(table: TestTable, options: ReplayOptions) {
    this.#table = table;
    this.#observer = table.store();
    this.#maxRuns = options.maxRunsPerStep ?? 100;
    this.#redeliver = options.redeliver === true;
    if (options.placementLeases === true) {
      this.leases = new LeaseItems(new DynamoRequests(table.client, table.tableName, undefined));
    }
    this.store = recording(table.store(), this.storeCalls, this.mostAtOnce, (method) => {
      const competing = this.#interposed.get(method);
      if (competing === undefined) return undefined;
      this.#interposed.delete(method);
      this.note(`  fault: a competing write before ${method}`);
      return competing(table.store());
    });
    const config = loadConfig({
      CAIRN_TABLE_NAME: table.tableName,
      CAIRN_EVENT_BUS_NAME: "replay",
      CAIRN_STATE_MACHINE_ARN: "arn:aws:states:local:000000000000:stateMachine:replay",
      CAIRN_AGENT_TIMEOUT_MS: String(AGENT_TIMEOUT_MS),
      CAIRN_TERMINATION_GRACE_MS: String(TERMINATION_GRACE_MS),
      ...(options.batchLimit !== undefined ? { CAIRN_BATCH_LIMIT: String(options.batchLimit) } : {}),
    });
    const clock = { nowMs: () => this.nowMs };
    const log = {
      info: () => {},
      warn: (m: string, f?: Record<string, unknown>) =>
        this.note(`  warn: ${m} ${f ? JSON.stringify(f) : ""}`),
      error: (m: string, f?: Record<string, unknown>) => {
        const line = `${m} ${f ? JSON.stringify(f) : ""}`;
        this.errors.push(line);
        this.note(`  ERROR: ${line}`);
      },
    };
    const events: EventsPort = {
      statusChanged: (details) => {
        for (const d of details) {
          this.statusChanges.push(d);
          this.publish(EventSource.ControlPlane, DetailType.SessionStatusChanged, { ...d });
        }
        return Promise.resolve();
      },
      rejected: (details) => {
        this.rejections.push(...details.map((d) => d.reason));
        return Promise.resolve();
      },
      requeued: (details) => {
        this.requeues.push(...details.map((d) => `${d.sessionId} run ${d.runIndex}: ${d.reason}`));
        return Promise.resolve();
      },
      jobStateChanged: () => Promise.resolve(),
    };
    const channel: AgentChannelPort = {
      open: () => Promise.resolve(),
      send: (deliveries) => {
        if (this.failSends > 0) {
          this.failSends--;
          this.note("  fault: a send to the agents' queues failed");
          return Promise.reject(new Error("the agents' queues are unreachable (fault switch)"));
        }
        for (const { agentId, message } of deliveries) this.agents.get(agentId)?.receive(message);
        return Promise.resolve();
      },
    };
    this.driver = new LifecycleDriver({
      nowMs: () => this.nowMs,
      enterStage: (input) =>
        isExpiryJudgement(input) ? this.coordinator.judgeExpiry(input) : enterStage(input, enterDeps),
      log: (line) => this.note(line),
    });
    const lifecycle = new LifecycleExecutions(
      this.driver.client as unknown as SFNClient,
      config.stateMachineArn,
    );
    const executions: LifecycleExecutionsPort = {
      start: (sessionId, input) => lifecycle.start(sessionId, input),
      describe: (name) => lifecycle.describe(name),
      complete: (token, transition) => {
        if (this.killBeforeComplete > 0 && this.#kill !== undefined) {
          this.killBeforeComplete--;
          this.note(
            `  fault: the coordinator's invocation is killed before completing ${transition.from}'s callback`,
          );
          this.#kill("killed");
          // The process is gone: this call never returns, and nothing after it runs.
          return new Promise<never>(() => {});
        }
        return lifecycle.complete(token, transition);
      },
    };
    this.coordinator = new Coordinator({
      store: this.store,
      executions,
      events,
      channel,
      config,
      clock,
      log,
      claimLifetimeMs: CLAIM_LIFETIME_MS,
      ...(options.submissionFilter ? { submissionFilter: options.submissionFilter } : {}),
      ...(this.leases !== undefined
        ? { placementLeases: { leases: this.leases, leaseMs: CLAIM_LIFETIME_MS } }
        : {}),
    });
    const store = this.store;
    const entryReads = this.entryReads;
    const enterDeps: EnterStageDeps = {
      // The table's store, with EnterStage's session reads counted.
      store: Object.assign(Object.create(store) as typeof store, {
        getSession: (id: string) => {
          entryReads.push(id);
          return store.getSession(id);
        },
      }),
      events,
      commands: new KernelCommands(this.store, channel),
      clock,
      log,
      terminationGraceMs: TERMINATION_GRACE_MS,
      advance: (sessionId, status, entered, claimed) =>
        this.coordinator.advance(sessionId, status, entered, claimed),
    };
  }

  static async open(name: string, options: ReplayOptions = {}): Promise<Replay> {
    return new Replay(await freshTable(`cairn-replay-${name}`), options);
  }

  async close(): Promise<void> {
    await this.#table.drop();
  }

  // --- the log ---------------------------------------------------------------------------

  note(line: string): void {
    this.lines.push(line);
  }

  /** The step log, for a failing assertion's message. */
  get stepLog(): string {
    return this.lines.join("\n");
  }

  #at(): string {
    return `t+${((this.nowMs - T0) / 1000).toFixed(3)}s`;
  }

  // --- the bus ---------------------------------------------------------------------------

  publish(source: string, detailType: string, detail: Record<string, unknown>): void {
    this.bus.push({
      id: `evt-${String(++this.#events).padStart(4, "0")}`,
      time: new Date(this.nowMs).toISOString(),
      source,
      "detail-type": detailType,
      detail,
    });
  }

  // --- steps -----------------------------------------------------------------------------

  /** One step of the script: `act`, then everything it sets moving, until the system is still. */
  async step(label: string, act: () => void | Promise<void>): Promise<void> {
    this.note(`#${++this.#steps} [${this.#at()}] ${label}`);
    await act();
    await this.#settle(label);
  }

  async #settle(label: string): Promise<void> {
    // The step's own act may have changed state without a coordinator run (a timer firing).
    let checked = false;
    for (let run = 0; ; run++) {
      if (this.driver.busy) checked = false;
      if (run >= this.#maxRuns)
        this.#fail(label, [`the system did not settle in ${this.#maxRuns} coordinator runs`]);
      if (this.slowTransitions) await this.driver.drainOnce();
      else await this.driver.drain();
      if (this.bus.length === 0) {
        if (this.driver.busy) continue;
        break;
      }
      const batch = this.bus.splice(0);
      await this.#deliver(batch, "bus → coordinator");
      if (this.#redeliver) {
        await this.driver.drain();
        await this.check(label);
        await this.#deliver(batch, "bus → coordinator (again)");
      }
      if (!this.slowTransitions) await this.driver.drain();
      await this.check(label);
      checked = true;
    }
    if (!checked) await this.check(label);
  }

  async #deliver(batch: readonly Envelope[], how: string): Promise<void> {
    this.note(`  ${how}: ${batch.map(describe).join(", ")}`);
    const killed = new Promise<"killed">((resolve) => (this.#kill = resolve));
    const report = await Promise.race([this.coordinator.run(parseBatch(batch)), killed]).finally(() => {
      this.#kill = undefined;
    });
    if (report === "killed") {
      this.note(`  the invocation died; its batch is delivered again`);
      this.bus.push(...batch);
      return;
    }
    for (const i of report.retry) this.bus.push(batch[i]!);
    if (report.retry.length > 0) this.note(`  redelivered: ${report.retry.length}`);
  }

  submit(sessionId: string, spec: SessionSpecInput): Promise<void> {
    this.#ids.add(sessionId);
    return this.step(`submit ${sessionId}`, () =>
      this.publish(EventSource.Client, DetailType.SessionSubmitted, { sessionId, spec }),
    );
  }

  cancel(sessionId: string, reason?: string): Promise<void> {
    return this.step(`cancel ${sessionId}`, () =>
      this.publish(EventSource.Client, DetailType.SessionCancelRequested, {
        sessionId,
        ...(reason !== undefined ? { reason } : {}),
      }),
    );
  }

  /** Raw entries on the bus in one step (a duplicate, a malformed one). */
  put(label: string, ...entries: { source: string; detailType: string; detail: Record<string, unknown> }[]) {
    for (const e of entries) {
      const id = e.detail["sessionId"];
      if (e.detailType === DetailType.SessionSubmitted && typeof id === "string") this.#ids.add(id);
    }
    return this.step(label, () => {
      for (const e of entries) this.publish(e.source, e.detailType, e.detail);
    });
  }

  /** A new agent process registers; its answer (the signing key) arrives on its channel. */
  async register(agentId: string, capacity: Resources): Promise<ScriptedAgent> {
    // Each process start of the agent is a new incarnation: inc-<id>-1, inc-<id>-2, …
    const generation = (this.#starts.get(agentId) ?? 0) + 1;
    this.#starts.set(agentId, generation);
    const agent = new ScriptedAgent(this, agentId, capacity, generation);
    this.agents.set(agentId, agent);
    await this.step(`register ${agentId} (${capacity.cpu} cpu, ${capacity.memoryMiB} MiB)`, () =>
      this.publish(EventSource.Agent, DetailType.AgentRegistrationRequested, {
        agentId,
        incarnation: agent.incarnation,
        capacity: { ...capacity },
        atMs: this.nowMs,
      }),
    );
    if (agent.signingKey === undefined) this.#fail(`register ${agentId}`, ["the agent got no signing key"]);
    return agent;
  }

  agent(agentId: string): ScriptedAgent {
    const a = this.agents.get(agentId);
    if (!a) throw new Error(`no agent ${agentId}`);
    return a;
  }

  /** The kernel's process exits on whichever agent runs it. */
  exit(sessionId: string, kernelIndex: number, exitCode: number): Promise<void> {
    return this.step(`${sessionId}/${kernelIndex} exits ${exitCode}`, () => {
      // A silent agent is a dead host: nothing it ran can report.
      const agent = [...this.agents.values()].find((a) => !a.silent && a.runs(sessionId, kernelIndex));
      if (!agent) throw new Error(`no agent runs ${sessionId}/${kernelIndex}`);
      agent.exit(sessionId, kernelIndex, exitCode);
    });
  }

  /** The agent's held reports that `which` selects (by the command they answer, or their detail) are sent now. */
  release(
    agentId: string,
    which: (c: KernelCommandInput, detail: Record<string, unknown>) => boolean,
    label: string,
  ): Promise<void> {
    return this.step(`${agentId} sends held reports: ${label}`, () => {
      const agent = this.agent(agentId);
      const send = agent.held.filter((r) => which(r.command, r.detail));
      agent.held.splice(0, agent.held.length, ...agent.held.filter((r) => !which(r.command, r.detail)));
      for (const r of send) this.publish(EventSource.Agent, DetailType.KernelStatusChanged, r.detail);
    });
  }

  /** The periodic safety sweep. */
  sweep(): Promise<void> {
    return this.step("sweep", async () => {
      const report = await this.coordinator.run(EMPTY_BATCH, { sweep: true });
      if (report.retry.length > 0) this.note(`  sweep asked for ${report.retry.length} redeliveries`);
    });
  }

  /**
   * The clock moves on by `ms`. On the way, in time order, whatever falls due happens as its own
   * step: live agents' heartbeats (every HEARTBEAT_MS) and the executions' timers (a stage's
   * timeout, a Wait's end), as Step Functions would fire them.
   */
  async advance(ms: number): Promise<void> {
    const target = this.nowMs + ms;
    for (;;) {
      const agents = [...this.agents.values()].filter((a) => !a.silent && a.nextHeartbeatAtMs <= target);
      const beat = agents.sort(
        (a, b) => a.nextHeartbeatAtMs - b.nextHeartbeatAtMs || a.id.localeCompare(b.id),
      )[0];
      const timer = this.driver.due(target)[0];
      if (!beat && !timer) break;
      if (beat && (!timer || beat.nextHeartbeatAtMs <= timer.atMs)) {
        this.nowMs = Math.max(this.nowMs, beat.nextHeartbeatAtMs);
        beat.nextHeartbeatAtMs += HEARTBEAT_MS;
        await this.step(`heartbeat ${beat.id}`, () => beat.heartbeat());
      } else if (timer) {
        this.nowMs = Math.max(this.nowMs, timer.atMs);
        await this.step(`timer: ${timer.execution.name} ${timer.execution.state} ${timer.kind}`, () =>
          this.driver.fire(timer),
        );
      }
    }
    this.nowMs = target;
    this.note(`   [${this.#at()}] clock`);
  }

  // --- state -----------------------------------------------------------------------------

  async dump(): Promise<Dump> {
    const ids = [...new Set([...this.#ids, ...this.driver.executions.keys()])].sort();
    // The agents the scenario registered are all there are: their allocations are read alongside.
    const [sessions, agents, ...held] = await Promise.all([
      this.#observer.getSessions(ids),
      this.#observer.listAgents(),
      ...[...this.agents.keys()].map((id) => this.#observer.allocationsOnAgent(id)),
    ]);
    const allocations = held.flat();
    const created = new Map<string, number>();
    for (const e of this.driver.executions.keys()) created.set(e, 1);
    return {
      atMs: this.nowMs,
      sessions: [...sessions].sort((a, b) => a.session.id.localeCompare(b.session.id)),
      agents: [...agents].sort((a, b) => a.id.localeCompare(b.id)),
      allocations,
      executions: this.driver.executions,
      executionsCreated: created,
      processes: [...this.agents.values()]
        .filter((a) => !a.silent)
        .flatMap((a) =>
          [...a.slots.values()]
            .filter((slot) => slot.phase === "running")
            .map((slot) => ({
              agentId: a.id,
              sessionId: slot.command.sessionId,
              kernelIndex: slot.command.kernelIndex,
            })),
        ),
    };
  }

  /** Reads the state back and checks every invariant; fails with the step log and the state. */
  async check(label: string): Promise<void> {
    const dump = await this.dump();
    const problems = checkAll(this.#last, dump);
    this.#last = dump;
    if (problems.length > 0) this.#fail(label, problems, dump);
  }

  #fail(label: string, problems: readonly string[], dump?: Dump): never {
    throw new Error(
      `after step "${label}":\n  ${problems.join("\n  ")}\n\nstep log:\n${this.stepLog}\n\nstate:\n${dump ? formatDump(dump) : "(not read)"}`,
    );
  }

  /** Fault switch: `competing` writes (through a store of its own) just before the next `method` call. */
  interpose(
    method: keyof DynamoSessionStore,
    competing: (store: DynamoSessionStore) => Promise<unknown>,
  ): void {
    this.#interposed.set(method, competing);
  }

  async session(id: string): Promise<SessionWithKernels> {
    const s = await this.#observer.getSession(id);
    if (!s) throw new Error(`no session ${id}\n${this.stepLog}`);
    return s;
  }

  /** The session's history as `handler result from->to`, `xN` where N identical records merged. */
  async history(id: string): Promise<string[]> {
    return (await this.#observer.listHistory(id)).map(summary);
  }

  async state(): Promise<string> {
    return formatDump(await this.dump());
  }
}

export function summary(h: HistoryRecord): string {
  return `${h.handler} ${h.result} ${h.fromStatus}->${h.toStatus ?? "="}${h.count > 1 ? ` x${h.count}` : ""}`;
}

function describe(e: Envelope): string {
  const d = e.detail;
  const f = (key: string): string => {
    const v = d[key];
    return typeof v === "string" || typeof v === "number" ? String(v) : "";
  };
  switch (e["detail-type"]) {
    case DetailType.SessionStatusChanged:
      return `${f("sessionId")} ${f("from")}→${f("to")}`;
    case DetailType.KernelStatusChanged:
      return `${f("agentId")}: ${f("sessionId")}/${f("kernelIndex")} ${f("status")}${f("exitCode") !== "" ? ` exit ${f("exitCode")}` : ""}`;
    case DetailType.AgentHeartbeat:
      return `heartbeat ${f("agentId")}`;
    default:
      return `${e["detail-type"]} ${f("sessionId") || f("agentId")}`;
  }
}

export function formatDump(d: Dump): string {
  const lines: string[] = [];
  for (const { session: s, kernels } of d.sessions) {
    const e = d.executions.get(s.executionName);
    lines.push(
      `  ${s.id} ${s.status} v${s.version} tries ${s.tries} run ${s.runIndex} token ${s.stage.taskToken ?? "-"}` +
        ` | execution ${e ? `${e.status} at ${e.state}${e.open ? ` open ${e.open.token}` : ""}` : "none"}`,
    );
    for (const k of kernels) {
      lines.push(
        `    kernel ${k.index} ${k.status}${k.agentId ? ` @${k.agentId}` : ""} ${k.resources.cpu} cpu${k.exitCode !== undefined ? ` exit ${k.exitCode}` : ""}${k.outcome ? ` ${k.outcome}` : ""}`,
      );
    }
  }
  for (const a of d.agents) {
    lines.push(
      `  agent ${a.id} free ${a.free.cpu}/${a.capacity.cpu} cpu ${a.free.memoryMiB}/${a.capacity.memoryMiB} MiB${a.lostAtMs !== undefined ? " LOST" : ""}`,
    );
  }
  for (const a of d.allocations) {
    lines.push(
      `  allocation ${a.sessionId}@${a.agentId} ${a.resources.cpu} cpu kernels [${a.kernelIndexes.join(",")}]`,
    );
  }
  return lines.join("\n");
}

/** A test file's replays: the function returned opens one, closed again after each test. */
export function replaysClosedAfterEach(
  options: ReplayOptions = {},
): (name: string, own?: ReplayOptions) => Promise<Replay> {
  let current: Replay | undefined;
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return async (name, own = {}) => (current = await Replay.open(name, { ...options, ...own }));
}

export interface StoreCall {
  readonly method: string;
  readonly sessionId?: string;
}

/**
 * The store, with each call from outside it recorded (its own internal calls are not), after
 * whatever `before` returns for its method has settled.
 */
function recording<T extends object>(
  store: T,
  calls: StoreCall[],
  mostAtOnce: Map<string, number>,
  before: (method: string) => Promise<unknown> | undefined,
): T {
  const inFlight = new Map<string, number>();
  const counted = (method: string, result: unknown): unknown => {
    if (!(result instanceof Promise)) return result;
    const now = (inFlight.get(method) ?? 0) + 1;
    inFlight.set(method, now);
    mostAtOnce.set(method, Math.max(mostAtOnce.get(method) ?? 0, now));
    return result.finally(() => inFlight.set(method, (inFlight.get(method) ?? 1) - 1));
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function" || typeof property !== "string") return value;
      return (...args: unknown[]) => {
        const first = args[0];
        const sessionId =
          typeof first === "string"
            ? first
            : typeof first === "object" && first !== null && "sessionId" in first
              ? String(first.sessionId)
              : undefined;
        calls.push(sessionId !== undefined ? { method: property, sessionId } : { method: property });
        const call = () => counted(property, (value as (...a: unknown[]) => unknown).apply(target, args));
        const competing = before(property);
        return competing === undefined ? call() : competing.then(call);
      };
    },
  });
}
