/**
 * Props of the `Cairn` construct: every optional prop with its default, and the validation that
 * turns a bad value or an impossible combination into a synth-time error naming the prop.
 */
import { createHash } from "node:crypto";
import { Duration, RemovalPolicy, Token } from "aws-cdk-lib";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import type * as ecr from "aws-cdk-lib/aws-ecr";
import * as ecs from "aws-cdk-lib/aws-ecs";
import type * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import {
  FARGATE_CAPACITY_PROVIDERS,
  MAX_RETENTION_DAYS,
  MIN_RETENTION_DAYS,
  type FargateCapacityProvider,
} from "../functions/config.ts";
import { QUEUES, QueueName } from "../functions/topology/index.ts";
import { CairnPropsError } from "./errors.ts";

export type CairnLogLevel = "info" | "warn" | "error";

export interface CairnEventDeliveryProps {
  /**
   * How many times EventBridge retries delivering an event to its target (0–185) before the
   * event goes to the dead-letter queue.
   *
   * @default 185 (EventBridge's own default, stated explicitly)
   */
  readonly retryAttempts?: number;
  /**
   * How old an undelivered event may grow before it goes to the dead-letter queue (1 minute to 24 hours).
   *
   * @default Duration.hours(24)
   */
  readonly maxEventAge?: Duration;
}

/**
 * Kernels as ECS tasks on Fargate, for work that needs no agent host. Tasks run in awsvpc mode, so they need subnets and
 * security groups, as AWS Batch's Fargate compute environments do: either `subnets` and
 * `securityGroups`, or a `vpc` (its private subnets with egress, and a security group the stack
 * creates that allows no inbound traffic).
 */
export interface CairnFargateProps {
  /**
   * The cluster the tasks run in: a cluster of this app, one imported (`ecs.Cluster.fromClusterArn`),
   * or a cluster's ARN or name (in the stack's account and region). A given cluster must have
   * the `capacityProviders` associated; the stack does not change it.
   *
   * @default - a cluster the stack creates, with the FARGATE and FARGATE_SPOT capacity providers
   */
  readonly cluster?: ecs.ICluster | string;
  /**
   * CloudWatch Container Insights on the cluster the stack creates (not allowed with `cluster`).
   *
   * @default ecs.ContainerInsights.ENABLED
   */
  readonly containerInsights?: ecs.ContainerInsights;
  /**
   * The capacity providers tasks may be placed with (a queue picks one of them). The created
   * cluster is given these; a given cluster must have them.
   *
   * @default ["FARGATE", "FARGATE_SPOT"]
   */
  readonly capacityProviders?: readonly FargateCapacityProvider[];
  /**
   * The VPC to take the tasks' subnets from (`vpcSubnets`), and in which the stack creates their
   * security group unless `securityGroups` are given. Not with `subnets`.
   *
   * @default - none: `subnets` and `securityGroups` must be given
   */
  readonly vpc?: ec2.IVpc;
  /**
   * Which of the `vpc`'s subnets the tasks run in.
   *
   * @default - the private subnets with egress (a task must reach ECR, CloudWatch Logs and the
   * image's registry: through a NAT gateway, or VPC endpoints)
   */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /**
   * The subnets the tasks run in (1–16, RunTask's limit). Not with `vpc`.
   *
   * @default - from `vpc`
   */
  readonly subnets?: readonly ec2.ISubnet[];
  /**
   * The tasks' security groups (1–5, RunTask's limit). Required with `subnets`.
   *
   * @default - with `vpc`: one the stack creates, with no inbound rule and all outbound traffic
   */
  readonly securityGroups?: readonly ec2.ISecurityGroup[];
  /**
   * Give each task a public IP address: only for public subnets without a NAT gateway, so that a
   * task can pull its image.
   *
   * @default false
   */
  readonly assignPublicIp?: boolean;
  /**
   * The private ECR repositories kernel images may be pulled from, in any account (the task
   * execution role may pull from these only).
   *
   * @default - every repository of the stack's account in its region; images from public
   * registries need no permission
   */
  readonly imageRepositories?: readonly ecr.IRepository[];
  /**
   * The role kernels' code runs as in their tasks. It must trust `ecs-tasks.amazonaws.com`.
   *
   * @default - a role the stack creates, allowed nothing but `taskRoleStatements`
   */
  readonly taskRole?: iam.IRole;
  /**
   * What the role the stack creates for kernels' code may do (not with `taskRole`).
   *
   * @default - nothing
   */
  readonly taskRoleStatements?: readonly iam.PolicyStatement[];
}

/**
 * How many batches of each work queue may run at once: the maximum concurrency of its SQS event
 * source (2–1000, Lambda's range), so also how many concurrent executions of its function it may
 * hold. With the defaults the five add up to 12, besides the executions Step Functions starts
 * (EnterStage and EnterFamilyStage, one per stage entry) and the sweeps: an account whose Lambda
 * concurrency quota is small (new accounts may get 10) should lower them or ask for more
 * (docs/deploy.md, "Lambda concurrency").
 */
export interface CairnQueueConcurrencyProps {
  /**
   * Client requests (submissions, cancels, templates, queues).
   *
   * @default 2
   */
  readonly coordinatorQueue?: number;
  /**
   * Kernel reports.
   *
   * @default 4
   */
  readonly reportQueue?: number;
  /**
   * Placement passes and the sweep.
   *
   * @default 2
   */
  readonly placementQueue?: number;
  /**
   * Agent heartbeats.
   *
   * @default 2
   */
  readonly heartbeatQueue?: number;
  /**
   * Deployments and their routes.
   *
   * @default 2
   */
  readonly deploymentQueue?: number;
}

/** Each queue's prop in CairnQueueConcurrencyProps. */
export const QUEUE_CONCURRENCY_PROPS: Readonly<Record<QueueName, keyof CairnQueueConcurrencyProps>> = {
  [QueueName.CoordinatorQueue]: "coordinatorQueue",
  [QueueName.ReportQueue]: "reportQueue",
  [QueueName.PlacementQueue]: "placementQueue",
  [QueueName.HeartbeatQueue]: "heartbeatQueue",
  [QueueName.DeploymentQueue]: "deploymentQueue",
};

/** An SQS event source's maximum concurrency: Lambda's range. */
export const MIN_QUEUE_CONCURRENCY = 2;
export const MAX_QUEUE_CONCURRENCY = 1000;

export interface CairnProps {
  /**
   * Physical name of the sessions table. The table is retained on destroy by default
   * (`removalPolicy`), so with a fixed name a stack deployed again after a destroy fails with
   * "already exists" until the retained table is deleted, or imported into the new stack
   * (`cdk import`) to keep its data.
   *
   * @default - a unique name generated by CloudFormation
   */
  readonly tableName?: string;
  /**
   * Name of the event bus that clients and agents put events on. Not "default": Cairn owns its bus.
   *
   * @default - a unique name derived from the construct path
   */
  readonly eventBusName?: string;
  /**
   * DynamoDB deletion protection on the sessions table. Must be false when `removalPolicy` is
   * DESTROY, since the stack could not delete the table.
   *
   * @default true
   */
  readonly deletionProtection?: boolean;
  /**
   * What happens to the sessions table and the log groups when they leave the stack or the stack
   * is deleted. SNAPSHOT is not supported by either.
   *
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Shards of the status indexes (1–100), passed to the functions as CAIRN_SHARDS. Changing it on
   * a table that already holds sessions hides those sessions from the status queries.
   *
   * @default 4
   */
  readonly shards?: number;
  /**
   * An agent silent for this long is treated as lost. On AWS a heartbeat crosses EventBridge, a
   * queue and a batched coordinator run, so the window is wider than the embedded runtime's 30 s.
   *
   * @default Duration.seconds(90)
   */
  readonly agentTimeout?: Duration;
  /**
   * Most targets one handler pass takes in one coordinator run (1–1000).
   *
   * @default 200
   */
  readonly batchLimit?: number;
  /**
   * How many batches of each work queue run at once (each queue's SQS event source's maximum
   * concurrency), so how much of the account's Lambda concurrency the queues may hold.
   *
   * @default - the topology's (functions/topology QUEUES): 2 each, 4 for kernel reports; 12 in all
   */
  readonly queueConcurrency?: CairnQueueConcurrencyProps;
  /**
   * How long a kernel gets between SIGTERM and SIGKILL when its session terminates.
   *
   * @default Duration.seconds(5)
   */
  readonly terminationGrace?: Duration;
  /**
   * Level of the functions' logs.
   *
   * @default "info"
   */
  readonly logLevel?: CairnLogLevel;
  /**
   * How long ended sessions (with their kernels and runs), finished jobs and lost agents stay in
   * the table after their end; then DynamoDB's TTL deletes them. Whole days, 90 days to 10 years:
   * a session's id names its execution, Step Functions refuses a closed execution's name for 90
   * days, and an id stays taken while its session is in the table. History records keep their
   * own 30 days from their last sighting.
   *
   * @default Duration.days(90)
   */
  readonly retention?: Duration;
  /**
   * Retention of the functions' and the state machine's log groups.
   *
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * Include each state's input and output in the state machines' logs (at `stateMachineLogLevel`).
   * Off by default because the payloads carry callback task tokens; the console's execution
   * history shows the data to those allowed to see it.
   *
   * @default false
   */
  readonly logExecutionData?: boolean;
  /**
   * What the three state machines log to CloudWatch Logs. ERROR logs failed executions and
   * states only; ALL logs every history event, about a dozen per session stage, each billed as
   * log ingestion (docs/cost.md), while the execution history in the console holds the same
   * events for 90 days at no charge.
   *
   * @default sfn.LogLevel.ERROR
   */
  readonly stateMachineLogLevel?: sfn.LogLevel;
  /**
   * Retry policy of every EventBridge rule target (the coordinator queue, the sweep).
   *
   * @default - 185 attempts over at most 24 hours, then the dead-letter queue
   */
  readonly eventDelivery?: CairnEventDeliveryProps;
  /**
   * Receives of one message of a work queue (1–1000) before it moves to the queue's dead-letter
   * queue. The placement and deployment queues take at most 3 (QueueDecl.maxReceiveCount).
   *
   * @default 5
   */
  readonly maxReceiveCount?: number;
  /**
   * CloudWatch namespace of Cairn's own metrics (CloudWatch's namespace characters, not "AWS/…").
   *
   * @default "Cairn/<stack name>"
   */
  readonly metricsNamespace?: string;
  /**
   * Actions every alarm runs when it goes into ALARM and back to OK.
   *
   * @default - none: the alarms show on the dashboard and in the console
   */
  readonly alarmActions?: readonly cloudwatch.IAlarmAction[];
  /**
   * Name of the CloudWatch dashboard.
   *
   * @default - a unique name generated by CloudFormation
   */
  readonly dashboardName?: string;
  /**
   * Publish the event contracts (docs/events/*.json, from `npm run schemas`) in an EventBridge
   * schema registry named after the stack, one schema per detail-type. Only one Cairn per stack
   * can, since the registry's name is the stack's.
   *
   * @default true
   */
  readonly eventSchemas?: boolean;
  /**
   * The CloudWatch dashboard (the alarms are kept either way). Off where CloudWatch dashboards
   * are not offered, as on LocalStack's free plan.
   *
   * @default true
   */
  readonly dashboard?: boolean;
  /**
   * The functions' instruction set. arm64 (Graviton) costs less per GB-second on AWS; x86_64 is
   * for an emulator that runs Lambda on an x86_64 machine (LocalStack on a PC).
   *
   * @default lambda.Architecture.ARM_64
   */
  readonly lambdaArchitecture?: lambda.Architecture;
  /**
   * Agent queues are named `<prefix><agentId>`: the control plane creates one per agent at run
   * time, and the functions' and the agents' grants name `<prefix>*`. 1–40 of letters, digits,
   * '-' and '_' (agent ids take up to 40 more, SQS names at most 80). Must not be a prefix of
   * another Cairn's in the same account and region, or each could reach the other's queues.
   *
   * @default - the stack name (at most 24 characters), a hash of the stack name and the
   * construct's path, and "-agent-": e.g. "Cairn-1a2b3c4d-agent-"
   */
  readonly agentQueuePrefix?: string;
  /**
   * Let kernels run as ECS tasks on Fargate, besides on agents: a cluster, the task execution and
   * task roles, the rule that brings ECS's task state changes in, and the functions' grants to
   * run tasks (docs/deploy.md, "Fargate").
   *
   * @default - no Fargate executor, and no ECS resource or permission at all
   */
  readonly fargate?: CairnFargateProps;
  /**
   * The administrator's submission filter (HPC Pack's Validating; docs/deploy.md, "Submission filter"): a
   * Lambda function the coordinator invokes synchronously with each submission that passed its
   * job template, answering accept, reject with a reason, or modify. Only the coordinator may
   * invoke it, and only it.
   *
   * @default - no filter: every submission that passes its template is queued
   */
  readonly submissionFilter?: CairnSubmissionFilterProps;
}

export interface CairnSubmissionFilterProps {
  /** The filter function's ARN (a version or alias ARN also works). */
  readonly functionArn: string;
  /**
   * How long the coordinator waits for an answer; past it the filter has failed. 100 ms to 30 s
   * (the coordinator's own timeout is 60 s, and a batch may hold several submissions).
   *
   * @default Duration.seconds(5)
   */
  readonly timeout?: Duration;
  /**
   * A filter that fails (an error, a timeout, an answer that is not one of the three):
   * "accept" lets the submission through (fail-open), "reject" ends its job Failed (fail-closed).
   *
   * @default "reject"
   */
  readonly onFailure?: "accept" | "reject";
}

/** CairnSubmissionFilterProps checked, with the defaults applied. */
export interface ResolvedSubmissionFilterProps {
  readonly functionArn: string;
  readonly timeoutMs: number;
  readonly onFailure: "accept" | "reject";
}

/** CairnFargateProps checked, with the defaults applied. */
export interface ResolvedFargateProps {
  /** Absent: the stack creates the cluster. */
  readonly cluster:
    ecs.ICluster | { readonly clusterArn: string } | { readonly clusterName: string } | undefined;
  readonly containerInsights: ecs.ContainerInsights;
  readonly capacityProviders: readonly FargateCapacityProvider[];
  readonly network:
    | { readonly vpc: ec2.IVpc; readonly vpcSubnets: ec2.SubnetSelection }
    | { readonly subnets: readonly ec2.ISubnet[] };
  /** Absent: the stack creates one in the VPC. */
  readonly securityGroups: readonly ec2.ISecurityGroup[] | undefined;
  readonly assignPublicIp: boolean;
  readonly imageRepositories: readonly ecr.IRepository[] | undefined;
  readonly taskRole: iam.IRole | undefined;
  readonly taskRoleStatements: readonly iam.PolicyStatement[];
}

/** CairnProps with every default applied and every value checked. */
export interface ResolvedCairnProps {
  readonly tableName: string | undefined;
  readonly eventBusName: string | undefined;
  readonly deletionProtection: boolean;
  readonly removalPolicy: RemovalPolicy;
  readonly shards: number;
  readonly agentTimeoutMs: number;
  readonly batchLimit: number;
  /** Each queue's maximum concurrency, the topology's unless the props say otherwise. */
  readonly queueConcurrency: Readonly<Record<QueueName, number>>;
  readonly terminationGraceMs: number;
  readonly retentionDays: number;
  readonly logLevel: CairnLogLevel;
  readonly logRetention: RetentionDays;
  readonly logExecutionData: boolean;
  readonly stateMachineLogLevel: sfn.LogLevel;
  readonly eventRetryAttempts: number;
  readonly maxEventAge: Duration;
  readonly maxReceiveCount: number;
  readonly metricsNamespace: string;
  readonly alarmActions: readonly cloudwatch.IAlarmAction[];
  readonly dashboardName: string | undefined;
  readonly eventSchemas: boolean;
  readonly dashboard: boolean;
  readonly lambdaArchitecture: lambda.Architecture;
  readonly agentQueuePrefix: string;
  /** Absent: no Fargate executor. */
  readonly fargate: ResolvedFargateProps | undefined;
  /** Absent: no submission filter. */
  readonly submissionFilter: ResolvedSubmissionFilterProps | undefined;
}

export const CAIRN_DEFAULTS = {
  deletionProtection: true,
  removalPolicy: RemovalPolicy.RETAIN,
  shards: 4,
  agentTimeoutMs: 90_000,
  batchLimit: 200,
  terminationGraceMs: 5_000,
  retentionDays: MIN_RETENTION_DAYS,
  logLevel: "info",
  logRetention: RetentionDays.ONE_MONTH,
  logExecutionData: false,
  stateMachineLogLevel: sfn.LogLevel.ERROR,
  eventRetryAttempts: 185,
  maxEventAgeSeconds: 86_400,
  maxReceiveCount: 5,
  eventSchemas: true,
  dashboard: true,
} as const;

/**
 * @param constructPath the Cairn construct's path, so that two Cairns in one stack get different
 * default agent queue prefixes
 */
export function resolveCairnProps(
  props: CairnProps,
  stackName: string,
  constructPath: string = stackName,
): ResolvedCairnProps {
  const deletionProtection = props.deletionProtection ?? CAIRN_DEFAULTS.deletionProtection;
  const removalPolicy = props.removalPolicy ?? CAIRN_DEFAULTS.removalPolicy;
  if (removalPolicy === RemovalPolicy.SNAPSHOT) {
    throw new CairnPropsError(
      "removalPolicy",
      "SNAPSHOT is not supported by DynamoDB tables or log groups; use RETAIN (the table keeps point-in-time recovery) or DESTROY",
    );
  }
  if (removalPolicy === RemovalPolicy.DESTROY && deletionProtection) {
    throw new CairnPropsError(
      "deletionProtection",
      "must be false when removalPolicy is DESTROY: CloudFormation cannot delete a protected table",
    );
  }
  const maxEventAge = props.eventDelivery?.maxEventAge ?? Duration.seconds(CAIRN_DEFAULTS.maxEventAgeSeconds);
  const maxEventAgeSeconds = wholeMs("eventDelivery.maxEventAge", maxEventAge) / 1000;
  if (maxEventAgeSeconds < 60 || maxEventAgeSeconds > 86_400) {
    throw new CairnPropsError(
      "eventDelivery.maxEventAge",
      `must be between 1 minute and 24 hours, got ${maxEventAgeSeconds} s`,
    );
  }
  return {
    tableName: optionalName(
      "tableName",
      props.tableName,
      /^[A-Za-z0-9_.-]{3,255}$/,
      "3–255 of A-Z a-z 0-9 _ . -",
    ),
    eventBusName: eventBusName(props.eventBusName),
    deletionProtection,
    removalPolicy,
    shards: intIn("shards", props.shards ?? CAIRN_DEFAULTS.shards, 1, 100),
    agentTimeoutMs: positiveMs("agentTimeout", props.agentTimeout, CAIRN_DEFAULTS.agentTimeoutMs),
    batchLimit: intIn("batchLimit", props.batchLimit ?? CAIRN_DEFAULTS.batchLimit, 1, 1000),
    queueConcurrency: queueConcurrency(props.queueConcurrency ?? {}),
    terminationGraceMs: positiveMs(
      "terminationGrace",
      props.terminationGrace,
      CAIRN_DEFAULTS.terminationGraceMs,
    ),
    retentionDays: retentionDays(props.retention),
    logLevel: logLevel(props.logLevel),
    logRetention: props.logRetention ?? CAIRN_DEFAULTS.logRetention,
    logExecutionData: props.logExecutionData ?? CAIRN_DEFAULTS.logExecutionData,
    stateMachineLogLevel: props.stateMachineLogLevel ?? CAIRN_DEFAULTS.stateMachineLogLevel,
    eventRetryAttempts: intIn(
      "eventDelivery.retryAttempts",
      props.eventDelivery?.retryAttempts ?? CAIRN_DEFAULTS.eventRetryAttempts,
      0,
      185,
    ),
    maxEventAge,
    maxReceiveCount: intIn(
      "maxReceiveCount",
      props.maxReceiveCount ?? CAIRN_DEFAULTS.maxReceiveCount,
      1,
      1000,
    ),
    metricsNamespace: metricsNamespace(props.metricsNamespace ?? `Cairn/${stackName}`),
    alarmActions: props.alarmActions ?? [],
    dashboardName: optionalName(
      "dashboardName",
      props.dashboardName,
      /^[A-Za-z0-9_-]{1,255}$/,
      "1–255 of A-Z a-z 0-9 _ -",
    ),
    eventSchemas: props.eventSchemas ?? CAIRN_DEFAULTS.eventSchemas,
    dashboard: props.dashboard ?? CAIRN_DEFAULTS.dashboard,
    lambdaArchitecture: lambdaArchitecture(props.lambdaArchitecture),
    agentQueuePrefix:
      props.agentQueuePrefix === undefined
        ? defaultAgentQueuePrefix(stackName, constructPath)
        : agentQueuePrefix(props.agentQueuePrefix),
    fargate: props.fargate === undefined ? undefined : fargate(props.fargate),
    submissionFilter:
      props.submissionFilter === undefined ? undefined : submissionFilter(props.submissionFilter),
  };
}

const LAMBDA_FUNCTION_ARN = /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[\w-]{1,64}(:[\w$-]+)?$/;

function submissionFilter(props: CairnSubmissionFilterProps): ResolvedSubmissionFilterProps {
  const { functionArn } = props;
  if (!Token.isUnresolved(functionArn) && !LAMBDA_FUNCTION_ARN.test(functionArn)) {
    throw new CairnPropsError(
      "submissionFilter.functionArn",
      `must be a Lambda function ARN (arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>]), got "${functionArn}"`,
    );
  }
  const timeoutMs = positiveMs("submissionFilter.timeout", props.timeout, 5_000);
  if (timeoutMs < 100 || timeoutMs > 30_000) {
    throw new CairnPropsError(
      "submissionFilter.timeout",
      `must be from 100 ms to 30 s (the coordinator waits for it within its own 60 s), got ${timeoutMs} ms`,
    );
  }
  const onFailure = props.onFailure ?? "reject";
  if (onFailure !== "accept" && onFailure !== "reject") {
    throw new CairnPropsError(
      "submissionFilter.onFailure",
      `must be "accept" or "reject", got "${String(onFailure)}"`,
    );
  }
  return { functionArn, timeoutMs, onFailure };
}

/** RunTask's awsvpcConfiguration limits. */
const MAX_SUBNETS = 16;
const MAX_SECURITY_GROUPS = 5;

function fargate(props: CairnFargateProps): ResolvedFargateProps {
  if (props.cluster !== undefined && props.containerInsights !== undefined) {
    throw new CairnPropsError(
      "fargate.containerInsights",
      "applies only to the cluster the stack creates; set it on the given fargate.cluster instead",
    );
  }
  const capacityProviders = props.capacityProviders ?? FARGATE_CAPACITY_PROVIDERS;
  if (
    capacityProviders.length === 0 ||
    capacityProviders.some((p) => !(FARGATE_CAPACITY_PROVIDERS as readonly string[]).includes(p)) ||
    new Set(capacityProviders).size !== capacityProviders.length
  ) {
    throw new CairnPropsError(
      "fargate.capacityProviders",
      `must be FARGATE, FARGATE_SPOT or both, each once, got [${capacityProviders.join(", ")}]`,
    );
  }
  if (props.vpc !== undefined && props.subnets !== undefined) {
    throw new CairnPropsError("fargate.subnets", "give either fargate.subnets or fargate.vpc, not both");
  }
  if (props.vpcSubnets !== undefined && props.vpc === undefined) {
    throw new CairnPropsError("fargate.vpcSubnets", "selects subnets of fargate.vpc, which is not given");
  }
  if (props.vpc === undefined && props.subnets === undefined) {
    throw new CairnPropsError(
      "fargate.subnets",
      "required (or fargate.vpc): Fargate tasks run in awsvpc mode, in subnets of your VPC that can reach ECR and CloudWatch Logs (private subnets with a NAT gateway or VPC endpoints)",
    );
  }
  if (props.subnets !== undefined && (props.subnets.length === 0 || props.subnets.length > MAX_SUBNETS)) {
    throw new CairnPropsError(
      "fargate.subnets",
      `must be 1 to ${MAX_SUBNETS} subnets (RunTask's limit), got ${props.subnets.length}`,
    );
  }
  if (props.subnets !== undefined && props.securityGroups === undefined) {
    throw new CairnPropsError(
      "fargate.securityGroups",
      "required with fargate.subnets (with fargate.vpc the stack creates one that allows no inbound traffic)",
    );
  }
  if (
    props.securityGroups !== undefined &&
    (props.securityGroups.length === 0 || props.securityGroups.length > MAX_SECURITY_GROUPS)
  ) {
    throw new CairnPropsError(
      "fargate.securityGroups",
      `must be 1 to ${MAX_SECURITY_GROUPS} security groups (RunTask's limit), got ${props.securityGroups.length}`,
    );
  }
  if (props.taskRole !== undefined && props.taskRoleStatements !== undefined) {
    throw new CairnPropsError(
      "fargate.taskRoleStatements",
      "apply only to the task role the stack creates; add them to the given fargate.taskRole instead",
    );
  }
  if (props.imageRepositories !== undefined && props.imageRepositories.length === 0) {
    throw new CairnPropsError(
      "fargate.imageRepositories",
      "must name at least one repository (leave it out for every repository of the account)",
    );
  }
  return {
    cluster: props.cluster === undefined ? undefined : givenCluster(props.cluster),
    containerInsights: props.containerInsights ?? ecs.ContainerInsights.ENABLED,
    capacityProviders,
    network:
      props.vpc !== undefined
        ? {
            vpc: props.vpc,
            vpcSubnets: props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
          }
        : { subnets: props.subnets! },
    securityGroups: props.securityGroups,
    assignPublicIp: props.assignPublicIp ?? false,
    imageRepositories: props.imageRepositories,
    taskRole: props.taskRole,
    taskRoleStatements: props.taskRoleStatements ?? [],
  };
}

/** ECS's cluster name alphabet. */
const CLUSTER_NAME_PATTERN = /^[A-Za-z0-9_-]{1,255}$/;
const CLUSTER_ARN_PATTERN = /^arn:aws[a-z-]*:ecs:[a-z0-9-]+:\d{12}:cluster\/[A-Za-z0-9_-]{1,255}$/;

function givenCluster(cluster: ecs.ICluster | string): ResolvedFargateProps["cluster"] {
  if (typeof cluster !== "string") return cluster;
  // The grants, the rule and the functions' environment need the ARN; a token is taken as one.
  if (Token.isUnresolved(cluster) || cluster.startsWith("arn:")) {
    if (!Token.isUnresolved(cluster) && !CLUSTER_ARN_PATTERN.test(cluster)) {
      throw new CairnPropsError(
        "fargate.cluster",
        `must be an ECS cluster ARN (arn:aws:ecs:<region>:<account>:cluster/<name>) or a cluster name, got "${cluster}"`,
      );
    }
    return { clusterArn: cluster };
  }
  if (!CLUSTER_NAME_PATTERN.test(cluster)) {
    throw new CairnPropsError(
      "fargate.cluster",
      `must be a cluster name (1–255 of letters, digits, '-' and '_') or a cluster ARN, got "${cluster}"`,
    );
  }
  return { clusterName: cluster };
}

function queueConcurrency(props: CairnQueueConcurrencyProps): Record<QueueName, number> {
  const known = new Set<string>(Object.values(QUEUE_CONCURRENCY_PROPS));
  for (const key of Object.keys(props)) {
    if (!known.has(key)) {
      throw new CairnPropsError(
        `queueConcurrency.${key}`,
        `is not a queue; the queues are ${[...known].join(", ")}`,
      );
    }
  }
  return Object.fromEntries(
    QUEUES.map((q) => {
      const prop = QUEUE_CONCURRENCY_PROPS[q.name];
      const value = intIn(
        `queueConcurrency.${prop}`,
        props[prop] ?? q.maxConcurrency,
        MIN_QUEUE_CONCURRENCY,
        MAX_QUEUE_CONCURRENCY,
      );
      return [q.name, value];
    }),
  ) as Record<QueueName, number>;
}

function intIn(prop: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new CairnPropsError(prop, `must be an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}

function wholeMs(prop: string, duration: Duration): number {
  if (Token.isUnresolved(duration.toString())) {
    throw new CairnPropsError(prop, "must be a concrete duration, not a token");
  }
  const ms = duration.toMilliseconds();
  if (!Number.isInteger(ms) || ms <= 0) throw new CairnPropsError(prop, `must be positive, got ${ms} ms`);
  return ms;
}

function positiveMs(prop: string, duration: Duration | undefined, fallbackMs: number): number {
  return duration === undefined ? fallbackMs : wholeMs(prop, duration);
}

function retentionDays(retention: Duration | undefined): number {
  if (retention === undefined) return CAIRN_DEFAULTS.retentionDays;
  const ms = wholeMs("retention", retention);
  const days = ms / 86_400_000;
  if (!Number.isInteger(days) || days < MIN_RETENTION_DAYS || days > MAX_RETENTION_DAYS) {
    throw new CairnPropsError(
      "retention",
      `must be whole days from ${MIN_RETENTION_DAYS} to ${MAX_RETENTION_DAYS} (a session's id names its execution, and Step Functions refuses a closed execution's name for 90 days), got ${retention.toHumanString()}`,
    );
  }
  return days;
}

function logLevel(value: string | undefined): CairnLogLevel {
  if (value === undefined) return CAIRN_DEFAULTS.logLevel;
  if (value === "info" || value === "warn" || value === "error") return value;
  throw new CairnPropsError("logLevel", `must be "info", "warn" or "error", got "${value}"`);
}

function optionalName(
  prop: string,
  value: string | undefined,
  pattern: RegExp,
  rule: string,
): string | undefined {
  if (value === undefined || Token.isUnresolved(value)) return value;
  if (!pattern.test(value)) throw new CairnPropsError(prop, `must be ${rule}, got "${value}"`);
  return value;
}

function eventBusName(value: string | undefined): string | undefined {
  const name = optionalName(
    "eventBusName",
    value,
    /^[A-Za-z0-9._/-]{1,256}$/,
    "1–256 of A-Z a-z 0-9 . _ - /",
  );
  if (name === "default") {
    throw new CairnPropsError(
      "eventBusName",
      `cannot be "default": the account's default bus is not Cairn's to create`,
    );
  }
  return name;
}

function metricsNamespace(value: string): string {
  // CloudWatch's documented namespace alphabet.
  if (!/^[0-9A-Za-z._\-/#: ]{1,255}$/.test(value)) {
    throw new CairnPropsError(
      "metricsNamespace",
      `must be 1–255 of 0-9 A-Z a-z . - _ / # : and space, got "${value}"`,
    );
  }
  if (value.startsWith("AWS/")) {
    throw new CairnPropsError(
      "metricsNamespace",
      `cannot start with "AWS/" (reserved for AWS services), got "${value}"`,
    );
  }
  return value;
}

/** Same rule as the functions' CAIRN_AGENT_QUEUE_PREFIX (functions/config.ts). */
const AGENT_QUEUE_PREFIX_PATTERN = /^[A-Za-z0-9_-]{1,40}$/;

function agentQueuePrefix(value: string): string {
  // A token could not be checked here, and the grants and their cdk-nag acknowledgements name it.
  if (Token.isUnresolved(value)) {
    throw new CairnPropsError("agentQueuePrefix", "must be a concrete string, not a token");
  }
  if (!AGENT_QUEUE_PREFIX_PATTERN.test(value)) {
    throw new CairnPropsError(
      "agentQueuePrefix",
      `must be 1–40 of letters, digits, '-' and '_' (agent ids take the other 40 of SQS's 80), got "${value}"`,
    );
  }
  return value;
}

/**
 * Stack names are unique in an account and region, but truncating one could make two alike: the
 * hash of the whole name (and of the construct's path, for two Cairns in one stack) keeps them
 * apart. Stack names are letters, digits and '-', all valid in SQS names. At most 24 + 1 + 8 + 7
 * = 40 characters.
 */
export function defaultAgentQueuePrefix(stackName: string, constructPath: string): string {
  if (Token.isUnresolved(stackName)) {
    throw new CairnPropsError(
      "agentQueuePrefix",
      "must be given when the stack's name is not known at synth (a nested stack): the default is derived from it",
    );
  }
  const hash = createHash("sha256").update(`${stackName}\n${constructPath}`).digest("hex").slice(0, 8);
  return `${stackName.slice(0, 24)}-${hash}-agent-`;
}

/** The functions' architecture: Lambda runs arm64 and x86_64 only. */
function lambdaArchitecture(given: lambda.Architecture | undefined): lambda.Architecture {
  if (given === undefined) return lambda.Architecture.ARM_64;
  if (given.name !== lambda.Architecture.ARM_64.name && given.name !== lambda.Architecture.X86_64.name) {
    throw new CairnPropsError("lambdaArchitecture", `must be ARM_64 or X86_64, got ${given.name}`);
  }
  return given;
}
