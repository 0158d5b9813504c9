/**
 * FargateTasksPort on ECS: task definitions registered once per content (a family per content
 * hash, looked up before registering, cached per process), one RunTask per kernel, StopTask
 * with a reason, and the gang rule (all started or none) enforced here by stopping the started
 * members when another one fails.
 */
import {
  DescribeTaskDefinitionCommand,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
  StopTaskCommand,
  type ECSClient,
  type RunTaskCommandInput,
} from "@aws-sdk/client-ecs";
import type {
  FargateGangResult,
  FargateRunFailure,
  FargateRunRequest,
  FargateRunResult,
  FargateStopRequest,
  FargateTaskDefinitionSpec,
  FargateTasksPort,
} from "../../core/ports/fargate-tasks.ts";
import { classify, FargateTasksError, isRetryableRunFailure, toError } from "./errors.ts";
import { errorCode } from "../../core/ports/errors.ts";
import { KERNEL_CONTAINER, planTaskDefinition } from "./task-definition.ts";

export interface EcsFargateTasksOptions {
  /** The cluster's name or ARN. */
  readonly cluster: string;
  /** For awslogs' `awslogs-region`: the region the log group is in. */
  readonly region: string;
}

/** StopTask keeps at most this many characters of a reason (API reference). */
export const MAX_STOP_REASON_CHARS = 255;
/** What DescribeTaskDefinition answers for a family with no registration. */
const NOT_REGISTERED = /Unable to describe task definition/;
/** What StopTask answers for a task ECS no longer knows: nothing is left to stop. */
const TASK_GONE = /The referenced task was not found/;

/**
 * Whether a RunTask that failed may have started its task: it got no answer from ECS (no HTTP
 * status), or ECS failed while handling it (5xx). A 4xx answer, throttling included, started nothing.
 */
function isUnanswered(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata
    ?.httpStatusCode;
  return status === undefined ? classify(error).awsCode === "NetworkError" : status >= 500;
}

export class EcsFargateTasks implements FargateTasksPort {
  readonly #client: ECSClient;
  readonly #cluster: string;
  readonly #region: string;
  /** By content hash; a failed lookup is forgotten so the next call asks again. */
  readonly #definitions = new Map<string, Promise<string>>();

  constructor(client: ECSClient, options: EcsFargateTasksOptions) {
    this.#client = client;
    this.#cluster = options.cluster;
    this.#region = options.region;
  }

  ensureTaskDefinition(spec: FargateTaskDefinitionSpec): Promise<string> {
    const plan = planTaskDefinition(spec, this.#region);
    let arn = this.#definitions.get(plan.hash);
    if (!arn) {
      arn = this.#describeOrRegister(plan);
      this.#definitions.set(plan.hash, arn);
      arn.catch(() => this.#definitions.delete(plan.hash));
    }
    return arn;
  }

  async #describeOrRegister(plan: ReturnType<typeof planTaskDefinition>): Promise<string> {
    try {
      const found = await this.#client.send(
        new DescribeTaskDefinitionCommand({ taskDefinition: plan.family }),
      );
      const arn = found.taskDefinition?.taskDefinitionArn;
      if (arn !== undefined && found.taskDefinition?.status === "ACTIVE") return arn;
    } catch (error) {
      const c = classify(error);
      if (!(c.awsCode === "ClientException" && NOT_REGISTERED.test(c.message))) {
        throw toError(`DescribeTaskDefinition ${plan.family}`, error);
      }
    }
    try {
      const registered = await this.#client.send(new RegisterTaskDefinitionCommand(plan.input));
      const arn = registered.taskDefinition?.taskDefinitionArn;
      if (arn === undefined) {
        throw new FargateTasksError(
          `RegisterTaskDefinition ${plan.family}: no ARN in the answer`,
          "ServerException",
          true,
        );
      }
      return arn;
    } catch (error) {
      if (errorCode(error) === "FARGATE_TASKS") throw error;
      throw toError(`RegisterTaskDefinition ${plan.family}`, error);
    }
  }

  async runTasks(requests: readonly FargateRunRequest[]): Promise<FargateRunResult> {
    const first = await Promise.all(requests.map((r) => this.#runOne(r)));
    // A RunTask that got no answer (the connection failed, or ECS failed after the SDK's last
    // attempt) may have started its task all the same. Asked once more with the same client
    // token, ECS answers with that task, or starts it now: either way no task is left running
    // that Cairn does not know of, and a gang's rollback can stop it.
    const outcomes = await Promise.all(
      first.map((o, i) =>
        "unanswered" in o && o.unanswered ? this.#runOne(requests[i]!) : Promise.resolve(o),
      ),
    );
    return {
      started: outcomes.flatMap((o) => ("taskArn" in o ? [o] : [])),
      failures: outcomes.flatMap((o) =>
        "reason" in o ? [{ kernelIndex: o.kernelIndex, reason: o.reason, retryable: o.retryable }] : [],
      ),
    };
  }

  async #runOne(
    request: FargateRunRequest,
  ): Promise<{ kernelIndex: number; taskArn: string } | (FargateRunFailure & { unanswered: boolean })> {
    const { kernelIndex } = request;
    try {
      const out = await this.#client.send(new RunTaskCommand(this.#runTaskInput(request)));
      const taskArn = out.tasks?.[0]?.taskArn;
      if (taskArn !== undefined) return { kernelIndex, taskArn };
      const failure = out.failures?.[0];
      const reason = failure
        ? [failure.reason, failure.detail].filter((s) => s !== undefined && s !== "").join(": ")
        : "RunTask started no task and reported no failure";
      return { kernelIndex, reason, retryable: isRetryableRunFailure(reason), unanswered: false };
    } catch (error) {
      const c = classify(error);
      return {
        kernelIndex,
        reason: `${c.awsCode}: ${c.message}`,
        retryable: c.retryable,
        unanswered: isUnanswered(error),
      };
    }
  }

  #runTaskInput(r: FargateRunRequest): RunTaskCommandInput {
    return {
      cluster: this.#cluster,
      taskDefinition: r.taskDefinitionArn,
      count: 1,
      // On-demand as a launch type; Spot only exists as a capacity provider.
      ...(r.capacity === "FARGATE_SPOT"
        ? { capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT", weight: 1 }] }
        : { launchType: "FARGATE" }),
      networkConfiguration: {
        awsvpcConfiguration: {
          subnets: [...r.network.subnets],
          securityGroups: [...r.network.securityGroups],
          assignPublicIp: r.network.assignPublicIp ? "ENABLED" : "DISABLED",
        },
      },
      overrides: {
        containerOverrides: [
          {
            name: KERNEL_CONTAINER,
            command: [...r.command],
            environment: r.environment.map((e) => ({ name: e.name, value: e.value })),
          },
        ],
        ...(r.cpu !== undefined ? { cpu: String(r.cpu) } : {}),
        ...(r.memoryMiB !== undefined ? { memory: String(r.memoryMiB) } : {}),
      },
      startedBy: r.startedBy,
      // The same request again (the SDK's retry after a lost answer, a handler run again) gets
      // the task the first one started, not a second task.
      clientToken: r.clientToken,
      tags: r.tags.map((t) => ({ key: t.key, value: t.value })),
      enableECSManagedTags: true,
      // The definition's content-hash tag goes onto its tasks too: people can tell what ran.
      propagateTags: "TASK_DEFINITION",
    };
  }

  async runGang(requests: readonly FargateRunRequest[], rollbackReason: string): Promise<FargateGangResult> {
    const result = await this.runTasks(requests);
    if (result.failures.length === 0) return { ...result, rolledBack: [] };
    const first = result.failures[0]!;
    const reason = `${rollbackReason} (kernel ${first.kernelIndex} could not start: ${first.reason})`;
    await this.stopTasks(result.started.map((s) => ({ taskArn: s.taskArn, reason })));
    return { started: [], failures: result.failures, rolledBack: result.started.map((s) => s.taskArn) };
  }

  async stopTasks(requests: readonly FargateStopRequest[]): Promise<void> {
    const outcomes = await Promise.allSettled(
      requests.map(async (r) => {
        try {
          await this.#client.send(
            new StopTaskCommand({
              cluster: this.#cluster,
              task: r.taskArn,
              reason: r.reason.slice(0, MAX_STOP_REASON_CHARS),
            }),
          );
        } catch (error) {
          const c = classify(error);
          if (c.awsCode === "InvalidParameterException" && TASK_GONE.test(c.message)) return;
          throw toError(`StopTask ${r.taskArn}`, error);
        }
      }),
    );
    const failed = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason as FargateTasksError] : []));
    if (failed.length > 0) {
      throw new FargateTasksError(
        `${failed.length} of ${requests.length} tasks could not be stopped: ${failed.map((f) => f.message).join("; ")}`,
        failed[0]!.awsCode,
        failed.every((f) => f.retryable),
      );
    }
  }
}
