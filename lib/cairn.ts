/**
 * The whole of Cairn as one construct to drop into a CDK app: the sessions table, the event bus
 * and its rules, the work queues, the lifecycle state machines (sessions, deployments, routes),
 * the functions, the sweeps, the dashboard and the alarms, the kernel log group, the managed
 * policies for agents and clients, and, with the `fargate` prop, the Fargate executor
 * (lib/fargate.ts). Everything topological (functions, rules, queues, state machines, sweeps)
 * comes from functions/topology/index.ts, which the embedded runtime also builds from.
 *
 * ```ts
 * const cairn = new Cairn(stack, "Cairn", { deletionProtection: false, removalPolicy: RemovalPolicy.DESTROY });
 * new CfnOutput(stack, "BusName", { value: cairn.bus.eventBusName });
 * ```
 */
import { Names, Stack } from "aws-cdk-lib";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as events from "aws-cdk-lib/aws-events";
import * as iam from "aws-cdk-lib/aws-iam";
import type { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import type * as logs from "aws-cdk-lib/aws-logs";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import {
  FARGATE,
  FUNCTIONS,
  StateMachineName,
  stateMachinesOf,
  FunctionName,
} from "../functions/topology/index.ts";
import { CairnAgentAccess } from "./agent-access.ts";
import { CairnEventSchemas } from "./event-schemas.ts";
import { CairnFargate } from "./fargate.ts";
import { CairnFunctions } from "./functions.ts";
import { CairnMonitoring } from "./monitoring.ts";
import { agentQueuesArn, FILTER_INVOKE_ACTIONS, grantUses } from "./permissions.ts";
import { resolveCairnProps, type CairnProps, type ResolvedCairnProps } from "./props.ts";
import { CairnRouting } from "./routing.ts";
import { TopologyError } from "./errors.ts";
import {
  LifecycleStateMachine,
  stateMachineArnFor,
  stateMachineConstructId,
  stateMachineDecls,
  stateMachineNameFor,
} from "./state-machine.ts";
import { createSessionsTable } from "./table.ts";

export class Cairn extends Construct {
  readonly settings: ResolvedCairnProps;
  readonly table: dynamodb.Table;
  readonly bus: events.EventBus;
  /** The session lifecycle (the CLI's StateMachineArn). */
  readonly stateMachine: sfn.StateMachine;
  /** Every lifecycle state machine the topology declares, by its declared name. */
  readonly stateMachines: ReadonlyMap<StateMachineName, sfn.StateMachine>;
  /** The session lifecycle's ARN written from its fixed name (no reference to the resource). */
  readonly stateMachineArnByName: string;
  /** Each state machine's ARN written from its fixed name, as the functions are told it. */
  readonly stateMachineArnsByName: ReadonlyMap<StateMachineName, string>;
  readonly functions: ReadonlyMap<FunctionName, NodejsFunction>;
  readonly queues: ReadonlyMap<string, sqs.Queue>;
  /** Every dead-letter queue, by the name the dashboard and the alarms use. */
  readonly deadLetterQueues: ReadonlyMap<string, sqs.Queue>;
  readonly rules: ReadonlyMap<string, events.Rule>;
  /** The safety sweep (SWEEP). */
  readonly sweep: events.Rule;
  /** Every scheduled sweep (SWEEPS), by name. */
  readonly sweeps: ReadonlyMap<string, events.Rule>;
  /** Absent with the `dashboard` prop false. */
  readonly dashboard: cloudwatch.Dashboard | undefined;
  readonly alarms: readonly cloudwatch.Alarm[];
  /** Kernel output, one stream per kernel run, written by the agents (KernelLogGroupName). */
  readonly kernelLogGroup: logs.LogGroup;
  /** For the roles of hosts that run `cairn agent` (AgentPolicyArn). */
  readonly agentPolicy: iam.ManagedPolicy;
  /** For those who run the CLI against this Cairn (ClientPolicyArn). */
  readonly clientPolicy: iam.ManagedPolicy;
  /** With ClientPolicy, for those who also manage templates, retry policies and queues (OperatorPolicyArn). */
  readonly operatorPolicy: iam.ManagedPolicy;
  /** The Fargate executor's cluster, roles and networking; absent without the `fargate` prop. */
  readonly fargate: CairnFargate | undefined;

  constructor(scope: Construct, id: string, props: CairnProps = {}) {
    super(scope, id);
    const settings = resolveCairnProps(props, Stack.of(this).stackName, this.node.path);
    this.settings = settings;

    this.table = createSessionsTable(this, "Table", settings);
    this.bus = new events.EventBus(this, "Bus", {
      eventBusName:
        settings.eventBusName ?? Names.uniqueResourceName(this, { maxLength: 256, separator: "-" }),
      description:
        "Cairn: session submissions, cancels, agent reports in; status changes and kernel commands out",
    });

    // A state machine's definition names functions (EnterStage, EnterFamilyStage), and functions
    // are told the ARNs of state machines (functions/config.ts). Fixed names let each ARN be
    // written as a string that references no resource, so there is no dependency cycle.
    const decls = stateMachineDecls();
    const physicalNames = new Map(decls.map((d) => [d.name, stateMachineNameFor(this, d)] as const));
    this.stateMachineArnsByName = new Map(
      [...physicalNames].map(([name, physical]) => [name, stateMachineArnFor(this, physical)] as const),
    );
    const functions = new CairnFunctions(this, "Functions", {
      settings,
      environment: {
        tableName: this.table.tableName,
        eventBusName: this.bus.eventBusName,
        stateMachineArns: this.stateMachineArnsByName,
      },
    });
    this.functions = functions.byName;

    const stateMachines = new Map<StateMachineName, sfn.StateMachine>();
    for (const decl of decls) {
      const machine = new LifecycleStateMachine(this, stateMachineConstructId(decl), {
        settings,
        functions,
        decl,
        stateMachineName: physicalNames.get(decl.name)!,
      });
      stateMachines.set(decl.name, machine.stateMachine);
    }
    this.stateMachines = stateMachines;
    const session = stateMachines.get(StateMachineName.SessionLifecycle);
    if (!session) {
      throw new TopologyError("STATE_MACHINES", `must declare ${StateMachineName.SessionLifecycle}`);
    }
    this.stateMachine = session;

    const agentQueues = agentQueuesArn(this, settings.agentQueuePrefix);
    // A function a definition names is granted that state machine by its fixed name: a reference
    // would make a dependency cycle (definition → function → its policy → state machine).
    const byName = new Map(
      decls.map(
        (d) =>
          [
            d.name,
            sfn.StateMachine.fromStateMachineName(
              this,
              `${stateMachineConstructId(d)}ByName`,
              physicalNames.get(d.name)!,
            ),
          ] as const,
      ),
    );
    this.stateMachineArnByName = byName.get(StateMachineName.SessionLifecycle)!.stateMachineArn;
    for (const decl of FUNCTIONS) {
      grantUses(functions.get(decl.name), decl.uses, {
        table: this.table,
        bus: this.bus,
        stateMachines: stateMachinesOf(decl).map((name) => {
          const machine = decls.find((d) => d.name === name);
          if (!machine) {
            throw new TopologyError(
              `FUNCTIONS ${decl.name}.stateMachines`,
              `${name} is not declared in STATE_MACHINES`,
            );
          }
          return Object.values(machine.substitutions).includes(decl.name)
            ? byName.get(name)!
            : stateMachines.get(name)!;
        }),
        agentQueuesArn: agentQueues,
      });
    }
    const access = new CairnAgentAccess(this, "Agents", {
      settings,
      table: this.table,
      bus: this.bus,
      agentQueuesArn: agentQueues,
      stateMachines: [...stateMachines.values()],
    });
    this.kernelLogGroup = access.kernelLogGroup;
    this.agentPolicy = access.agentPolicy;
    this.clientPolicy = access.clientPolicy;
    this.operatorPolicy = access.operatorPolicy;

    if (settings.fargate !== undefined) {
      const fargate = new CairnFargate(this, "Fargate", {
        settings: settings.fargate,
        kernelLogGroup: this.kernelLogGroup,
      });
      for (const fn of functions.byName.values()) {
        for (const [key, value] of Object.entries(fargate.environment)) fn.addEnvironment(key, value);
      }
      for (const name of FARGATE.commandSenders) fargate.grantCommands(functions.get(name));
      this.fargate = fargate;
    } else {
      this.fargate = undefined;
    }

    if (settings.submissionFilter !== undefined) {
      // Only the coordinator asks the filter (functions/app/admission.ts), and only that function.
      const coordinator = functions.get(FunctionName.Coordinator);
      const filter = settings.submissionFilter;
      coordinator.addEnvironment("CAIRN_SUBMISSION_FILTER_ARN", filter.functionArn);
      coordinator.addEnvironment("CAIRN_SUBMISSION_FILTER_TIMEOUT_MS", String(filter.timeoutMs));
      coordinator.addEnvironment("CAIRN_SUBMISSION_FILTER_ON_FAILURE", filter.onFailure);
      coordinator.addToRolePolicy(
        new iam.PolicyStatement({ actions: [...FILTER_INVOKE_ACTIONS], resources: [filter.functionArn] }),
      );
    }

    const routing = new CairnRouting(this, "Routing", {
      settings,
      bus: this.bus,
      functions,
      ...(this.fargate !== undefined ? { fargateClusterArn: this.fargate.clusterArn } : {}),
    });
    this.queues = routing.queues;
    this.rules = routing.rules;
    this.sweep = routing.sweep;
    this.sweeps = routing.sweeps;
    this.deadLetterQueues = new Map<string, sqs.Queue>([
      ["DeliveryDeadLetterQueue", routing.deliveryDeadLetterQueue],
      ...[...routing.queueDeadLetterQueues].map(([name, q]) => [`${name}DeadLetterQueue`, q] as const),
    ]);

    const monitoring = new CairnMonitoring(this, "Monitoring", {
      settings,
      functions: functions.byName,
      stateMachines: this.stateMachines,
      deadLetterQueues: this.deadLetterQueues,
      queues: this.queues,
    });
    this.dashboard = monitoring.dashboard;
    this.alarms = monitoring.alarms;

    if (settings.eventSchemas)
      new CairnEventSchemas(this, "EventSchemas", { registryName: Stack.of(this).stackName });
  }
}
