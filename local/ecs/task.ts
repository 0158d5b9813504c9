/**
 * One ECS task as the embedded ECS holds it: the fields DescribeTasks returns and the detail of
 * its `ECS Task State Change` events, built from the same state so the two never disagree.
 * The shape follows the Task object (API reference) and the documented Fargate sample event
 * (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/ecs_task_events.html): in
 * DescribeTasks timestamps are epoch seconds (toWire turns the Dates), in events ISO strings.
 */
import { cpuArchitectureOf, type KeyValue, type Tag, type TaskDefinition } from "./task-definitions.ts";

/** The task lifecycle, in order (Amazon ECS Developer Guide, "Amazon ECS task lifecycle"). */
export const LastStatus = {
  Provisioning: "PROVISIONING",
  Pending: "PENDING",
  Activating: "ACTIVATING",
  Running: "RUNNING",
  Deactivating: "DEACTIVATING",
  Stopping: "STOPPING",
  Deprovisioning: "DEPROVISIONING",
  Stopped: "STOPPED",
} as const;
export type LastStatus = (typeof LastStatus)[keyof typeof LastStatus];

export const StopCode = {
  TaskFailedToStart: "TaskFailedToStart",
  EssentialContainerExited: "EssentialContainerExited",
  UserInitiated: "UserInitiated",
  SpotInterruption: "SpotInterruption",
} as const;
export type StopCode = (typeof StopCode)[keyof typeof StopCode];

export type CapacityProvider = "FARGATE" | "FARGATE_SPOT";

export interface ContainerOverride {
  readonly name: string;
  readonly command?: readonly string[];
  readonly environment?: readonly KeyValue[];
  readonly cpu?: number;
  readonly memory?: number;
}

export interface TaskOverrides {
  readonly containerOverrides: readonly ContainerOverride[];
  readonly cpu?: string;
  readonly memory?: string;
  readonly executionRoleArn?: string;
  readonly taskRoleArn?: string;
}

export interface ContainerState {
  readonly name: string;
  readonly image: string;
  readonly containerArn: string;
  readonly runtimeId: string;
  readonly essential: boolean;
  lastStatus: "PENDING" | "RUNNING" | "STOPPED";
  exitCode?: number;
  reason?: string;
}

export interface NetworkAttachment {
  readonly id: string;
  readonly subnetId: string;
  readonly privateIPv4Address: string;
  readonly macAddress: string;
  readonly networkInterfaceId: string;
  status: "PRECREATED" | "ATTACHED" | "DETACHED" | "DELETED";
}

export interface TaskInit {
  readonly id: string;
  readonly arn: string;
  readonly clusterArn: string;
  readonly definition: TaskDefinition;
  readonly group: string;
  readonly startedBy?: string;
  readonly tags: readonly Tag[];
  readonly capacityProviderName?: CapacityProvider;
  readonly cpu: string;
  readonly memory: string;
  readonly overrides: TaskOverrides;
  readonly containers: readonly ContainerState[];
  readonly attachment: NetworkAttachment;
  readonly availabilityZone: string;
  readonly createdAt: Date;
}

export class EcsTask {
  readonly init: TaskInit;
  lastStatus: LastStatus = LastStatus.Provisioning;
  desiredStatus: "RUNNING" | "STOPPED" = "RUNNING";
  /** Increments on every change, as the `version` of the task's events does. */
  version = 1;
  stopCode?: StopCode;
  stoppedReason?: string;
  connectivityAt?: Date;
  pullStartedAt?: Date;
  pullStoppedAt?: Date;
  startedAt?: Date;
  stoppingAt?: Date;
  executionStoppedAt?: Date;
  stoppedAt?: Date;
  updatedAt: Date;

  constructor(init: TaskInit) {
    this.init = init;
    this.updatedAt = init.createdAt;
  }

  get arn(): string {
    return this.init.arn;
  }

  get containers(): readonly ContainerState[] {
    return this.init.containers;
  }

  get done(): boolean {
    return this.lastStatus === LastStatus.Stopped;
  }

  /** The Task object of DescribeTasks and RunTask (Dates go out as epoch seconds). */
  describe(includeTags: boolean): Record<string, unknown> {
    return {
      ...this.#common(),
      ...(includeTags ? { tags: this.init.tags.map((t) => ({ ...t })) } : {}),
      createdAt: this.init.createdAt,
      connectivityAt: this.connectivityAt,
      pullStartedAt: this.pullStartedAt,
      pullStoppedAt: this.pullStoppedAt,
      startedAt: this.startedAt,
      stoppingAt: this.stoppingAt,
      executionStoppedAt: this.executionStoppedAt,
      stoppedAt: this.stoppedAt,
    };
  }

  /** The `detail` of an `ECS Task State Change` event: the Task with ISO timestamps. */
  eventDetail(): Record<string, unknown> {
    const iso = (d: Date | undefined) => d?.toISOString();
    return {
      ...this.#common(),
      createdAt: iso(this.init.createdAt),
      connectivityAt: iso(this.connectivityAt),
      pullStartedAt: iso(this.pullStartedAt),
      pullStoppedAt: iso(this.pullStoppedAt),
      startedAt: iso(this.startedAt),
      stoppingAt: iso(this.stoppingAt),
      executionStoppedAt: iso(this.executionStoppedAt),
      stoppedAt: iso(this.stoppedAt),
      updatedAt: iso(this.updatedAt),
    };
  }

  #common(): Record<string, unknown> {
    const { init } = this;
    const a = init.attachment;
    return {
      attachments: [
        {
          id: a.id,
          type: "eni",
          status: a.status,
          details: [
            { name: "subnetId", value: a.subnetId },
            { name: "networkInterfaceId", value: a.networkInterfaceId },
            { name: "macAddress", value: a.macAddress },
            { name: "privateIPv4Address", value: a.privateIPv4Address },
          ],
        },
      ],
      attributes: [{ name: "ecs.cpu-architecture", value: cpuArchitectureOf(init.definition) }],
      availabilityZone: init.availabilityZone,
      ...(init.capacityProviderName ? { capacityProviderName: init.capacityProviderName } : {}),
      clusterArn: init.clusterArn,
      connectivity: this.connectivityAt ? "CONNECTED" : undefined,
      containers: init.containers.map((c) => ({
        containerArn: c.containerArn,
        taskArn: init.arn,
        name: c.name,
        image: c.image,
        runtimeId: c.runtimeId,
        lastStatus: c.lastStatus,
        ...(c.exitCode !== undefined ? { exitCode: c.exitCode } : {}),
        ...(c.reason !== undefined ? { reason: c.reason } : {}),
        networkInterfaces: [{ attachmentId: a.id, privateIpv4Address: a.privateIPv4Address }],
        cpu: "0",
      })),
      cpu: init.cpu,
      memory: init.memory,
      desiredStatus: this.desiredStatus,
      lastStatus: this.lastStatus,
      enableExecuteCommand: false,
      ephemeralStorage: { sizeInGiB: 20 },
      group: init.group,
      launchType: "FARGATE",
      overrides: {
        containerOverrides: init.overrides.containerOverrides.map((o) => ({ ...o })),
        ...(init.overrides.cpu !== undefined ? { cpu: init.overrides.cpu } : {}),
        ...(init.overrides.memory !== undefined ? { memory: init.overrides.memory } : {}),
        ...(init.overrides.executionRoleArn !== undefined
          ? { executionRoleArn: init.overrides.executionRoleArn }
          : {}),
        ...(init.overrides.taskRoleArn !== undefined ? { taskRoleArn: init.overrides.taskRoleArn } : {}),
      },
      platformVersion: "1.4.0",
      platformFamily: "Linux",
      ...(init.startedBy !== undefined ? { startedBy: init.startedBy } : {}),
      ...(this.stopCode !== undefined ? { stopCode: this.stopCode } : {}),
      ...(this.stoppedReason !== undefined ? { stoppedReason: this.stoppedReason } : {}),
      taskArn: init.arn,
      taskDefinitionArn: init.definition.taskDefinitionArn,
      version: this.version,
    };
  }
}
