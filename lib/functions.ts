/**
 * The Lambda functions of the topology: bundled by a local esbuild (no Docker), Node 24 on arm64,
 * X-Ray tracing, Powertools configured through the environment, each with its own role and log
 * group and no permission it does not use.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Duration } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { NodejsFunction, OutputFormat, type BundlingOptions } from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import {
  FARGATE,
  FUNCTIONS,
  STATE_MACHINES,
  StateMachineName,
  stateMachinesOf,
  type FunctionDecl,
  type FunctionName,
} from "../functions/topology/index.ts";
import { METRICS_SERVICE } from "../functions/topology/metrics.ts";
import { TopologyError } from "./errors.ts";
import { acknowledge, NAG_ACKNOWLEDGEMENTS } from "./nag-acknowledgements.ts";
import type { ResolvedCairnProps } from "./props.ts";

/** The repository root: topology paths (entries, state machine files) are relative to it. */
export const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

export const LAMBDA_RUNTIME = lambda.Runtime.NODEJS_24_X;
/** The functions' architecture unless the `lambdaArchitecture` prop says otherwise. */
export const LAMBDA_ARCHITECTURE = lambda.Architecture.ARM_64;

/** How each function is bundled; test/bundle-size.test.ts bundles the handlers the same way. */
export const FUNCTION_BUNDLING = {
  // The SDK version the tests ran, not whichever the runtime ships.
  bundleAwsSDK: true,
  format: OutputFormat.CJS,
  target: "node24",
  minify: true,
  sourceMap: true,
  sourcesContent: false,
} as const satisfies BundlingOptions;

/** Values every function finds in its environment (functions/config.ts reads them). */
export interface FunctionEnvironment {
  readonly tableName: string;
  readonly eventBusName: string;
  /** Each declared state machine's ARN, written from its fixed name (no reference to the resource). */
  readonly stateMachineArns: ReadonlyMap<StateMachineName, string>;
}

/**
 * The state machine ARNs a function is told, each by its `arnVariable`: those of the machines its
 * statemachine:* uses apply to (`stateMachinesOf`), and the session lifecycle's always, as
 * functions/config.ts requires CAIRN_STATE_MACHINE_ARN of every function. An ARN grants nothing.
 */
export function stateMachineEnvironment(
  decl: FunctionDecl,
  arns: ReadonlyMap<StateMachineName, string>,
): Record<string, string> {
  const names = new Set([StateMachineName.SessionLifecycle, ...stateMachinesOf(decl)]);
  return Object.fromEntries(
    [...names].map((name) => {
      const machine = STATE_MACHINES.find((m) => m.name === name);
      const arn = arns.get(name);
      if (!machine || arn === undefined) {
        throw new TopologyError(
          `FUNCTIONS ${decl.name}.stateMachines`,
          `${name} is not declared in STATE_MACHINES`,
        );
      }
      return [machine.arnVariable, arn];
    }),
  );
}

export interface CairnFunctionsProps {
  readonly settings: ResolvedCairnProps;
  readonly environment: FunctionEnvironment;
}

export class CairnFunctions extends Construct {
  readonly byName: ReadonlyMap<FunctionName, NodejsFunction>;

  constructor(scope: Construct, id: string, props: CairnFunctionsProps) {
    super(scope, id);
    const byName = new Map<FunctionName, NodejsFunction>();
    for (const decl of FUNCTIONS) {
      if (byName.has(decl.name)) throw new TopologyError(`FUNCTIONS ${decl.name}`, "declared twice");
      byName.set(decl.name, this.#function(decl, props));
    }
    this.byName = byName;
  }

  get(name: FunctionName): NodejsFunction {
    const fn = this.byName.get(name);
    if (!fn) throw new TopologyError(name, "is referenced but not declared in FUNCTIONS");
    return fn;
  }

  #function(decl: FunctionDecl, { settings, environment }: CairnFunctionsProps): NodejsFunction {
    const entry = join(PROJECT_ROOT, decl.entry);
    if (!existsSync(entry))
      throw new TopologyError(`FUNCTIONS ${decl.name}.entry`, `${decl.entry} does not exist`);
    const logGroup = new logs.LogGroup(this, `${decl.name}Logs`, {
      retention: settings.logRetention,
      removalPolicy: settings.removalPolicy,
    });
    // An own role instead of the Lambda basic execution managed policy: logs go to this
    // function's log group only.
    const role = new iam.Role(this, `${decl.name}Role`, {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: `Cairn ${decl.name} function`,
    });
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["logs:CreateLogStream", "logs:PutLogEvents"],
        resources: [logGroup.logGroupArn],
      }),
    );
    // With a Fargate executor, the functions that send kernel commands also register task
    // definitions, which ECS allows only on '*' (lib/fargate.ts).
    acknowledge(
      role,
      settings.fargate !== undefined && FARGATE.commandSenders.includes(decl.name)
        ? NAG_ACKNOWLEDGEMENTS.functionRoleXRayAndEcsTaskDefinitions
        : NAG_ACKNOWLEDGEMENTS.functionRoleXRay,
    );
    return new NodejsFunction(this, decl.name, {
      entry,
      handler: "handler",
      description: decl.description,
      runtime: LAMBDA_RUNTIME,
      architecture: settings.lambdaArchitecture,
      memorySize: decl.memoryMiB,
      timeout: Duration.seconds(decl.timeoutSeconds),
      tracing: lambda.Tracing.ACTIVE,
      role,
      logGroup,
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: join(PROJECT_ROOT, "package-lock.json"),
      environment: {
        CAIRN_TABLE_NAME: environment.tableName,
        CAIRN_EVENT_BUS_NAME: environment.eventBusName,
        ...stateMachineEnvironment(decl, environment.stateMachineArns),
        CAIRN_SHARDS: String(settings.shards),
        CAIRN_AGENT_TIMEOUT_MS: String(settings.agentTimeoutMs),
        CAIRN_BATCH_LIMIT: String(settings.batchLimit),
        CAIRN_TERMINATION_GRACE_MS: String(settings.terminationGraceMs),
        CAIRN_LOG_LEVEL: settings.logLevel,
        CAIRN_AGENT_QUEUE_PREFIX: settings.agentQueuePrefix,
        CAIRN_RETENTION_DAYS: String(settings.retentionDays),
        POWERTOOLS_SERVICE_NAME: METRICS_SERVICE,
        POWERTOOLS_METRICS_NAMESPACE: settings.metricsNamespace,
        NODE_OPTIONS: "--enable-source-maps",
      },
      bundling: FUNCTION_BUNDLING,
    });
  }
}
