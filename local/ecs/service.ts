/**
 * The embedded ECS: clusters, task definitions and Fargate tasks whose containers run as local
 * child processes. Each task walks ECS's lifecycle (PROVISIONING → PENDING → ACTIVATING →
 * RUNNING → DEACTIVATING → STOPPING → DEPROVISIONING → STOPPED) and publishes an
 * `ECS Task State Change` event on every change, with the stop codes ECS uses:
 *
 * - EssentialContainerExited: an essential container's process exited;
 * - UserInitiated: StopTask (SIGTERM, then SIGKILL after the container's stopTimeout, 30 s);
 * - TaskFailedToStart: a command that cannot be spawned, or an awslogs stream that cannot be
 *   created, with a stoppedReason shaped like ECS's;
 * - SpotInterruption: the `interruptSpot` fault switch, on a FARGATE_SPOT task.
 *
 * What it does not do: pull images (the image is recorded; the command runs on this machine),
 * isolate networks (the ENI is a made-up attachment), or enforce cpu/memory on the process.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clusterArn, clusterNameOf, containerArn, newTaskId, taskArn, taskIdOf, type Scope } from "./arns.ts";
import { startContainerProcess, SpawnFailure, type ContainerProcess } from "./container-process.ts";
import { clientTokenConflict, invalidParameter } from "./errors.ts";
import { recordContainerProcess } from "./stale.ts";
import type { RunPlan, StrategyItem } from "./run-input.ts";
import {
  EcsTask,
  LastStatus,
  StopCode,
  type CapacityProvider,
  type ContainerState,
  type NetworkAttachment,
} from "./task.ts";
import { TaskDefinitions, type ContainerDefinition, type Tag } from "./task-definitions.ts";

/** A PutEvents-style entry, as ECS puts it on the account's default bus. */
export interface EcsEventEntry {
  readonly Source: "aws.ecs";
  readonly DetailType: "ECS Task State Change";
  readonly Detail: string;
  readonly Resources: readonly string[];
  readonly Time: Date;
}

/** Where `awslogs` containers write (the runtime's CloudWatch Logs). */
export interface TaskLogSink {
  /**
   * Creates the stream (creating the group first when `createGroup`, as awslogs-create-group
   * does). Throws with the Logs service's message when it cannot, e.g. the group is missing.
   */
  createStream(group: string, stream: string, createGroup: boolean): void;
  put(group: string, stream: string, event: { readonly timestamp: number; readonly message: string }): void;
}

export interface EcsServiceOptions {
  /** @default "local" */
  readonly region?: string;
  /** @default "000000000000" */
  readonly account?: string;
  /** Clusters that exist from the start. @default ["default"] */
  readonly clusters?: readonly string[];
  /** Receives every task state change event. @default none */
  readonly publish?: (entry: EcsEventEntry) => void;
  /** @default none: `awslogs` output is dropped */
  readonly logs?: TaskLogSink;
  /** Time between the lifecycle's bookkeeping steps (provisioning, deprovisioning). @default 20 */
  readonly stepDelayMs?: number;
  /** Each task's working directory is made here and removed when it stops. @default the OS temp dir */
  readonly workRoot?: string;
  /** What a container inherits before its definition's environment (the image's ENV stands here). */
  readonly baseEnv?: Readonly<Record<string, string | undefined>>;
  /** STOPPED tasks stay describable this long, as on ECS (about an hour). @default 3600000 */
  readonly stoppedRetentionMs?: number;
  /** @default Date.now */
  readonly clock?: () => number;
  /** @default console */
  readonly logger?: { warn(message: string): void };
}

/** How long ECS holds a RunTask client token (ECS_Idempotency: 24 hours). */
export const CLIENT_TOKEN_TTL_MS = 24 * 3_600_000;

interface ClientTokenUse {
  readonly parameters: string;
  readonly taskArns: readonly string[];
  readonly atMs: number;
}

/** ECS's message when Fargate capacity is short; RunTask reports it in `failures`. */
export const CAPACITY_UNAVAILABLE =
  "Capacity is unavailable at this time. Please try again later or in a different availability zone";
export const SPOT_INTERRUPTED_REASON = "Your Spot Task was interrupted.";
export const ESSENTIAL_EXITED_REASON = "Essential container in task exited";
/** What ECS records when StopTask gives no reason. */
export const USER_STOPPED_REASON = "Task stopped by user";
const DEFAULT_STOP_TIMEOUT_SECONDS = 30;

interface ContainerRun {
  readonly state: ContainerState;
  readonly definition: ContainerDefinition;
  readonly argv: readonly string[];
  readonly env: Record<string, string>;
  process?: ContainerProcess;
}

interface TaskRun {
  readonly task: EcsTask;
  readonly containers: readonly ContainerRun[];
  readonly timers: Set<NodeJS.Timeout>;
  readonly workDir: string;
  activating: boolean;
  stopping: boolean;
  finishing: boolean;
  stoppedAtMs?: number;
}

export interface ListFilter {
  readonly cluster: string;
  readonly family?: string;
  readonly startedBy?: string;
  readonly desiredStatus: "RUNNING" | "PENDING" | "STOPPED";
}

export class EcsService {
  readonly scope: Scope;
  readonly taskDefinitions: TaskDefinitions;
  /**
   * Fault switches for tests. `unavailableCapacity`: RunTask places no task on these capacity
   * providers and reports each in `failures` with ECS's capacity message.
   */
  readonly faults = {
    unavailableCapacity: new Set<CapacityProvider>(),
    /**
     * RunTask answers lost after their tasks were placed: each of the next this many RunTasks
     * places its tasks and then fails with a ServerException (HTTP 500), as a timeout or a
     * server fault after the mutation would. A client that asks again with the same client
     * token gets the tasks it started; one without a token starts more.
     */
    lostRunTaskAnswers: 0,
  };

  readonly #clusters = new Set<string>();
  readonly #runs = new Map<string, TaskRun>();
  /** RunTask client tokens by cluster and token: what the request was, and the tasks it started. */
  readonly #clientTokens = new Map<string, ClientTokenUse>();
  readonly #publish: ((entry: EcsEventEntry) => void) | undefined;
  readonly #logs: TaskLogSink | undefined;
  readonly #stepMs: number;
  readonly #workRoot: string;
  readonly #baseEnv: Readonly<Record<string, string | undefined>>;
  readonly #retentionMs: number;
  readonly #clock: () => number;
  readonly #logger: { warn(message: string): void };
  #nextIp = 1;
  #closed = false;

  constructor(options: EcsServiceOptions = {}) {
    this.scope = { region: options.region ?? "local", account: options.account ?? "000000000000" };
    this.#clock = options.clock ?? Date.now;
    this.taskDefinitions = new TaskDefinitions(this.scope, this.#clock);
    for (const name of options.clusters ?? ["default"]) this.#clusters.add(name);
    this.#publish = options.publish;
    this.#logs = options.logs;
    this.#stepMs = options.stepDelayMs ?? 20;
    this.#workRoot = options.workRoot ?? join(tmpdir(), `cairn-ecs-${process.pid}`);
    this.#baseEnv = options.baseEnv ?? { PATH: process.env.PATH, HOME: process.env.HOME };
    this.#retentionMs = options.stoppedRetentionMs ?? 3_600_000;
    this.#logger = options.logger ?? console;
  }

  createCluster(name: string): string {
    this.#clusters.add(name);
    return clusterArn(this.scope, name);
  }

  /** The ARN of a cluster by name, whether or not it exists. */
  clusterArn(name: string): string {
    return clusterArn(this.scope, name);
  }

  hasCluster(name: string): boolean {
    return this.#clusters.has(name);
  }

  clusterName(reference: string | undefined): string {
    return clusterNameOf(reference);
  }

  /**
   * Places `plan.count` tasks; each starts on its own. Capacity refused is in `failures`.
   *
   * With a client token, as ECS does (ECS_Idempotency): per cluster, for 24 hours, a request
   * with a token that started tasks is run once. The same token with the same `parameters`
   * (every request member but the token, as canonical JSON) answers with the tasks it started,
   * as they are now, and starts nothing; with other parameters it is a ConflictException naming
   * those tasks. A request that started no task holds its token to nothing.
   */
  runTask(plan: RunPlan, parameters = ""): { tasks: EcsTask[]; failures: { reason: string }[] } {
    if (this.#closed) throw invalidParameter("the embedded ECS is shutting down");
    const token = plan.clientToken === undefined ? undefined : `${plan.cluster}\n${plan.clientToken}`;
    if (token !== undefined) {
      const used = this.#clientTokens.get(token);
      if (used !== undefined && this.#clock() - used.atMs < CLIENT_TOKEN_TTL_MS) {
        if (used.parameters !== parameters) throw clientTokenConflict(used.taskArns);
        const tasks = used.taskArns.flatMap((arn) => this.#runs.get(arn)?.task ?? []);
        return { tasks, failures: [] };
      }
      this.#clientTokens.delete(token);
    }
    const providers = plan.strategy ? placeOnStrategy(plan.strategy, plan.count) : undefined;
    const tasks: EcsTask[] = [];
    const failures: { reason: string }[] = [];
    for (let i = 0; i < plan.count; i++) {
      const provider = providers?.[i];
      if (provider && this.faults.unavailableCapacity.has(provider)) {
        failures.push({ reason: CAPACITY_UNAVAILABLE });
        continue;
      }
      const run = this.#createRun(plan, provider);
      this.#runs.set(run.task.arn, run);
      tasks.push(run.task);
      this.#emit(run);
      this.#after(run, this.#stepMs, () => this.#pending(run));
    }
    if (token !== undefined && tasks.length > 0) {
      this.#clientTokens.set(token, { parameters, taskArns: tasks.map((t) => t.arn), atMs: this.#clock() });
    }
    return { tasks, failures };
  }

  /** The task, or undefined when this cluster has no task by that id or ARN. */
  find(cluster: string, reference: string): EcsTask | undefined {
    this.#prune();
    const run = this.#runs.get(taskArn(this.scope, cluster, taskIdOf(reference)));
    return run?.task;
  }

  /**
   * StopTask: SIGTERM to every container, SIGKILL after its stopTimeout. A task already
   * stopping or stopped is returned as it is.
   */
  stopTask(cluster: string, reference: string, reason: string | undefined): EcsTask | undefined {
    const task = this.find(cluster, reference);
    if (!task) return undefined;
    const run = this.#runs.get(task.arn)!;
    if (!run.stopping && !task.done) {
      this.#beginStop(run, StopCode.UserInitiated, reason ?? USER_STOPPED_REASON);
    }
    return task;
  }

  /**
   * Fault switch: a Fargate Spot interruption of a running FARGATE_SPOT task. As on AWS, the
   * warning event comes first (lastStatus RUNNING, desiredStatus STOPPED, stopCode
   * SpotInterruption), the containers get SIGTERM, SIGKILL after their stopTimeout, and the
   * task then stops with the same code and reason.
   */
  interruptSpot(taskArnOrId: string, cluster?: string): void {
    const task =
      this.#runs.get(taskArnOrId)?.task ??
      this.find(cluster ?? clusterNameOf(/:task\/([^/]+)\//.exec(taskArnOrId)?.[1]), taskArnOrId);
    if (!task) throw new Error(`interruptSpot: no task ${taskArnOrId}`);
    if (task.init.capacityProviderName !== "FARGATE_SPOT") {
      throw new Error(`interruptSpot: task ${task.arn} does not run on FARGATE_SPOT`);
    }
    if (task.lastStatus !== LastStatus.Running || task.desiredStatus !== "RUNNING") {
      throw new Error(`interruptSpot: task ${task.arn} is ${task.lastStatus}, not RUNNING`);
    }
    this.#beginStop(this.#runs.get(task.arn)!, StopCode.SpotInterruption, SPOT_INTERRUPTED_REASON);
  }

  list(filter: ListFilter): EcsTask[] {
    this.#prune();
    return [...this.#runs.values()]
      .map((r) => r.task)
      .filter((t) => t.init.clusterArn === clusterArn(this.scope, filter.cluster))
      .filter((t) => filter.family === undefined || t.init.definition.family === filter.family)
      .filter((t) => filter.startedBy === undefined || t.init.startedBy === filter.startedBy)
      .filter((t) =>
        filter.desiredStatus === "STOPPED"
          ? t.desiredStatus === "STOPPED"
          : filter.desiredStatus === "PENDING"
            ? t.desiredStatus === "RUNNING" && t.lastStatus !== LastStatus.Running
            : t.desiredStatus === "RUNNING",
      );
  }

  /** Tasks not yet STOPPED. */
  get activeTasks(): number {
    return [...this.#runs.values()].filter((r) => !r.task.done).length;
  }

  /** Kills every container at once (no stop events: the runtime is going away) and forgets timers. */
  async close(): Promise<void> {
    this.#closed = true;
    const exits: Promise<unknown>[] = [];
    for (const run of this.#runs.values()) {
      for (const t of run.timers) clearTimeout(t);
      run.timers.clear();
      for (const c of run.containers) {
        if (c.process && c.state.lastStatus !== "STOPPED") {
          c.process.signal("SIGKILL");
          exits.push(c.process.exited);
        }
      }
    }
    await Promise.race([Promise.allSettled(exits), new Promise((r) => setTimeout(r, 2_000))]);
    for (const run of this.#runs.values()) rmSync(run.workDir, { recursive: true, force: true });
  }

  // ---- the lifecycle ----------------------------------------------------------------------

  #createRun(plan: RunPlan, provider: CapacityProvider | undefined): TaskRun {
    const id = newTaskId();
    const arn = taskArn(this.scope, plan.cluster, id);
    const definition = plan.definition;
    const containers = definition.containerDefinitions.map((d): ContainerRun => {
      const override = plan.overrides.containerOverrides.find((o) => o.name === d.name);
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(this.#baseEnv)) if (v !== undefined) env[k] = v;
      Object.assign(env, {
        AWS_EXECUTION_ENV: "AWS_ECS_FARGATE",
        AWS_REGION: this.scope.region,
        AWS_DEFAULT_REGION: this.scope.region,
      });
      for (const kv of d.environment) env[kv.name] = kv.value;
      for (const kv of override?.environment ?? []) env[kv.name] = kv.value;
      return {
        definition: d,
        argv: [...(d.entryPoint ?? []), ...(override?.command ?? d.command ?? [])],
        env,
        state: {
          name: d.name,
          image: d.image,
          containerArn: containerArn(this.scope, plan.cluster, id),
          runtimeId: `${id}-${randomBytes(4).readUInt32BE(0)}`,
          essential: d.essential,
          lastStatus: "PENDING",
        },
      };
    });
    const ip = this.#nextIp++;
    const attachment: NetworkAttachment = {
      id: randomUUID(),
      subnetId: plan.subnets[ip % plan.subnets.length]!,
      privateIPv4Address: `10.0.${Math.floor(ip / 250) % 250}.${(ip % 250) + 2}`,
      macAddress: [...randomBytes(6)].map((b) => b.toString(16).padStart(2, "0")).join(":"),
      networkInterfaceId: `eni-${randomBytes(9).toString("hex").slice(0, 17)}`,
      status: "PRECREATED",
    };
    const tags: Tag[] = [...plan.tags];
    if (plan.propagateTaskDefinitionTags) {
      for (const t of this.taskDefinitions.tagsOf(definition.taskDefinitionArn)) {
        if (!tags.some((x) => x.key === t.key)) tags.push(t);
      }
    }
    if (plan.managedTags) tags.push({ key: "aws:ecs:clusterName", value: plan.cluster });
    const task = new EcsTask({
      id,
      arn,
      clusterArn: clusterArn(this.scope, plan.cluster),
      definition,
      group: plan.group,
      ...(plan.startedBy !== undefined ? { startedBy: plan.startedBy } : {}),
      tags,
      ...(provider ? { capacityProviderName: provider } : {}),
      cpu: plan.cpu,
      memory: plan.memory,
      overrides: plan.overrides,
      containers: containers.map((c) => c.state),
      attachment,
      availabilityZone: `${this.scope.region}a`,
      createdAt: new Date(this.#clock()),
    });
    return {
      task,
      containers,
      timers: new Set(),
      workDir: join(this.#workRoot, id),
      activating: false,
      stopping: false,
      finishing: false,
    };
  }

  #pending(run: TaskRun): void {
    const { task } = run;
    task.init.attachment.status = "ATTACHED";
    task.connectivityAt = new Date(this.#clock());
    this.#advance(run, LastStatus.Pending);
    this.#after(run, this.#stepMs, () => void this.#activate(run));
  }

  async #activate(run: TaskRun): Promise<void> {
    const { task } = run;
    run.activating = true;
    task.pullStartedAt = new Date(this.#clock());
    task.pullStoppedAt = new Date(this.#clock());
    this.#advance(run, LastStatus.Activating);
    const failure = this.#openLogStreams(run) ?? (await this.#spawnAll(run));
    run.activating = false;
    if (failure !== undefined) {
      for (const c of run.containers) {
        if (c.process) c.process.signal("SIGKILL");
        else {
          c.state.lastStatus = "STOPPED";
          c.state.reason = failure;
        }
      }
      this.#beginStop(run, StopCode.TaskFailedToStart, failure);
      return;
    }
    if (run.stopping) {
      // StopTask arrived while the containers were starting: stop them now.
      this.#terminate(run);
      return;
    }
    task.startedAt = new Date(this.#clock());
    for (const c of run.containers) if (c.state.lastStatus === "PENDING") c.state.lastStatus = "RUNNING";
    this.#advance(run, LastStatus.Running);
    // A container that ran and exited while the others were still starting.
    const exited = run.containers.find((c) => c.definition.essential && c.state.lastStatus === "STOPPED");
    if (exited) this.#beginStop(run, StopCode.EssentialContainerExited, ESSENTIAL_EXITED_REASON);
  }

  /** ECS's stoppedReason when awslogs cannot create its stream; undefined when all are open. */
  #openLogStreams(run: TaskRun): string | undefined {
    for (const c of run.containers) {
      const log = awslogsTarget(c, run.task.init.id);
      if (!log || !this.#logs) continue;
      try {
        this.#logs.createStream(log.group, log.stream, log.createGroup);
      } catch (error) {
        const name = (error as { name?: string }).name ?? "Error";
        const message = error instanceof Error ? error.message : String(error);
        return `ResourceInitializationError: failed to validate logger args: create stream has been retried 1 times: failed to create Cloudwatch log stream: ${name}: ${message} : exit status 1`;
      }
    }
    return undefined;
  }

  /** Starts every container's process; the first that cannot start fails the task. */
  async #spawnAll(run: TaskRun): Promise<string | undefined> {
    mkdirSync(run.workDir, { recursive: true });
    for (const c of run.containers) {
      const log = awslogsTarget(c, run.task.init.id);
      try {
        if (c.argv.length === 0) {
          throw new SpawnFailure(
            "ENOCMD",
            `the embedded ECS does not pull images, so container ${c.state.name} needs a command or entryPoint`,
          );
        }
        c.process = await startContainerProcess({
          argv: c.argv,
          env: c.env,
          cwd: run.workDir,
          clock: this.#clock,
          onLine: (_stream, line, atMs) => {
            if (!log || !this.#logs) return;
            try {
              this.#logs.put(log.group, log.stream, { timestamp: atMs, message: line });
            } catch (error) {
              this.#logger.warn(`ecs: task ${run.task.init.id}: awslogs: ${String(error)}`);
            }
          },
        });
      } catch (error) {
        return cannotStartReason(c.argv[0] ?? "", error);
      }
      const process = c.process;
      recordContainerProcess(run.workDir, c.state.name, process.pid);
      void process.exited.then((exit) => this.#containerExited(run, c, exit.exitCode, exit.atMs));
    }
    return undefined;
  }

  #containerExited(run: TaskRun, c: ContainerRun, exitCode: number, atMs: number): void {
    c.state.lastStatus = "STOPPED";
    c.state.exitCode = exitCode;
    run.stoppedAtMs = Math.max(run.stoppedAtMs ?? 0, atMs);
    if (this.#closed) return;
    if (run.activating) return; // #activate sees the failure or the stop itself
    if (!run.stopping && c.definition.essential) {
      this.#beginStop(run, StopCode.EssentialContainerExited, ESSENTIAL_EXITED_REASON);
      return;
    }
    if (run.stopping) this.#finishIfAllExited(run);
  }

  /** desiredStatus STOPPED, then DEACTIVATING and STOPPING, SIGTERM, SIGKILL after stopTimeout. */
  #beginStop(run: TaskRun, code: StopCode, reason: string): void {
    const { task } = run;
    run.stopping = true;
    task.desiredStatus = "STOPPED";
    task.stopCode = code;
    task.stoppedReason = reason;
    // The change of desired status is an event of its own (the Spot warning is this one).
    this.#touch(run);
    if (run.activating) return; // #activate stops the containers once they are started
    const started = task.lastStatus === LastStatus.Running || task.lastStatus === LastStatus.Activating;
    if (!started) {
      // Stopped before anything ran: nothing to signal.
      for (const t of run.timers) clearTimeout(t);
      run.timers.clear();
      for (const c of run.containers) c.state.lastStatus = "STOPPED";
      this.#deprovision(run);
      return;
    }
    this.#terminate(run);
  }

  #terminate(run: TaskRun): void {
    this.#advance(run, LastStatus.Deactivating);
    run.task.stoppingAt = new Date(this.#clock());
    this.#advance(run, LastStatus.Stopping);
    for (const c of run.containers) {
      if (!c.process || c.state.lastStatus === "STOPPED") continue;
      c.process.signal("SIGTERM");
      const process = c.process;
      const grace = (c.definition.stopTimeout ?? DEFAULT_STOP_TIMEOUT_SECONDS) * 1000;
      this.#after(run, grace, () => {
        if (c.state.lastStatus !== "STOPPED") process.signal("SIGKILL");
      });
    }
    this.#finishIfAllExited(run);
  }

  #finishIfAllExited(run: TaskRun): void {
    if (run.finishing) return;
    if (run.containers.some((c) => c.process && c.state.lastStatus !== "STOPPED")) return;
    if (run.task.lastStatus !== LastStatus.Stopping) {
      // An essential container exited on its own: the task goes through the same states.
      this.#advance(run, LastStatus.Deactivating);
      run.task.stoppingAt = new Date(this.#clock());
      this.#advance(run, LastStatus.Stopping);
    }
    for (const t of run.timers) clearTimeout(t);
    run.timers.clear();
    this.#deprovision(run);
  }

  #deprovision(run: TaskRun): void {
    if (run.finishing) return;
    run.finishing = true;
    const { task } = run;
    task.executionStoppedAt = new Date(run.stoppedAtMs ?? this.#clock());
    task.init.attachment.status = "DETACHED";
    this.#advance(run, LastStatus.Deprovisioning);
    this.#after(run, this.#stepMs, () => {
      task.init.attachment.status = "DELETED";
      task.stoppedAt = new Date(this.#clock());
      rmSync(run.workDir, { recursive: true, force: true });
      this.#advance(run, LastStatus.Stopped);
    });
  }

  #advance(run: TaskRun, status: LastStatus): void {
    run.task.lastStatus = status;
    this.#touch(run);
  }

  #touch(run: TaskRun): void {
    const { task } = run;
    task.version++;
    task.updatedAt = new Date(this.#clock());
    this.#emit(run);
  }

  #emit(run: TaskRun): void {
    if (!this.#publish || this.#closed) return;
    try {
      this.#publish({
        Source: "aws.ecs",
        DetailType: "ECS Task State Change",
        Detail: JSON.stringify(run.task.eventDetail()),
        Resources: [run.task.arn],
        Time: new Date(this.#clock()),
      });
    } catch (error) {
      this.#logger.warn(`ecs: publishing the state change of ${run.task.arn} failed: ${String(error)}`);
    }
  }

  #after(run: TaskRun, ms: number, fn: () => void): void {
    if (this.#closed) return;
    const timer = setTimeout(() => {
      run.timers.delete(timer);
      if (!this.#closed) fn();
    }, ms);
    run.timers.add(timer);
  }

  #prune(): void {
    const cutoff = this.#clock() - this.#retentionMs;
    for (const [arn, run] of this.#runs) {
      const stoppedAt = run.task.stoppedAt?.getTime();
      if (stoppedAt !== undefined && stoppedAt < cutoff) this.#runs.delete(arn);
    }
    const tokensCutoff = this.#clock() - CLIENT_TOKEN_TTL_MS;
    for (const [token, use] of this.#clientTokens) {
      if (use.atMs < tokensCutoff) this.#clientTokens.delete(token);
    }
  }
}

/** The log group and stream of an `awslogs` container: `<prefix>/<container>/<task id>`. */
function awslogsTarget(
  c: ContainerRun,
  taskId: string,
): { group: string; stream: string; createGroup: boolean } | undefined {
  const config = c.definition.logConfiguration;
  if (config?.logDriver !== "awslogs") return undefined;
  const group = config.options["awslogs-group"]!;
  const prefix = config.options["awslogs-stream-prefix"];
  const stream = prefix ? `${prefix}/${c.state.name}/${taskId}` : taskId;
  return { group, stream, createGroup: config.options["awslogs-create-group"] === "true" };
}

/**
 * The stoppedReason Fargate gives when the runtime cannot exec the container's command, e.g.
 * `CannotStartContainerError: ResourceInitializationError: failed to create new container
 * runtime task: … exec: "nope": executable file not found in $PATH: unknown`.
 */
function cannotStartReason(file: string, error: unknown): string {
  const errno = error instanceof SpawnFailure ? error.errno : "";
  const cause =
    errno === "ENOENT"
      ? `exec: "${file}": executable file not found in $PATH`
      : errno === "EACCES"
        ? `exec: "${file}": permission denied`
        : error instanceof Error
          ? error.message
          : String(error);
  return `CannotStartContainerError: ResourceInitializationError: failed to create new container runtime task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: ${cause}: unknown`;
}

/**
 * Which capacity provider each of `count` tasks goes to: the provider with a base gets the
 * first `base` tasks, the rest are spread in proportion to the weights (ties to the earlier
 * item), as ECS places a capacity provider strategy.
 */
export function placeOnStrategy(strategy: readonly StrategyItem[], count: number): CapacityProvider[] {
  const placed: CapacityProvider[] = [];
  const counts = new Map<CapacityProvider, number>(strategy.map((s) => [s.capacityProvider, 0]));
  const withBase = strategy.find((s) => s.base > 0);
  while (withBase && placed.length < Math.min(count, withBase.base)) {
    placed.push(withBase.capacityProvider);
  }
  const weighted = strategy.filter((s) => s.weight > 0);
  while (placed.length < count) {
    if (weighted.length === 0) {
      placed.push(withBase!.capacityProvider);
      continue;
    }
    let best = weighted[0]!;
    for (const s of weighted) {
      if (counts.get(s.capacityProvider)! / s.weight < counts.get(best.capacityProvider)! / best.weight)
        best = s;
    }
    counts.set(best.capacityProvider, counts.get(best.capacityProvider)! + 1);
    placed.push(best.capacityProvider);
  }
  return placed;
}
