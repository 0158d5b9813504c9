/**
 * The Fargate executor's side of the stack (kernels as ECS tasks), present only with the `fargate` prop: the
 * ECS cluster (created, or given), the task execution role ECS pulls images and ships kernel
 * output with, the role kernels' code runs as, the tasks' security group when the stack makes
 * one, and the grants of the functions that send kernel commands. What the functions need to run
 * a task reaches them as CAIRN_FARGATE_* (functions/config.ts).
 *
 * Every ECS permission is scoped as far as the Service Authorization Reference allows: RunTask
 * on Cairn's task definitions (`cairn-*`) on this cluster only, StopTask on this
 * cluster's tasks, PassRole of these two roles to ECS tasks only. Registering and reading task
 * definitions supports no resource-level permissions and is granted on `*`.
 */
import { Arn, ArnFormat, Stack } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as ecs from "aws-cdk-lib/aws-ecs";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import {
  ECR_AUTH_ACTIONS,
  ECR_PULL_ACTIONS,
  ECS_PASS_ROLE_ACTIONS,
  ECS_RUN_TASK_ACTIONS,
  ECS_TAG_ON_CREATE_ACTIONS,
  ECS_TASK_ACTIONS,
  ECS_TASK_DEFINITION_ACTIONS,
  TASK_LOG_ACTIONS,
} from "../functions/topology/access-actions.ts";
import { CairnPropsError } from "./errors.ts";
import {
  acknowledge,
  acknowledgeWildcardResource,
  NAG_ACKNOWLEDGEMENTS,
  NAG_WILDCARD_RESOURCES,
} from "./nag-acknowledgements.ts";
import type { ResolvedFargateProps } from "./props.ts";

/** The family prefix of every task definition Cairn registers (`cairn-<hash12>`). */
export const TASK_DEFINITION_FAMILY_PREFIX = "cairn-";
/** The service principal ECS tasks assume their roles as. */
export const ECS_TASKS_PRINCIPAL = "ecs-tasks.amazonaws.com";

export interface CairnFargateConstructProps {
  readonly settings: ResolvedFargateProps;
  /** The kernel log group `cairn logs` reads: the tasks' `awslogs` driver writes there too. */
  readonly kernelLogGroup: logs.ILogGroup;
}

export class CairnFargate extends Construct {
  readonly clusterArn: string;
  readonly clusterName: string;
  /** The cluster the stack created; absent when one was given. */
  readonly cluster: ecs.CfnCluster | undefined;
  /** ECS pulls kernel images and ships their output with this role. */
  readonly executionRole: iam.Role;
  /** Kernels' code runs as this role. */
  readonly taskRole: iam.IRole;
  readonly subnetIds: readonly string[];
  readonly securityGroups: readonly ec2.ISecurityGroup[];
  /** The functions' CAIRN_FARGATE_* variables (functions/config.ts). */
  readonly environment: Readonly<Record<string, string>>;
  /** `task-definition/cairn-*`: every revision of every task definition Cairn registers. */
  readonly taskDefinitionsArn: string;
  /** `task/<cluster name>/*`: every task of the cluster. */
  readonly tasksArn: string;
  readonly #settings: ResolvedFargateProps;

  constructor(scope: Construct, id: string, props: CairnFargateConstructProps) {
    super(scope, id);
    const { settings, kernelLogGroup } = props;
    this.#settings = settings;
    const stack = Stack.of(this);

    const given = settings.cluster;
    if (given === undefined) {
      this.cluster = new ecs.CfnCluster(this, "Cluster", {
        capacityProviders: [...settings.capacityProviders],
        clusterSettings: [{ name: "containerInsights", value: settings.containerInsights }],
      });
      if (settings.containerInsights === ecs.ContainerInsights.DISABLED) {
        acknowledge(this.cluster, NAG_ACKNOWLEDGEMENTS.containerInsightsDisabled);
      }
      this.clusterArn = this.cluster.attrArn;
      this.clusterName = this.cluster.ref;
    } else if ("clusterName" in given) {
      this.cluster = undefined;
      this.clusterName = given.clusterName;
      this.clusterArn =
        "clusterArn" in given
          ? given.clusterArn
          : stack.formatArn({ service: "ecs", resource: "cluster", resourceName: given.clusterName });
    } else {
      this.cluster = undefined;
      this.clusterArn = given.clusterArn;
      this.clusterName = Arn.split(given.clusterArn, ArnFormat.SLASH_RESOURCE_NAME).resourceName!;
    }

    const network = settings.network;
    if ("vpc" in network) {
      const subnetIds = network.vpc.selectSubnets(network.vpcSubnets).subnetIds;
      if (subnetIds.length > 16) {
        throw new CairnPropsError(
          "fargate.vpcSubnets",
          `selects ${subnetIds.length} subnets, RunTask takes at most 16: select fewer`,
        );
      }
      this.subnetIds = subnetIds;
      this.securityGroups = settings.securityGroups ?? [
        new ec2.SecurityGroup(this, "TaskSecurityGroup", {
          vpc: network.vpc,
          allowAllOutbound: true,
          description: "Cairn Fargate kernels: no inbound traffic; outbound to pull images and ship logs",
        }),
      ];
    } else {
      this.subnetIds = network.subnets.map((s) => s.subnetId);
      // Resolved props: subnets come with security groups.
      this.securityGroups = settings.securityGroups!;
    }

    this.executionRole = new iam.Role(this, "TaskExecutionRole", {
      assumedBy: new iam.ServicePrincipal(ECS_TASKS_PRINCIPAL),
      description: `Cairn ${stack.stackName}: ECS pulls kernel images and ships their output to the kernel log group`,
    });
    // Inline least privilege instead of AmazonECSTaskExecutionRolePolicy, which allows both on '*'.
    this.executionRole.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: [...ECR_AUTH_ACTIONS], resources: ["*"] }),
    );
    const repositories = settings.imageRepositories?.map((r) => r.repositoryArn) ?? [
      stack.formatArn({ service: "ecr", resource: "repository", resourceName: "*" }),
    ];
    this.executionRole.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: [...ECR_PULL_ACTIONS], resources: repositories }),
    );
    // The group's streams (the agents' grant names the same ARN).
    const logStreams = stack.formatArn({
      service: "logs",
      resource: "log-group",
      resourceName: `${kernelLogGroup.logGroupName}:*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    this.executionRole.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: [...TASK_LOG_ACTIONS], resources: [logStreams] }),
    );
    acknowledge(this.executionRole, NAG_ACKNOWLEDGEMENTS.taskExecutionRoleEcrToken);
    acknowledgeWildcardResource(this.executionRole, logStreams, NAG_WILDCARD_RESOURCES.taskLogStreams);
    if (settings.imageRepositories === undefined) {
      acknowledgeWildcardResource(
        this.executionRole,
        repositories[0]!,
        NAG_WILDCARD_RESOURCES.imageRepositories,
      );
    }

    if (settings.taskRole !== undefined) {
      this.taskRole = settings.taskRole;
    } else {
      // Only ECS tasks of this account and region (confused-deputy protection).
      const taskRole = new iam.Role(this, "TaskRole", {
        assumedBy: new iam.ServicePrincipal(ECS_TASKS_PRINCIPAL).withConditions({
          ArnLike: {
            "aws:SourceArn": stack.formatArn({
              service: "ecs",
              resource: "*",
              arnFormat: ArnFormat.NO_RESOURCE_NAME,
            }),
          },
          StringEquals: { "aws:SourceAccount": stack.account },
        }),
        description: `Cairn ${stack.stackName}: what kernels' code running as Fargate tasks may do`,
      });
      for (const statement of settings.taskRoleStatements) taskRole.addToPrincipalPolicy(statement);
      this.taskRole = taskRole;
    }

    this.taskDefinitionsArn = stack.formatArn({
      service: "ecs",
      resource: "task-definition",
      resourceName: `${TASK_DEFINITION_FAMILY_PREFIX}*`,
    });
    this.tasksArn = stack.formatArn({
      service: "ecs",
      resource: "task",
      resourceName: `${this.clusterName}/*`,
    });

    this.environment = {
      CAIRN_FARGATE_CLUSTER_ARN: this.clusterArn,
      CAIRN_FARGATE_SUBNETS: this.subnetIds.join(","),
      CAIRN_FARGATE_SECURITY_GROUPS: this.securityGroups.map((g) => g.securityGroupId).join(","),
      CAIRN_FARGATE_ASSIGN_PUBLIC_IP: String(settings.assignPublicIp),
      CAIRN_FARGATE_EXECUTION_ROLE_ARN: this.executionRole.roleArn,
      CAIRN_FARGATE_TASK_ROLE_ARN: this.taskRole.roleArn,
      CAIRN_FARGATE_LOG_GROUP_NAME: kernelLogGroup.logGroupName,
      CAIRN_FARGATE_CAPACITY_PROVIDERS: settings.capacityProviders.join(","),
    };
  }

  /** The capacity providers tasks may be placed with. */
  get capacityProviders(): readonly string[] {
    return this.#settings.capacityProviders;
  }

  /** What a function that sends kernel commands needs to carry them to ECS tasks. */
  statements(): iam.PolicyStatement[] {
    const onCluster = { ArnEquals: { "ecs:cluster": this.clusterArn } };
    return [
      new iam.PolicyStatement({
        actions: [...ECS_RUN_TASK_ACTIONS],
        resources: [this.taskDefinitionsArn],
        conditions: onCluster,
      }),
      // Tags on create only: RunTask's on its tasks, RegisterTaskDefinition's on the definition.
      new iam.PolicyStatement({
        actions: [...ECS_TAG_ON_CREATE_ACTIONS],
        resources: [this.tasksArn],
        conditions: { StringEquals: { "ecs:CreateAction": "RunTask" } },
      }),
      new iam.PolicyStatement({
        actions: [...ECS_TAG_ON_CREATE_ACTIONS],
        resources: [this.taskDefinitionsArn],
        conditions: { StringEquals: { "ecs:CreateAction": "RegisterTaskDefinition" } },
      }),
      new iam.PolicyStatement({
        actions: [...ECS_TASK_ACTIONS],
        resources: [this.tasksArn],
        conditions: onCluster,
      }),
      new iam.PolicyStatement({ actions: [...ECS_TASK_DEFINITION_ACTIONS], resources: ["*"] }),
      new iam.PolicyStatement({
        actions: [...ECS_PASS_ROLE_ACTIONS],
        resources: [this.executionRole.roleArn, this.taskRole.roleArn],
        conditions: { StringEquals: { "iam:PassedToService": ECS_TASKS_PRINCIPAL } },
      }),
    ];
  }

  /** Grants `fn` the statements, and acknowledges the wildcards they name on its role. */
  grantCommands(fn: lambda.IFunction): void {
    for (const statement of this.statements()) fn.addToRolePolicy(statement);
    if (fn.role) {
      acknowledgeWildcardResource(
        fn.role,
        this.taskDefinitionsArn,
        NAG_WILDCARD_RESOURCES.fargateTaskDefinitions,
      );
      acknowledgeWildcardResource(fn.role, this.tasksArn, NAG_WILDCARD_RESOURCES.fargateTasks);
    }
  }
}
